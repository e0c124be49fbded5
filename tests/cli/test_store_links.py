"""Nothing is read or written outside the store through a symlinked store directory (issue 29.1).

A cloned repository can carry a link anywhere in `.sessions/`. Every directory pattern a store really
holds after every writing command has run (`linked_store.build_template`) is linked outside in turn,
every instance of it at once (all 256 `objects/<fan>`, every `refs/checkpoints/<session>`, ...), with
real symlinks and a real git remote for `pull`, and every command that writes runs on it:

- the outside directories stay exactly as they were (names, bytes, mtimes): nothing is created,
  changed, touched or removed there;
- a command that writes under a linked directory when nothing is linked (the same command on an
  unlinked copy, diffed) exits 2 with one line naming the link, no traceback; any other command does
  what it does unlinked, or refuses in the same way.

Three angles: every CLI writer against the directories below the fixed ones (which only the
writer's own checks can catch), every CLI command (readers too) against the fixed directories (which
opening the store refuses), and the library's writers on a store opened BEFORE the link appeared
(a long-lived agent process), against the fixed directories: there each write's own check refuses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.gitrepos import isolate_git
from helpers.linked_store import (
    ALL_FANS,
    EXAMPLE,
    TRANSIENT,
    build_template,
    changed,
    copy,
    instances,
    link_outside,
    open_store,
    patterns_of,
    tree,
)
from helpers.messages import tagged_turn
from sessionstore.cli.main import cli
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.session.layout import STORE_DIRS

DEEP = ["objects/<fan>", "refs/checkpoints/<session>", "trash/<entry>", "trash/<entry>/refs"]
"""The directory patterns below the fixed ones (`STORE_DIRS`)."""

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


def run_cli(work: Path, args: list[str], stdin: str | None) -> Outcome:
    result = CliRunner().invoke(
        cli, ["--store", str(work / ".sessions"), *args], input=stdin, catch_exceptions=False
    )
    lines = result.stderr.strip().splitlines()
    return Outcome(result.exit_code, lines[-1] if result.exit_code == 2 and lines else "")


def cli_writer(args: list[str], stdin: str | None) -> Prepared:
    """The CLI command `args`: it opens the store itself, after the links are made."""
    return lambda work: lambda: run_cli(work, args, stdin)


def api_writer(act: Callable[..., object]) -> Prepared:
    """`act(store)` on a store opened (and its session `a` loaded) before the links are made."""

    def prepare(work: Path) -> Callable[[], Outcome]:
        store = open_store(work)
        session = store.session("a")

        def go() -> Outcome:
            try:
                act(store, session)
            except SessionStoreError as err:
                return Outcome(2, f"session: {err}")
            return Outcome(0, "")

        return go

    return prepare


def _import(store, session) -> None:  # type: ignore[no-untyped-def]
    from sessionstore.formats.transcripts import read_transcript
    from sessionstore.porcelain.importing.new_session import import_transcript

    import_transcript(store, read_transcript(EXAMPLE, "auto"), "imp2")


def _pull(store, session) -> None:  # type: ignore[no-untyped-def]
    from sessionstore.porcelain.sharing.pull import pull

    pull(store)


def _save(store, session) -> None:  # type: ignore[no-untyped-def]
    from helpers.conversations import run_turn
    from sessionstore import FileConversationStore

    async def save() -> None:
        conversations = FileConversationStore(store)
        conversation = await conversations.load("chat")
        assert conversation is not None
        await conversations.save(await run_turn(conversation, "more"))

    asyncio.run(save())
    asyncio.set_event_loop(None)


def _fsck(store, session) -> None:  # type: ignore[no-untyped-def]
    """fsck reports a linked directory as its problem, changing nothing: its refusal."""
    report = store.fsck(repair=True)
    if linked := [p for p in report.problems if "is a symlink" in p]:
        raise SessionStoreError(linked[0])


def _naming(call: str, *args: str) -> Callable[..., object]:
    from sessionstore.porcelain.history import naming

    return lambda store, session: getattr(naming, call)(store, *args)


API_WRITERS: dict[str, Prepared] = {
    "Session.append": api_writer(lambda store, s: s.append(tagged_turn(3, 0), compact=False)),
    "Session.compact": api_writer(lambda store, s: s.compact()),
    "Session.checkout": api_writer(lambda store, s: s.checkout("a@2")),
    "Session.end": api_writer(lambda store, s: s.end()),
    "SessionStore.fork": api_writer(lambda store, s: store.fork("a@2", "c")),
    "import_transcript": api_writer(_import),
    "naming.remove": api_writer(_naming("remove", "b")),
    "naming.undo_remove": api_writer(_naming("undo_remove", "gone")),
    "naming.rename": api_writer(_naming("rename", "b", "b2")),
    "naming.set_title": api_writer(_naming("set_title", "a", "new title")),
    "SessionStore.gc": api_writer(lambda store, s: store.gc(grace_days=0)),
    "SessionStore.fsck(repair)": api_writer(_fsck),
    "pull": api_writer(_pull),
    "FileConversationStore.save": api_writer(_save),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        isolate_git(mp)
        return build_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(autouse=True)
def _git(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch)


def test_the_patterns_are_every_directory_the_store_holds(template: Path) -> None:
    """The patterns linked here are what a store holds: one a new feature adds fails this test."""
    assert patterns_of(template / ".sessions") | set(TRANSIENT) == set(STORE_DIRS) | set(DEEP)
    assert len(ALL_FANS) == 256 and {*instances(template / ".sessions", "objects/<fan>")} == set(ALL_FANS)


_CLEAN: dict[str, tuple[Outcome, set[str]]] = {}


def clean_run(template: Path, tmp: Path, op: str, prepare: Prepared) -> tuple[Outcome, set[str]]:
    """What `op` does on an unlinked copy: its outcome and the store paths it changed."""
    if op not in _CLEAN:
        work = copy(template, tmp / "clean", git="pull" in op)
        go = prepare(work)
        before = tree(work / ".sessions")
        outcome = go()
        assert outcome.code in (0, 1), (op, outcome)
        _CLEAN[op] = (outcome, changed(before, tree(work / ".sessions")))
    return _CLEAN[op]


def check_linked(template: Path, tmp: Path, op: str, pattern: str, prepare: Prepared) -> bool:
    """Run `op` with every instance of `pattern` linked outside (see the module docstring); True if
    it refused."""
    clean, writes = clean_run(template, tmp, op, prepare)
    work = copy(template, tmp / "linked", git="pull" in op)
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
    must = under or (op in ("import", "import_transcript") and pattern in TRANSIENT)
    refused = outcome.code == 2 and "is a symlink" in outcome.error
    if refused:
        assert any(str(link) in outcome.error for link in links), outcome.error
        assert "Traceback" not in outcome.error
    else:
        assert not must, f"{op} with {pattern} linked: {outcome} (it writes there: {sorted(writes)[:5]})"
        assert outcome.code == clean.code, (op, pattern, outcome)
    return refused


@pytest.mark.parametrize("pattern", DEEP)
def test_every_writing_command_refuses_a_linked_directory_below_the_fixed_ones(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    refused = [
        op
        for op, (args, stdin) in CLI_WRITERS.items()
        if check_linked(template, _case(tmp_path, op), op, pattern, cli_writer(args, stdin))
    ]
    assert refused  # every pattern is written by some command


@pytest.mark.parametrize("pattern", sorted(STORE_DIRS))
def test_the_library_writers_refuse_a_link_that_appeared_after_opening(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    refused = [
        op
        for op, prepare in API_WRITERS.items()
        if check_linked(template, _case(tmp_path, op), op, pattern, prepare)
    ]
    assert refused, pattern  # every fixed directory is written by some writer


def _case(tmp_path: Path, op: str) -> Path:
    case = tmp_path / op.replace(" ", "_").replace("(", "_").replace(")", "")
    case.mkdir()
    return case


@pytest.mark.parametrize("pattern", sorted(STORE_DIRS))
def test_every_command_refuses_a_store_with_a_linked_fixed_directory(
    template: Path, tmp_path: Path, pattern: str
) -> None:
    work = copy(template, tmp_path / "work", git=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (link,) = link_outside(work / ".sessions", instances(work / ".sessions", pattern), outside)
    before = tree(outside)
    for args in [*CLI_READERS, *(a for a, _ in CLI_WRITERS.values())]:
        result = run_cli(work, args, None)
        assert result.code == 2, (args, result)
        assert result.error == f"session: {link} is a symlink: nothing is read or written through it " + (
            f"(it points to {outside / link.resolve().name}); replace it with a real directory holding what "
            "belongs there, then retry"
        ), args
    assert tree(outside) == before
