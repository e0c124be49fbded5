"""The one commit writer: guards and what every commit carries (DESIGN §3, §5)."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from helpers.messages import tagged_turn
from helpers.slow_blob import slow_blob_sync
from sessionstore.errors import SessionStoreError, StaleSessionError
from sessionstore.integrations.runs import run_turn
from sessionstore.porcelain.session.writer import Lockstep, append_verified, model_id, write_commit
from sessionstore.porcelain.store import SessionStore


def _agent() -> Agent[None, str]:
    return Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("done")])))


def test_append_refuses_all_messages_and_saves_nothing(store: SessionStore) -> None:
    session = store.session("s")
    agent = _agent()
    first = agent.run_sync("one", message_history=session.history)
    session.append(first.new_messages())
    second = agent.run_sync("two", message_history=session.history)
    before = (session.persisted_count, session.head, store.log("s").path.read_bytes())
    with pytest.raises(SessionStoreError, match=r"result\.new_messages\(\), not all_messages\(\)"):
        session.append(second.all_messages())
    assert (session.persisted_count, session.head, store.log("s").path.read_bytes()) == before
    # the same history decoded again (another process, a reload) is caught by its stored bytes
    reopened = store.session("s")
    with pytest.raises(SessionStoreError, match="new_messages"):
        reopened.append(store.session("s").history + list(second.new_messages()))
    session.append(second.new_messages())
    assert store.session("s").persisted_count == 4


def test_a_turn_that_happens_to_repeat_nothing_is_accepted(store: SessionStore) -> None:
    session = store.session("s")
    session.append(tagged_turn(0, 0))
    session.append(tagged_turn(0, 1))
    assert session.persisted_count == len(tagged_turn(0, 0)) + len(tagged_turn(0, 1))


@pytest.mark.parametrize("how", ["fork", "checkout"])
def test_fork_and_checkout_keep_the_sources_model_and_window(store: SessionStore, how: str) -> None:
    session = store.session("s")
    session.model = "anthropic:claude-sonnet-4-5"
    for i in range(3):
        session.append(tagged_turn(0, i))
    assert session.head is not None and session.head.extra.get("model") == model_id(session.model)
    capacity = session.head.extra.get("capacity")
    if how == "fork":
        moved = store.fork("s@2", "spike")
        head = moved.head
    else:
        head = session.checkout("s@2")
    assert head is not None and head.kind == how
    assert head.extra.get("model") == "anthropic:claude-sonnet-4-5"
    assert head.extra.get("capacity") == capacity


def test_count_and_tokens_follow_the_parent_without_resumming(store: SessionStore) -> None:
    session = store.session("s")
    for i in range(5):
        session.append(tagged_turn(1, i))
    assert session.head is not None
    assert session.head.count == len(session.history) == session.persisted_count
    assert session.head.tokens == sum(session.sizes)
    assert isinstance(session, Lockstep)


def test_run_turn_through_the_writer_replays_equal(store: SessionStore) -> None:
    session = store.session("s")
    for prompt in ("a", "b", "c"):
        run_turn(session, _agent(), prompt)
    assert store.session("s").history == session.history


def test_session_end_uses_the_stores_summary_model(store: SessionStore) -> None:
    assert store.summary_model == store.settings.model == "extractive"
    store.summarizer = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("x")]))
    assert store.summary_model is store.summarizer


def test_before_append_sees_the_line_it_precedes_and_can_stop_it(store: SessionStore) -> None:
    session = store.session("s")
    session.append(tagged_turn(0, 0))
    log, head = store.log("s"), session.head
    seen: list[dict] = []
    commit, line = write_commit(
        log, head, kind="turn", blob=None, count=head.count, tokens=head.tokens, extra={"sizes": []},
        before_append=lambda body: seen.append((dict(body), log.path.read_bytes())),
    )  # fmt: skip
    ((body, on_disk),) = seen
    assert body["id"] == commit.id and on_disk.endswith(head_line(log, head))  # called before the append
    assert log.path.read_bytes().endswith(line) and commit.extra.get("model") == head.extra.get("model")
    before = log.path.read_bytes()

    def refuse(body: dict) -> None:
        raise OSError("index full")

    with pytest.raises(OSError, match="index full"):
        write_commit(log, commit, kind="turn", blob=None, count=commit.count, tokens=commit.tokens,
                     extra={"sizes": []}, before_append=refuse)  # fmt: skip
    assert log.path.read_bytes() == before  # nothing appended


def head_line(log, commit) -> bytes:
    return log.path.read_bytes()[commit.offset : commit.end]


def test_append_verified_appends_byte_for_byte_and_refuses_a_moved_head(store: SessionStore) -> None:
    source = store.session("a")
    for i in range(3):
        source.append(tagged_turn(0, i))
    lines = store.log("a").path.read_bytes().splitlines(keepends=True)
    copy = store.log("b")
    append_verified(copy, None, lines[0])
    first = copy.head()
    with open(copy.path, "ab") as f:
        f.write(b'{"torn')  # a crash mid-append: not data, cut by the next append
    append_verified(copy, first, b"".join(lines[1:]))
    assert copy.path.read_bytes() == store.log("a").path.read_bytes()
    assert [c.id for c in copy.scan(since_reset=False)[0]] == [
        c.id for c in store.log("a").scan(since_reset=False)[0]
    ]
    with pytest.raises(StaleSessionError):
        append_verified(copy, first, lines[1])  # the head moved on from `first`
    assert copy.path.read_bytes() == store.log("a").path.read_bytes()


def test_commit_turn_takes_counts_the_caller_has_and_refuses_a_mismatch(store: SessionStore) -> None:
    from sessionstore.accounting.tokens import estimate_messages

    session = store.session("s")
    turn = tagged_turn(0, 0, size=3)
    with store.lock("s"), pytest.raises(ValueError, match="2 sizes for 3 messages"):
        session.commit_turn(turn, sizes=[1, 2])
    assert session.persisted_count == 0 and not list(store.objects)  # refused before any write
    sizes = estimate_messages(turn)
    with store.lock("s"):
        session.commit_turn(turn, sizes=sizes)
    assert store.session("s").sizes == sizes and session.tokens == sum(sizes)


def test_a_turns_line_is_built_while_its_blob_syncs_and_appended_only_after(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The line's work overlaps the blob's syncs; the line never reaches the log before its blob is
    # durable under its name (DESIGN §2: a line never names a blob that is not there).
    session = store.session("s")
    session.append(tagged_turn(1, 0), compact=False)
    events: list[str] = []
    slow_blob_sync(monkeypatch, events)
    commit = session.append(tagged_turn(1, 1), compact=False)
    assert events == ["line built", "blob synced", "line appended"]
    assert store.objects.read(commit.blob) and store.session("s").history == session.history


def test_a_blob_that_fails_to_land_leaves_no_line_and_the_session_as_it_was(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.session("s")
    session.append(tagged_turn(2, 0), compact=False)
    before = (session.persisted_count, session.head, store.log("s").path.read_bytes())
    events: list[str] = []
    slow_blob_sync(monkeypatch, events, fail=True)
    with pytest.raises(OSError, match="No space left"):
        session.append(tagged_turn(2, 1), compact=False)
    assert events == ["line built"]  # built meanwhile, never appended
    assert (session.persisted_count, session.head, store.log("s").path.read_bytes()) == before
    assert not list(store.objects.stray_temps())
    monkeypatch.undo()
    session.append(tagged_turn(2, 2), compact=False)
    assert store.session("s").persisted_count == session.persisted_count
