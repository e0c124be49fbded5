"""Nothing is read or written outside the store through a symlinked store directory (issue 29.1).

A cloned repository can carry a link anywhere in `.sessions/`. Every directory pattern a store really
holds after every writing command has run (`linked_store.build_template`) is linked outside in turn,
every instance of it at once (all 256 `objects/<fan>`, every `refs/checkpoints/<session>`, ...),
and every command that writes runs on it, with real symlinks, a real git remote for `pull`:

- the outside directories are exactly as before (names, bytes, mtimes): nothing created, changed,
  touched or removed there;
- a command that writes under a linked directory when nothing is linked (the same command on an
  unlinked copy, diffed) exits 2 with one line naming the link, no traceback; so does every command
  while a top-level store directory is linked (the store is refused when it is opened);
- any other command does what it does unlinked, or refuses in the same way.

The library's own writers (`Session.append` as `session chat` and agents call it, a
`FileConversationStore` save) run on a store opened BEFORE the link appears, so each write's own
check, not the one at opening, is what refuses.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.cli import run
from helpers.gitrepos import isolate_git
from helpers.linked_store import (
    TRANSIENT,
    build_template,
    changed,
    instances,
    link_outside,
    open_store,
    patterns_of,
    tree,
)
from helpers.messages import tagged_turn
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.session.layout import STORE_DIRS

PATTERNS = [
    "index",
    "locks",
    "locks/importing",
    "logs",
    "objects",
    "objects/<fan>",
    "refs",
    "refs/checkpoints",
    "refs/checkpoints/<session>",
    "titles",
    "trash",
    "trash/<entry>",
    "trash/<entry>/refs",
]

CLI_WRITERS: dict[str, tuple[list[str], str | None]] = {
    "compact": (["compact", "a"], None),
    "checkout": (["checkout", "a@2"], None),
    "fork": (["fork", "a@2", "c"], None),
    "import": (["import", "--example", "--as", "imp2"], None),
    "rm": (["rm", "b"], None),
    "rm --undo": (["rm", "--undo", "gone"], None),
    "rename": (["rename", "b", "b2"], None),
    "rename --title": (["rename", "a", "--title", "new title"], None),
    "gc": (["gc", "--grace", "0"], None),
    "fsck --repair": (["fsck", "--repair"], None),
    "pull": (["pull"], None),
    "chat": (["chat", "a", "--model", "test"], "hello\n"),
    "end": (["end", "a"], None),
}
CLI_READERS = [
    ["list"], ["log", "a"], ["show", "a"], ["search", "w1"], ["diff", "a@1", "a@2"], ["export", "a"],
    ["gauge", "a"], ["fsck"], ["rm", "--list"],
]  # fmt: skip


@dataclass
class Outcome:
    code: int
    error: str
    """The refusal's one line ('' when it succeeded)."""


Prepared = Callable[[Path], Callable[[], Outcome]]
"""Called on a copy of the template before anything is linked; what it returns runs the command."""


def _append(work: Path) -> Callable[[], Outcome]:
    session = open_store(work).session("a")
    return lambda: run_api(lambda: session.append(tagged_turn(3, 0), compact=False))


def _save(work: Path) -> Callable[[], Outcome]:
    import asyncio

    from helpers.conversations import run_turn
    from sessionstore import FileConversationStore

    conversations = FileConversationStore(open_store(work))
    conversation = asyncio.run(conversations.load("chat"))
    assert conversation is not None

    async def save() -> None:
        await conversations.save(await run_turn(conversation, "more"))

    return lambda: run_api(lambda: asyncio.run(save()))


API_WRITERS: dict[str, Prepared] = {"Session.append": _append, "FileConversationStore.save": _save}


def cli_writer(args: list[str], stdin: str | None) -> Prepared:
    """The CLI command `args`: it opens the store itself, after the links are made."""
    return lambda work: lambda: run_cli(work, args, stdin)


def run_cli(work: Path, args: list[str], stdin: str | None) -> Outcome:
    from click.testing import CliRunner

    from sessionstore.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--store", str(work / ".sessions"), *args], input=stdin, catch_exceptions=False
    )
    lines = result.stderr.strip().splitlines()
    return Outcome(result.exit_code, lines[-1] if result.exit_code == 2 and lines else "")


