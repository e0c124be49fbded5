"""`session pull`: fetch `refs/sessions/*` from a remote and append what is new, byte for byte.

A session whose local log is a prefix of the remote's is fast-forwarded; one that is ahead is left
alone; a divergence becomes a new session `NAME-<remote>-<short id>` holding the remote's whole log
(nothing lost, nothing merged by guesswork). The short id is that of the remote's first commit after
the common prefix, so pulling again later fast-forwards the same copy instead of making another.

Pulled commits are not rebuilt (a `Session` commit makes new lines): every remote line is verified
here (its id hashes, it chains onto the local head, its message count is what its blobs hold), every
blob is verified against its name and written durably BEFORE the lines naming it, then the writer's
`append_verified` puts all lines in one fsynced append under the session lock, and the checkpoint refs
the log implies are created last (they are derivable, and the next pull, or `session fsck --repair`,
recreates one a crash left out). A remote session that fails a check is refused alone (`Refused`,
reported `REJECTED`): nothing of it is written, and the other sessions are pulled.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StaleSessionError, UnknownRevision
from ..plumbing.codec import line_count
from ..plumbing.commits import Commit, parse_line
from ..plumbing.fsutil import fsync_dir, write_temp
from ..plumbing.git import Git, GitError, RefLocked
from ..plumbing.names import is_valid_name
from ..plumbing.objects import hash_bytes
from .sharing import (
    AHEAD,
    DEFAULT_REMOTE,
    DIVERGED,
    FAST_FORWARD,
    NEW,
    REJECTED,
    SESSION_REFS,
    UP_TO_DATE,
    Outcome,
    copy_prefix,
    open_git,
    parse_subject,
    tracking_prefix,
)
from .writer import append_verified

if TYPE_CHECKING:
    from .layout import StoreLayout as SessionStore

Chain = list[tuple[str, int, str]]
"""A remote session as (git commit, seq, store commit id), oldest first."""


class Refused(GitError):
    """A remote session that cannot be pulled as it is (not written by `session push`, damaged, under
    a ref no session name fits, its copy's name taken, or the local session moved meanwhile): that
    session is reported `REJECTED` with this message, nothing of it is written, the others are pulled."""


def pull(store: SessionStore, remote: str = DEFAULT_REMOTE, names: Sequence[str] = ()) -> list[Outcome]:
    """Fetch the remote's sessions (all, or `names`) and bring the local store up to them.

    One outcome per session; a remote session that is refused (`Refused`: see `read_chain` and
    `_import`) is `REJECTED` with the reason, and changes nothing, while the others are pulled. A
    session deleted on the remote is no longer pulled (its tracking ref is pruned); the local one stays.
    """
    git = open_git(store, remote, "pull")
    names = list(dict.fromkeys(names))
    if names:
        there = git.ls_remote(remote, SESSION_REFS)
        missing = [n for n in names if n not in there]
        if missing:
            have = f" (it has: {', '.join(sorted(there))})" if there else " (it has no sessions)"
            raise UnknownRevision(f"no session {missing[0]!r} on remote {remote!r}{have}")
    prefix = tracking_prefix(remote)
    wanted = [f"+{SESSION_REFS}{n}:{prefix}{n}" for n in names] or [f"+{SESSION_REFS}*:{prefix}*"]
    fetch = ("fetch", "--no-tags", "--quiet", "--prune", remote, *wanted)
    for wait in (0.2, 0.5, None):  # a locked ref: another git is moving it (a killed pull's, finishing)
        try:
            git.run(*fetch, what=f"git fetch from {remote!r}", fix=git.remote_fix(remote), detach=True)
            break
        except RefLocked:
            if wait is None:
                raise
            time.sleep(wait)
    tips = {n: sha for n, (sha, _) in git.refs(prefix).items()}
    out = []
    pulled: dict[str, str] = {}  # refs/sessions/<name> -> the git commit its log now ends with
    try:
        for name in list(names) or sorted(tips):
            try:
                if not is_valid_name(name):
                    raise _refused(
                        name, remote, f"remote ref {SESSION_REFS}{name}: {name!r} is not a session name"
                    )
                out.append(_pull_one(store, git, remote, name, tips[name], pulled))
            except Refused as err:
                out.append(Outcome(name, REJECTED, detail=str(err)))
    finally:  # what a push exports from (a stale one costs a re-export of the same commits, no more)
        git.update_refs(pulled)
    return out


def _refused(name: str, remote: str, why: str) -> Refused:
    return Refused(
        f"{why}: nothing was pulled; it was not written by `session push` "
        f"(`git push {remote} :{SESSION_REFS}{name}` removes it from {remote})"
    )


def read_chain(git: Git, name: str, tip: str, remote: str = DEFAULT_REMOTE) -> Chain:
    """The remote session at `tip`, checked to be a linear chain of sessionstore commits (else
    `Refused`, naming the first git object that is not one)."""
    out: Chain = []
    for sha, parents, subj in git.chain(tip):
        parsed = parse_subject(subj)
        expect = [out[-1][0]] if out else []
        if parsed is None or parents != expect or parsed[0] != len(out) + 1:
            raise _refused(
                name, remote, f"remote session {name!r} is not a sessionstore chain at git commit {sha[:12]}"
            )
        out.append((sha, parsed[0], parsed[1]))
    if not out:  # a ref at a blob or a tree: `git log` lists no commit
        raise _refused(
            name, remote, f"remote session {name!r} is not a sessionstore chain: {tip[:12]} is no commit"
        )
    return out


def _pull_one(
    store: SessionStore, git: Git, remote: str, name: str, tip: str, pulled: dict[str, str]
) -> Outcome:
    chain = read_chain(git, name, tip, remote)
    local = _local_ids(store, name)
    common = _common(local, chain)
    if common == len(chain):
        _finish_refs(store, name, local)
        return Outcome(name, UP_TO_DATE if common == len(local) else AHEAD, len(local) - common)
    if common == len(local):
        _import(store, git, name, chain[common:], local)
        pulled[f"{SESSION_REFS}{name}"] = chain[-1][0]
        return Outcome(name, NEW if not local else FAST_FORWARD, len(chain) - common)
    copy = divergence_name(name, remote, chain[common][2])
    theirs = _local_ids(store, copy)
    done = _common(theirs, chain)
    if done < len(theirs):
        raise Refused(
            f"session {copy!r} (the copy of {remote}'s {name!r}) has commits of its own: rename it "
            f"(`session rename {copy} NEW`) and pull again; nothing was pulled"
        )
    # the record that `copy` is the remote's (push of all sessions leaves it out), before its first
    # line: a pull killed in its append leaves a copy no push sends, never one without its record
    git.update_refs({f"{copy_prefix(remote)}{copy}": chain[-1][0]})
    if done < len(chain):
        _import(store, git, copy, chain[done:], theirs)
        pulled[f"{SESSION_REFS}{copy}"] = chain[-1][0]
    else:
        _finish_refs(store, copy, theirs)
    return Outcome(name, DIVERGED, len(chain) - done, into=copy)


def _finish_refs(store: SessionStore, name: str, commits: Sequence[Commit]) -> None:
    """The checkpoint refs of a session (or divergence copy) that has every remote commit already:
    a pull killed between its append and its refs left them out, and this pull finishes that."""
    wanted = sum(1 for c in commits if c.kind == "compaction")
    if wanted and len({ref.k for ref in store.refs.list(name)} & set(range(1, wanted + 1))) < wanted:
        with store.lock(name):
            ensure_checkpoint_refs(store, name)


def divergence_name(name: str, remote: str, first_theirs: str) -> str:
    """`NAME-<remote>-<short id>`, shortened to a valid session name when needed."""
    tag = re.sub(r"[^A-Za-z0-9._-]", "-", remote).strip(".-") or "remote"
    tail = f"-{tag}-{first_theirs[:7]}"
    candidate = name[: 128 - len(tail)] + tail
    return candidate if is_valid_name(candidate) else f"{name[:100]}-{first_theirs[:7]}"


def _local_ids(store: SessionStore, name: str) -> list[Commit]:
    if not store.exists(name):
        return []
    return store.log(name).scan(since_reset=False)[0]


def _common(local: Sequence[Commit], chain: Chain) -> int:
    n = 0
    for mine, (_, _, theirs) in zip(local, chain, strict=False):
        if mine.id != theirs:
            break
        n += 1
    return n


def _import(store: SessionStore, git: Git, name: str, part: Chain, before: Sequence[Commit]) -> None:
    """Append the remote commits `part` after `before` (the local log) to session `name`."""
    lines = list(git.cat(f"{sha}:line" for sha, _, _ in part))
    head = before[-1] if before else None
    commits: list[Commit] = []
    for (sha, _, cid), data in zip(part, lines, strict=True):
        commit = parse_line(data.rstrip(b"\n"), name, 0) if data and data.endswith(b"\n") else None
        if (
            data is None
            or commit is None
            or data.count(b"\n") != 1
            or commit.id != cid
            or commit.parent != (head.id if head else None)
            or commit.seq != (head.seq + 1 if head else 1)
        ):
            raise Refused(
                f"remote commit {cid[:7]} of session {name!r} (git {sha[:12]}) does not verify: "
                "nothing was pulled; the remote's copy is damaged"
            )
        commits.append(commit)
        head = commit
    needed: dict[str, str] = {}  # store blob id -> "<git commit>:objects/<id>"
    paths: dict[str, Path] = {}
    for (sha, _, _), commit in zip(part, commits, strict=True):
        for oid in commit.named_blobs:
            if oid not in paths:
                paths[oid] = store.objects.path(oid)
                if not paths[oid].is_file():
                    needed[oid] = f"{sha}:objects/{oid}"
    blobs = dict(zip(needed, git.cat(needed.values()), strict=True))
    for oid, data in blobs.items():
        if data is None or hash_bytes(data) != oid:
            raise Refused(
                f"blob {oid[:12]} of session {name!r} is missing or corrupt on the remote: nothing was pulled"
            )
    local_head = before[-1] if before else None
    check_counts(store, name, local_head, part, commits, blobs)  # type: ignore[arg-type]  (no None)
    changed = Refused(f"session {name!r} changed while pulling: nothing was pulled; pull again")
    with store.lock(name):
        log = store.log(name)
        now = log.head()  # the ids chain: the same head id at the same place is the same history
        if _place(now) != _place(local_head):
            raise changed
        write_objects(store, blobs, paths)  # type: ignore[arg-type]  (verified: no None left)
        try:  # cuts a torn tail from a crash (not data), refuses a head that moved since
            append_verified(log, local_head, b"".join(lines))  # type: ignore[arg-type]
        except StaleSessionError:
            raise changed from None
        ensure_checkpoint_refs(store, name)


def check_counts(
    store: SessionStore,
    name: str,
    head: Commit | None,
    part: Chain,
    commits: Sequence[Commit],
    blobs: dict[str, bytes],
) -> None:
    """Refuse remote commits whose `count` (and `sizes`) their blobs do not hold, as fsck checks a
    log: such a line verifies (its id is rehashed), yet the session would not load once it is pulled.
    `blobs`: the verified new ones; the others are read from the store."""
    messages: dict[str, int] = {}
    count = head.count if head else 0
    for (sha, _, _), c in zip(part, commits, strict=True):
        added = 0
        for oid in c.named_blobs:
            if oid not in messages:
                messages[oid] = line_count(blobs[oid] if oid in blobs else store.objects.read(oid))
            added += messages[oid]
        count, agrees = c.count_after(count, added)
        if not agrees:
            raise Refused(
                f"remote commit {c.id[:7]} of session {name!r} (git {sha[:12]}) says {c.count} messages, "
                f"its blobs hold {count}: nothing was pulled; the remote's copy is damaged"
            )


def _place(commit: Commit | None) -> tuple[str, int] | None:
    return (commit.id, commit.offset) if commit else None


def ensure_checkpoint_refs(
    store: SessionStore, name: str, commits: Sequence[Commit] | None = None
) -> list[int]:
    """Create the checkpoint refs the log of `name` implies and lacks (caller holds its lock): the
    pulled compactions', and any a pull killed between its append and its refs left out. Refs are
    derivable from the log (DESIGN §2), so this is a repair, never a guess. `commits`: the whole log,
    when the caller has scanned it already. Returns the numbers made."""
    have = {ref.k for ref in store.refs.list(name)}
    if commits is None:
        commits = store.log(name).scan(since_reset=False)[0]
    compactions = [c for c in commits if c.kind == "compaction"]
    made = []
    for k, commit in enumerate(compactions, start=1):
        if k not in have:
            store.refs.create(name, k, commit.id, commit.offset)
            made.append(k)
    return made


def write_objects(store: SessionStore, blobs: dict[str, bytes], paths: dict[str, Path] | None = None) -> None:
    """Write many verified blobs durably, then sync each touched fan-out directory once.

    Returns only when every blob and its directory entry is durable, so lines naming them may
    follow. On Linux the blobs are written to temp files, made durable together by one `syncfs` of the
    store's filesystem, and only then linked into place (one sync for thousands of blobs: a pull of
    2,000 blobs spent 2 s in per-file syncs under load, 0.3 s this way). Elsewhere each temp file is
    synced on its own, as `ObjectStore.write` does.
    """
    if paths is None:  # where each blob goes (`ObjectStore.path`), when the caller has not asked yet
        paths = {oid: store.objects.path(oid) for oid in blobs}
    fans = {path.parent for path in paths.values()}
    new_fan = False
    for fan in fans:
        if not fan.is_dir():
            fan.mkdir(parents=True, exist_ok=True)
            new_fan = True
    syncfs = _syncfs()
    temps: list[tuple[Path, Path]] = []
    try:
        for oid, data in blobs.items():
            final = paths[oid]
            tmp = write_temp(final.parent, data) if syncfs is None else _write_unsynced(final.parent, data)
            temps.append((tmp, final))
        if syncfs is not None:
            syncfs(store.objects.dir)
        for tmp, final in temps:
            with contextlib.suppress(FileExistsError):  # an equal object is there already
                os.link(tmp, final)
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="sessionstore-pull") as pool:
        for _ in pool.map(fsync_dir, fans):  # directory syncs wait on the journal: overlap them
            pass
    if new_fan:
        fsync_dir(store.objects.dir)


def _write_unsynced(directory: Path, data: bytes) -> Path:
    """`data` in a new temp file in `directory` (umask applies), not yet synced: the caller syncs."""
    import secrets

    path = Path(os.path.join(directory, f".tmp-pull-{secrets.token_hex(8)}"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)
    return path


def _syncfs() -> Callable[[Path], None] | None:
    """`syncfs(2)` of the filesystem holding a path (Linux, which waits for the writeback), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.syncfs
    except (OSError, AttributeError):
        return None

    def sync(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if call(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(path))
        finally:
            os.close(fd)

    return sync
