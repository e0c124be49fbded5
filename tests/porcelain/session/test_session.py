"""Session: log, history and persisted count in lockstep; replay equal to what went in; cheap loads."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic_ai.messages import ModelRequest, TextPart, UserPromptPart
from pydantic_ai.usage import RequestUsage

from helpers.messages import sample_turns, tagged_turn, turn_splits
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.errors import SessionStoreError, StaleSessionError, UnknownRevision
from sessionstore.plumbing import codec, fsutil, logs, objects
from sessionstore.porcelain.session import turn_blobs
from sessionstore.porcelain.session.arguments import usage_dict
from sessionstore.porcelain.store import SessionStore


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turn_splits())
def test_replay_after_reopen_equals_what_went_in(tmp_path_factory, turns) -> None:
    root = tmp_path_factory.mktemp("rt")
    session = SessionStore.open(root).session("rt")
    flat: list = []
    stored = 0
    for turn in turns:
        if flat and len(turn) > len(flat) and codec.encode(turn[: len(flat)]) == codec.encode(flat):
            # generated data can look exactly like result.all_messages(): the guard refuses it
            with pytest.raises(SessionStoreError, match="new_messages"):
                session.append(turn)
            continue
        session.append(turn)
        flat += turn
        stored += 1
    reopened = SessionStore.open(root, create=False).session("rt", create=False)
    assert reopened.history == flat == session.history
    assert reopened.persisted_count == len(flat) == len(reopened.sizes)
    assert reopened.sizes == estimate_messages(flat) and reopened.tokens == sum(reopened.sizes)
    assert len(reopened.log()) == stored


def test_every_part_kind_replays_equal(store: SessionStore) -> None:
    session = store.session("kinds")
    turns = sample_turns()
    for turn in turns:
        session.append(turn)
    assert store.session("kinds").history == [m for t in turns for m in t]


def test_history_is_a_copy(store: SessionStore) -> None:
    session = store.session("s")
    session.append(tagged_turn(0, 0))
    session.history.clear()
    session.sizes.clear()
    assert len(session.history) == 2 == len(session.sizes)


def test_append_refuses_nothing_and_non_messages(store: SessionStore) -> None:
    session = store.session("s")
    with pytest.raises(SessionStoreError, match="nothing to append"):
        session.append([])
    with pytest.raises(SessionStoreError, match="got dict"):
        session.append([{"kind": "request"}])  # type: ignore[list-item]
    assert not store.exists("s") and list(store.objects) == []


def test_usage_is_stored_without_zero_fields(store: SessionStore) -> None:
    session = store.session("s")
    commit = session.append(tagged_turn(0, 0), usage=RequestUsage(input_tokens=12, output_tokens=3))
    assert commit.usage == {"input_tokens": 12, "output_tokens": 3}
    assert store.session("s").head.usage == commit.usage
    assert usage_dict(None) is None and usage_dict({"a": 0}) is None
    with pytest.raises(SessionStoreError, match="usage must be"):
        usage_dict(42)


# -- lockstep under injected failures -----------------------------------------------------------------


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise OSError("injected failure")


def _nth_call_fails(n: int, real: Callable[..., Any]) -> Callable[..., Any]:
    calls = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == n:
            raise OSError("injected failure")
        return real(*args, **kwargs)

    return wrapper


FAILURES: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "encode": lambda mp: mp.setattr(codec, "encode_unchecked", _raise),
    "read-back check": lambda mp: mp.setattr(codec, "check_decodable", _raise),
    "token estimate": lambda mp: mp.setattr(turn_blobs, "estimate_messages", _raise),
    "blob write": lambda mp: mp.setattr(objects.ObjectStore, "write_in_background", _raise),
    "blob temp write": lambda mp: mp.setattr(fsutil.os, "write", _nth_call_fails(1, fsutil.os.write)),
    "blob fsync": lambda mp: mp.setattr(fsutil, "_datasync", _nth_call_fails(1, fsutil._datasync)),
    "blob dir fsync": lambda mp: mp.setattr(objects, "fsync_dir", _raise),
    "blob link": lambda mp: mp.setattr(objects.os, "link", _raise),
    "log append": lambda mp: mp.setattr(logs.Log, "append", _raise),
    "log line write": lambda mp: mp.setattr(fsutil.os, "write", _nth_call_fails(2, fsutil.os.write)),
    "log line fsync": lambda mp: mp.setattr(fsutil, "_datasync", _nth_call_fails(2, fsutil._datasync)),
}


@pytest.mark.parametrize("step", FAILURES)
def test_a_failure_at_any_step_leaves_the_last_acknowledged_state(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    session = store.session("s")
    session.append(tagged_turn(0, 0))
    before = (session.history, session.sizes, session.persisted_count, session.head)
    log_bytes = store.log("s").path.read_bytes()
    with monkeypatch.context() as mp:
        FAILURES[step](mp)
        with pytest.raises(OSError, match="injected"):
            session.append(tagged_turn(0, 1))
    assert (session.history, session.sizes, session.persisted_count, session.head) == before
    assert store.log("s").path.read_bytes() == log_bytes
    fresh = store.session("s")
    assert (fresh.history, fresh.persisted_count, fresh.head) == before[0:1] + before[2:]
    session.append(tagged_turn(0, 2))  # the same object carries on: no stale head, no torn line
    assert store.session("s").persisted_count == 4
    assert store.fsck().ok


def test_another_session_object_appending_first_makes_this_one_stale(store: SessionStore) -> None:
    first, second = store.session("s"), store.session("s")
    first.append(tagged_turn(1, 0))
    with pytest.raises(StaleSessionError, match="'s' changed on disk"):
        second.append(tagged_turn(2, 0))
    assert second.persisted_count == 0 and second.history == []
    second.reload()
    second.append(tagged_turn(2, 0))
    assert [m.parts[0].content for m in store.session("s").history][::2] == ["w1:0:0", "w2:0:0"]


# -- replay cost: structural, not timed ----------------------------------------------------------------


class ReadSpy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.objects: list[str] = []
        self.lines = 0
        real_read, real_parse = objects.read_regular, logs.parse_line

        def read(path: str, **kwargs: Any) -> bytes:  # every blob file read, by its id
            self.objects.append(os.path.basename(os.path.dirname(path)) + os.path.basename(path))
            return real_read(path, **kwargs)

        def parse(*args: Any) -> Any:
            self.lines += 1
            return real_parse(*args)

        monkeypatch.setattr(objects, "read_regular", read)
        monkeypatch.setattr(logs, "parse_line", parse)


def test_loading_reads_only_what_follows_the_last_reset_point(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.session("long")
    for i in range(20):
        session.append(tagged_turn(0, i))
    summary = [ModelRequest(parts=[UserPromptPart("summary of 20 turns")])]
    with store.lock("long"):
        checkpoint = session.commit_checkpoint(summary, tier=2)
    tail = [session.append(tagged_turn(1, i)) for i in range(3)]

    spy = ReadSpy(monkeypatch)
    loaded = store.session("long")
    assert spy.objects == [checkpoint.blob, *(c.blob for c in tail)]
    assert spy.lines == 4  # the checkpoint line and the three after it, never the 20 before
    assert loaded.history == summary + [m for i in range(3) for m in tagged_turn(1, i)]
    assert loaded.persisted_count == 7


def test_a_checkout_is_a_reset_point_too(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    session = store.session("s")
    commits = [session.append(tagged_turn(0, i)) for i in range(10)]
    session.checkout("s@2")
    after = session.append(tagged_turn(1, 0))
    spy = ReadSpy(monkeypatch)
    loaded = store.session("s")
    assert spy.objects == [commits[0].blob, commits[1].blob, after.blob]
    assert spy.lines == 2
    assert loaded.history == tagged_turn(0, 0) + tagged_turn(0, 1) + tagged_turn(1, 0)


def test_checkout_rewinds_the_history_and_the_log_keeps_everything(store: SessionStore) -> None:
    session = store.session("s")
    commits = [session.append(tagged_turn(0, i)) for i in range(4)]
    head = session.checkout("s~2")
    assert head.kind == "checkout" and head.target == commits[1].id and head.seq == 5
    expected = tagged_turn(0, 0) + tagged_turn(0, 1)
    assert session.history == expected == store.session("s").history
    assert session.persisted_count == 4 == head.count and session.sizes == estimate_messages(expected)
    assert [c.id for c in session.log()[1:]] == [c.id for c in commits[::-1]]  # nothing lost
    session.checkout(commits[3].id[:8])  # forward again, by id prefix
    assert store.session("s").history == [m for i in range(4) for m in tagged_turn(0, i)]
    store.session("other").append(tagged_turn(1, 0))
    with pytest.raises(UnknownRevision, match="use `session fork other"):
        session.checkout("other")
    assert store.fsck().ok


def test_checkpoint_numbers_follow_the_log_and_restore_missing_refs(store: SessionStore) -> None:
    session = store.session("c")
    session.append(tagged_turn(0, 0))
    with store.lock("c"):
        one = session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("s1")])], tier=2)
    (store.refs.dir / "c" / "1").unlink()  # a crash between the log line and the ref...
    session = store.session("c")  # ...so the next compaction comes from a freshly opened session
    summary = [ModelRequest(parts=[UserPromptPart("s2")])]
    with store.lock("c"):
        two = session.commit_checkpoint(summary, tier=3, extra={"x": 1})
    assert [(r.k, r.commit_id) for r in store.refs.list("c")] == [(1, one.id), (2, two.id)]
    assert two.extra["checkpoint"] == 2 and two.tier == 3 and two.extra["x"] == 1
    assert store.session("c").history == summary
    assert store.fsck().ok


def test_repr_names_session_and_head(store: SessionStore) -> None:
    session = store.session("s")
    assert repr(session) == "Session('s', messages=0, head=None)"
    commit = session.append([ModelRequest(parts=[UserPromptPart("x")]), *tagged_turn(0, 0)[1:]])
    assert repr(session) == f"Session('s', messages=2, head={commit.id[:7]})"
    assert isinstance(session.history[1].parts[0], TextPart)


def test_a_real_transcript_replays_equal(store: SessionStore, realdata) -> None:
    from sessionstore.formats.transcripts import read_transcript

    steps = read_transcript(realdata / "claude_code" / "codemie_session-3fe1b6bc.jsonl").steps
    session = store.session("real")
    for step in steps:
        session.append(step.messages, compact=False)
    flat = [m for step in steps for m in step.messages]
    reopened = store.session("real")
    assert reopened.history == flat and reopened.persisted_count == len(flat) > 100
    assert store.fsck().ok


def test_sessions_ending_at_once_both_keep_their_memory_bullet(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MEMORY.md is read, changed and replaced: two sessions ending together once both read the same
    # file and the second replace dropped the first one's bullet.
    import threading
    import time

    from sessionstore.memory import append as memory_append
    from sessionstore.memory.document import template_text

    store = SessionStore.open(tmp_path / "store")
    store.memory_path.write_text(template_text())
    sessions = [store.session(name) for name in ("alpha", "beta")]
    for i, s in enumerate(sessions):
        s.append(tagged_turn(i, 0))
    real_write = memory_append.write_atomic

    def slow_write(path, text) -> None:  # widen the read-to-replace window
        time.sleep(0.2)
        real_write(path, text)

    monkeypatch.setattr(memory_append, "write_atomic", slow_write)
    threads = [threading.Thread(target=s.end) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = store.memory_path.read_text()
    assert " alpha: " in text and " beta: " in text


def test_an_unwritable_checkpoint_ref_says_the_compaction_is_saved(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.session("c")
    session.append(tagged_turn(0, 0))

    def refused(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    with monkeypatch.context() as patch:
        patch.setattr(store.refs, "create", refused)
        with store.lock("c"), pytest.raises(SessionStoreError, match="is saved, but checkpoints/c/1") as err:
            session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("s1")])], tier=2)
    assert "fsck --repair" in str(err.value) and "\n" not in str(err.value)
    assert store.session("c").head.kind == "compaction"  # acknowledged: the message must not say "nothing"
    assert not store.fsck().ok and store.fsck(repair=True).repaired and store.fsck().ok


def test_successive_compactions_scan_the_log_once(store: SessionStore, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Numbering checkpoints must not re-read the whole log per compaction (imports hold many)."""
    from sessionstore.plumbing.logs import Log

    session = store.session("c")
    full_scans = 0
    real_scan = Log.scan

    def counting(self, *, since_reset, end=None):  # type: ignore[no-untyped-def]
        nonlocal full_scans
        full_scans += not since_reset
        return real_scan(self, since_reset=since_reset, end=end)

    monkeypatch.setattr(Log, "scan", counting)
    with store.lock("c"):
        for i in range(5):
            session.commit_turn(tagged_turn(0, i), usage=None, kind="import")
            session.commit_checkpoint([ModelRequest(parts=[UserPromptPart(f"s{i}")])], tier=2)
    assert full_scans == 1
    assert [r.k for r in store.refs.list("c")] == [1, 2, 3, 4, 5]
    assert store.fsck().ok