def run_api(act: Callable[[], object]) -> Outcome:
    try:
        act()
    except SessionStoreError as err:
        return Outcome(2, f"session: {err}")
    return Outcome(0, "")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        isolate_git(mp)
        return build_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(autouse=True)
def _git(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch)


def test_the_patterns_are_every_directory_the_store_holds(template: Path) -> None:
    """The list the tests link is derived: a store directory a new feature adds fails here."""
    assert patterns_of(template / ".sessions") | set(TRANSIENT) == set(PATTERNS)
    assert len(instances(template / ".sessions", "objects/<fan>")) == 256
    assert {p for p in PATTERNS if "<" not in p} >= set(STORE_DIRS)


def _copy(template: Path, where: Path) -> Path:
    work = where / "work"
    shutil.copytree(template, work, symlinks=True)
    return work


_CLEAN: dict[str, tuple[Outcome, set[str]]] = {}


def clean_run(template: Path, tmp: Path, op: str, prepare: Prepared) -> tuple[Outcome, set[str]]:
    """What `op` does on an unlinked copy: its outcome and the store paths it changed."""
    if op not in _CLEAN:
        work = _copy(template, tmp / "clean")
        go = prepare(work)
        before = tree(work / ".sessions")
        outcome = go()
        assert outcome.code in (0, 1), (op, outcome)
        _CLEAN[op] = (outcome, changed(before, tree(work / ".sessions")))
    return _CLEAN[op]


def check_linked(
    template: Path, tmp: Path, op: str, pattern: str, prepare: Prepared, *, at_open: bool
) -> bool:
    """Run `op` with every instance of `pattern` linked outside (see the module docstring); True if
    it refused. `at_open`: the command opens the store after the links are made."""
    clean, writes = clean_run(template, tmp, op, prepare)
    work = _copy(template, tmp / "linked")
    rels = instances(work / ".sessions", pattern)
    assert rels, pattern
    go = prepare(work)
    outside = tmp / "outside"
    outside.mkdir()
    links = link_outside(work / ".sessions", rels, outside)
    before = tree(outside)
    outcome = go()
    assert tree(outside) == before, f"{op} changed the outside of {pattern}: {changed(before, tree(outside))}"
    under = any(p == rel or p.startswith(rel + "/") for p in writes for rel in rels)
    must = under or (at_open and pattern in STORE_DIRS) or (op == "import" and pattern in TRANSIENT)
    refused = outcome.code == 2 and "is a symlink" in outcome.error
    if refused:
        assert any(str(link) in outcome.error for link in links), outcome.error
        assert "Traceback" not in outcome.error
    else:
        assert not must, f"{op} with {pattern} linked: {outcome} (it writes there: {sorted(writes)[:5]})"
        assert outcome.code == clean.code, (op, pattern, outcome)
    return refused


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_writing_command_refuses_a_linked_store_directory(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    refusals = 0
    for op, (args, stdin) in CLI_WRITERS.items():
        case = tmp_path / op.replace(" ", "_")
        case.mkdir()
        refusals += check_linked(template, case, op, pattern, cli_writer(args, stdin), at_open=True)
    assert refusals


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_library_writers_refuse_a_link_that_appeared_after_opening(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    for op, prepare in API_WRITERS.items():
        case = tmp_path / op
        case.mkdir()
        check_linked(template, case, op, pattern, prepare, at_open=False)


@pytest.mark.parametrize("pattern", sorted(STORE_DIRS))
def test_every_command_refuses_a_store_with_a_linked_top_directory(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    work = _copy(template, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (link,) = link_outside(work / ".sessions", instances(work / ".sessions", pattern), outside)
    before = tree(outside)
    for args in [*CLI_READERS, *(a for a, _ in CLI_WRITERS.values())]:
        result = run(work / ".sessions", *args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr == f"session: {link} is a symlink: nothing is read or written through it " + (
            f"(it points to {outside / link.resolve().name}); replace it with a real directory holding what "
            "belongs there, then retry\n"
        ), args
    assert tree(outside) == before
