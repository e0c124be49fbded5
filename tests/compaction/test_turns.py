"""Turn starts, pairing and tail selection: the tail never splits a pair and keeps the last request."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.agent_histories import agent_histories
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.turns import (
    is_summary_request,
    last_user_request,
    orphans,
    pairs_intact,
    safe_cuts,
    select_tail,
    turn_starts,
)


def user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def call(i: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("bash", {"command": "ls"}, tool_call_id=i)])


def ret(i: str, text: str = "ok") -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart("bash", text, tool_call_id=i)])


SUMMARY = ModelRequest(parts=[CompactionPart(content="# Conversation summary")])
HISTORY = [
    SUMMARY,
    user("a"),
    call("1"),
    ret("1"),
    ModelResponse(parts=[TextPart("done")]),
    user("b"),
    call("2"),
    ret("2"),
]


def test_turn_starts_counts_a_leading_summary() -> None:
    assert turn_starts(HISTORY) == [0, 1, 5]
    assert turn_starts(HISTORY[1:]) == [0, 4]
    assert turn_starts([]) == []
    assert is_summary_request(SUMMARY) and not is_summary_request(user("x"))
    assert last_user_request(HISTORY) == 5 and last_user_request([SUMMARY]) is None


def test_pairs() -> None:
    assert pairs_intact(HISTORY)
    assert orphans(HISTORY[3:]) == {"1"}
    assert orphans(HISTORY[:-1]) == {"2"}


def test_safe_cuts_reject_cuts_inside_a_pair() -> None:
    safe = safe_cuts(HISTORY)
    assert len(safe) == len(HISTORY) + 1
    assert [i for i, ok in enumerate(safe) if not ok] == [3, 7]


def test_a_request_mixing_returns_and_a_prompt_is_not_a_cut() -> None:
    mixed = ModelRequest(parts=[ToolReturnPart("bash", "ok", tool_call_id="1"), UserPromptPart("next")])
    history = [user("a"), call("1"), mixed, ModelResponse(parts=[TextPart("x")])]
    sizes = estimate_messages(history)
    assert select_tail(history, sizes, 1) == 0  # the only safe turn start is the first one


def test_select_tail_budget() -> None:
    sizes = [10] * len(HISTORY)
    assert select_tail(HISTORY, sizes, 30) == 5  # forced: the last turn, 30 tokens
    assert select_tail(HISTORY, sizes, 29) == 5  # the last turn is kept even over budget
    assert select_tail(HISTORY, sizes, 69) == 5
    assert select_tail(HISTORY, sizes, 70) == 1  # equal does not exceed
    assert select_tail(HISTORY, sizes, 80) == 0
    assert select_tail([], [], 10) == 0


@hsettings(max_examples=60, deadline=None)
@given(agent_histories(max_turns=5), st.integers(0, 60_000))
def test_tail_never_splits_pairs_and_keeps_last_request(history: list, budget: int) -> None:
    sizes = estimate_messages(history)
    start = select_tail(history, sizes, budget)
    tail = history[start:]
    assert pairs_intact(tail)
    last = last_user_request(history)
    assert last is not None and start <= last
    # Within budget unless it is the forced minimum (the last turn), and maximal: one more turn overflows.
    starts = [i for i in turn_starts(history) if safe_cuts(history)[i]]
    if start != starts[-1]:
        assert sum(sizes[start:]) <= budget
    earlier = [i for i in starts if i < start]
    if earlier:
        assert sum(sizes[earlier[-1] :]) > budget
