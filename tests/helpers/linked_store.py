"""A store that every writing command has been through, and its directories linked outside one
pattern at a time (tests/cli/test_store_links.py).

`build_template` makes a git work tree (a clone of a bare remote, so `session pull` has something
new to fetch) whose `.sessions/` holds every kind of directory a store grows: blobs in fan-out
directories, logs, checkpoint refs, locks, the trash with a removed session and its refs,
a set title, the heads cache and the conversation index. `patterns_of` derives from the directories
really there the patterns a test links (`objects/<fan>` for every fan-out directory, ...), so a
directory a new feature adds shows up as a pattern no test links yet.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

from helpers.cli import run
from helpers.gitrepos import bare_remote, clone
from helpers.messages import tagged_turn
from sessionstore import FileConversationStore, SessionStore

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "sessionstore" / "examples" / "fix-auth.json"

PATTERNS = {
    r"[0-9a-f]{2}": "<fan>",
    r"[A-Za-z0-9][A-Za-z0-9._-]*\.\d{8}T\d+Z": "<entry>",
}
"""What a variable component of a store directory looks like, and the placeholder naming it."""
PARENTS_OF_NAMES = {"refs/checkpoints": "<session>", "locks/importing": "<session>"}
"""Directories whose subdirectories are named after sessions."""
TRANSIENT = ("locks/importing",)
"""Directories a command makes and removes again (an import's staging): linked before they exist."""


def pattern_of(rel: str) -> str:
    """`objects/3f` -> `objects/<fan>`, `refs/checkpoints/a` -> `refs/checkpoints/<session>`, ..."""
    parts = rel.split("/")
    out: list[str] = []
    for i, part in enumerate(parts):
        parent = "/".join(parts[:i])
        if parent in PARENTS_OF_NAMES:
            out.append(PARENTS_OF_NAMES[parent])
            continue
        for regex, placeholder in PATTERNS.items():
            if (parent in ("objects", "trash")) and re.fullmatch(regex, part):
                out.append(placeholder)
                break
        else:
            out.append(part)
    return "/".join(out)


def directories(root: Path) -> list[str]:
    """Every directory below `root` (relative, '/'-joined), links not followed."""
    out = []
    for here, dirs, _ in os.walk(root):
        for d in dirs:
            out.append(Path(here, d).relative_to(root).as_posix())
    return sorted(out)


def patterns_of(root: Path) -> set[str]:
    return {pattern_of(rel) for rel in directories(root)}


ALL_FANS = [f"objects/{fan:02x}" for fan in range(256)]
"""Every fan-out directory a blob can land in: `objects/<fan>` is linked as all 256 (the absent ones
made as links to empty directories), so every blob a command writes goes through a link, whatever
its id (ids hold times: which fan a new blob takes is not known before it is written)."""


def instances(root: Path, pattern: str) -> list[str]:
    """The directories of `root` matching `pattern` (a transient one: its own path; `objects/<fan>`:
    `ALL_FANS`)."""
    if pattern == "objects/<fan>":
        return ALL_FANS
    found = [rel for rel in directories(root) if pattern_of(rel) == pattern]
    return found or ([pattern] if pattern in TRANSIENT else [])


def link_outside(root: Path, rels: list[str], outside: Path) -> list[Path]:
    """Move each directory `rels` of `root` to `outside` (an empty one for an absent directory) and
    put a symlink to it in its place; returns the links' paths."""
    links = []
    for i, rel in enumerate(sorted(rels, key=lambda r: -r.count("/"))):  # deepest first
        inside = root / rel
        target = outside / f"{i}-{rel.replace('/', '_')}"
        if inside.is_dir():
            os.rename(inside, target)
        else:
            target.mkdir(parents=True)
        inside.symlink_to(target, target_is_directory=True)
        links.append(inside)
    return links


def copy(template: Path, to: Path, *, git: bool) -> Path:
    """A copy of the template's work tree at `to`: its store, and its git directory when `git` (a
    pull needs it; nothing else does, and copying it costs more than the store)."""
    shutil.copytree(template / ".sessions", to / ".sessions", symlinks=True)
    if git:
        shutil.copytree(template / ".git", to / ".git", symlinks=True)
    return to


def tree(root: Path) -> dict[str, tuple]:
    """Everything under `root`, links not followed: each file's bytes and mtime, each directory and
    link (a change of any, or a file touched, shows)."""
    out: dict[str, tuple] = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(here, name)
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes(), st.st_mtime_ns)
    return out


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> set[str]:
    """Paths created, removed or changed between two `tree`s."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def build_template(base: Path) -> Path:
    """The work tree `base/bob` (see the module docstring); returns it. `base/alice` has pushed more
    since bob pulled, so a pull in a copy of bob fetches new sessions and commits."""
    url = bare_remote(base / "origin.git")
    alice, bob = clone(base / "alice", url), clone(base / "bob", url)
    shared = alice.session("r1")
    for i in range(3):
        shared.append(tagged_turn(0, i), compact=False)
    shared.compact()
    assert run(alice.root, "push").exit_code == 0
    assert run(bob.root, "pull").exit_code == 0
    shared.append(tagged_turn(0, 9), compact=False)
    shared.compact()
    alice.session("r2").append(tagged_turn(0, 10), compact=False)
    assert run(alice.root, "push").exit_code == 0

    a = bob.session("a")
    for i in range(4):
        a.append(tagged_turn(1, i), compact=False)
    a.compact()
    a.append(tagged_turn(1, 5), compact=False)
    a.compact()
    bob.fork("a@2", "b")
    gone = bob.session("gone")
    gone.append(tagged_turn(2, 0), compact=False)
    gone.append(tagged_turn(2, 1), compact=False)
    gone.compact()
    for args in (("import", "--example", "--as", "imp"), ("rm", "gone"), ("rename", "a", "--title", "A")):
        assert run(bob.root, *args).exit_code == 0, args
    conversations = FileConversationStore(bob)
    from helpers.conversations import save_turns

    save_turns(conversations, "chat", 1)
    assert run(bob.root, "list").exit_code == 0  # the heads cache
    (bob.root / "refs" / "checkpoints" / "a" / "2").unlink()  # for fsck --repair to recreate
    with open(bob.root / "logs" / "b.jsonl", "ab") as log:
        log.write(b'{"torn')  # a crash's torn tail, for fsck --repair to cut
    asyncio.set_event_loop(None)
    return base / "bob"


def open_store(work: Path) -> SessionStore:
    return SessionStore.open(work / ".sessions", create=False, warm=False)
