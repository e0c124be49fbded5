"""Every deliberate error (errors.py): one base type, the built-in kinds callers catch, one-line messages.

What a caller may rely on: `except SessionStoreError` catches every deliberate error; each one is also
the built-in exception its kind suggests (a bad name is a `ValueError`, an unknown revision a
`LookupError`, a lock timeout a `TimeoutError`), so generic code handles it too; and `str(err)` is one
line naming the thing and the fix, because the CLI prints it as-is. The messages are checked on the
errors the library really raises, each provoked through the public API on a real store.
"""

from __future__ import annotations

import inspect
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.procs import spawn
from sessionstore import SessionStore, Settings, errors
from sessionstore.errors import (
    CompactionError,
    CorruptLogError,
    CorruptObjectError,
    ImmutableRefError,
    ImportFormatError,
    InvalidSessionName,
    LockTimeout,
    MemoryFileError,
    NotAStoreError,
    NothingToCompact,
    SessionBusy,
    SessionStoreError,
    SettingsError,
    StaleSessionError,
    StorePathError,
    UnknownRevision,
)

KINDS: dict[type[SessionStoreError], tuple[type[BaseException], ...]] = {
    InvalidSessionName: (ValueError,),
    UnknownRevision: (LookupError,),
    StaleSessionError: (),
    LockTimeout: (TimeoutError,),
    CorruptObjectError: (),
    CorruptLogError: (CorruptObjectError,),
    ImmutableRefError: (),
    NotAStoreError: (),
    SettingsError: (ValueError,),
    ImportFormatError: (ValueError,),
    MemoryFileError: (),
    CompactionError: (),
    NothingToCompact: (CompactionError,),
    SessionBusy: (LockTimeout, TimeoutError),
    StorePathError: (),
}


def test_every_error_class_derives_from_the_base_and_is_listed_here() -> None:
    defined = {
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    }
    assert all(issubclass(cls, SessionStoreError) for cls in defined)
    assert defined - {SessionStoreError} == set(KINDS), "a new error: add its built-in kind to KINDS"


@pytest.mark.parametrize("cls", list(KINDS), ids=lambda c: c.__name__)
def test_each_error_is_caught_by_the_base_and_by_its_builtin_kind(cls: type[SessionStoreError]) -> None:
    for kind in (SessionStoreError, Exception, *KINDS[cls]):
        with pytest.raises(kind):
            raise cls("x")
    others = {k for ks in KINDS.values() for k in ks} - set(KINDS[cls]) - {cls}
    assert not any(issubclass(cls, other) for other in others if not issubclass(other, SessionStoreError))


# -- the errors the library raises ----------------------------------------------------------------


def turn(text: str) -> list:
    return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart("ok")])]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store", settings=Settings(lock_timeout_s=0.2))
    store.session("fix-auth").append(turn("first"), compact=False)
    return store


@pytest.fixture
def held(store: SessionStore) -> Iterator[str]:
    """The session 'fix-auth' locked by another process for the test's duration."""
    holder = spawn("hold_lock.py", store.root, "fix-auth", stdin=subprocess.PIPE)
    try:
        assert holder.stdout and holder.stdout.readline().strip() == "locked"
        yield "fix-auth"
    finally:
        assert holder.stdin
        holder.stdin.close()
        holder.wait(timeout=10)


def flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


SCENARIOS: list = []


def scenario(cls: type[SessionStoreError], *names: str) -> Callable[[Callable], Callable]:
    """Register an action that must raise exactly `cls`, its message naming each of `names` (and
    of the names the action adds to its third argument before raising: paths, ids)."""

    def register(action: Callable[[SessionStore, Path, list[str]], None]) -> Callable:
        SCENARIOS.append(pytest.param(action, cls, names, id=action.__name__))
        return action

    return register


@scenario(InvalidSessionName, "'../escape'")
def invalid_name(store: SessionStore, tmp: Path, names: list[str]) -> None:
    store.session("../escape")


@scenario(UnknownRevision, "fxi-auth", "fix-auth")  # names the typo and what was meant
def unknown_revision(store: SessionStore, tmp: Path, names: list[str]) -> None:
    store.resolve("fxi-auth")


@scenario(StaleSessionError, "'fix-auth'", "reload")
def stale(store: SessionStore, tmp: Path, names: list[str]) -> None:
    mine, theirs = store.session("fix-auth"), store.session("fix-auth")
    theirs.append(turn("theirs"), compact=False)
    mine.append(turn("mine"), compact=False)


@scenario(CorruptObjectError)
def corrupt_object(store: SessionStore, tmp: Path, names: list[str]) -> None:
    (blob,) = [p for p in (store.root / "objects").rglob("*") if p.is_file()]
    names.append(blob.parent.name + blob.name[:6])  # the object's id (a prefix of it at least)
    os.chmod(blob, 0o644)
    flip_byte(blob, 10)
    store.session("fix-auth")


@scenario(CorruptLogError, "fix-auth", "fsck")
def corrupt_log(store: SessionStore, tmp: Path, names: list[str]) -> None:
    store.session("fix-auth").append(turn("second"), compact=False)
    log = store.root / "logs" / "fix-auth.jsonl"
    flip_byte(log, 20)  # inside the first line: damage, never a torn tail
    store.session("fix-auth")


@scenario(ImmutableRefError, "fix-auth")
def immutable_ref(store: SessionStore, tmp: Path, names: list[str]) -> None:
    s = store.session("fix-auth")
    s.append(turn("second"), compact=False)
    s.compact()
    (ref,) = store.refs.list("fix-auth")
    names.append(str(ref.k))
    store.refs.create("fix-auth", ref.k, ref.commit_id, ref.offset)


@scenario(StorePathError, "is a symlink", "replace it with a real directory")
def linked_store_directory(store: SessionStore, tmp: Path, names: list[str]) -> None:
    (tmp / "elsewhere").mkdir()
    (store.root / "logs").rename(tmp / "elsewhere" / "logs")
    (store.root / "logs").symlink_to(tmp / "elsewhere" / "logs")
    names.append(str(store.root / "logs"))
    store.session("fix-auth").append(turn("second"), compact=False)


@scenario(NotAStoreError)
def not_a_store(store: SessionStore, tmp: Path, names: list[str]) -> None:
    names.append(str(tmp / "empty"))
    (tmp / "empty").mkdir()
    SessionStore.open(tmp / "empty", create=False)


@scenario(SettingsError, "context_window_tokens", "-5")
def bad_setting(store: SessionStore, tmp: Path, names: list[str]) -> None:
    (tmp / "proj").mkdir()
    (tmp / "proj" / "pyproject.toml").write_text("[tool.sessionstore]\ncontext_window_tokens = -5\n")
    SessionStore.open(tmp / "proj" / ".sessions")


@scenario(ImportFormatError, "notes.jsonl")
def bad_import(store: SessionStore, tmp: Path, names: list[str]) -> None:
    from sessionstore.formats.transcripts import read_transcript

    garbage = tmp / "notes.jsonl"
    garbage.write_text('{"hello": 1}\nnot json at all\n')
    read_transcript(garbage)


@scenario(MemoryFileError, "MEMORY.md", "is a directory")
def memory_dir(store: SessionStore, tmp: Path, names: list[str]) -> None:
    from sessionstore.memory.fileio import read_memory_file

    (tmp / "MEMORY.md").mkdir()
    read_memory_file(tmp / "MEMORY.md")


@scenario(CompactionError, "256")
def budget_below_tier_3s_floor(store: SessionStore, tmp: Path, names: list[str]) -> None:
    from sessionstore.compaction.ultimate import ultimate_compact

    ultimate_compact(turn("x"), [10, 10], budget=10, summaries=[], settings=Settings())


@pytest.mark.parametrize(("action", "cls", "names"), SCENARIOS)
def test_the_library_raises_one_line_errors_naming_the_thing(
    store: SessionStore, tmp_path: Path, action: Callable, cls: type, names: tuple[str, ...]
) -> None:
    found: list[str] = []
    with pytest.raises(SessionStoreError) as info:
        action(store, tmp_path, found)
    assert type(info.value) is cls
    assert_one_line(str(info.value), *names, *found)


def assert_one_line(line: str, *names: str) -> None:
    assert line and "\n" not in line and line == line.strip(), repr(line)
    assert "Traceback" not in line
    for name in names:
        assert name in line, (name, line)


def test_a_lock_held_by_another_process_times_out_naming_session_and_holder(
    store: SessionStore, held: str
) -> None:
    s = store.session(held)
    before = (store.root / "logs" / f"{held}.jsonl").read_bytes()
    with pytest.raises(LockTimeout) as info:
        s.append(turn("blocked"), compact=False)
    assert type(info.value) is LockTimeout
    assert_one_line(str(info.value), f"'{held}'", "hold_lock.py")
    assert (store.root / "logs" / f"{held}.jsonl").read_bytes() == before  # nothing half-written
    assert s.persisted_count == store.session(held).persisted_count == 2


def test_a_manual_compaction_of_a_busy_session_is_session_busy_and_changes_nothing(
    store: SessionStore, held: str
) -> None:
    s = store.session(held)
    before = (store.root / "logs" / f"{held}.jsonl").read_bytes()
    with pytest.raises(LockTimeout) as info:  # a caller that handles lock timeouts handles this too
        s.compact()
    assert type(info.value) is SessionBusy
    assert_one_line(str(info.value), f"'{held}'", "busy", "nothing changed")
    assert (store.root / "logs" / f"{held}.jsonl").read_bytes() == before
    assert store.refs.list(held) == []
