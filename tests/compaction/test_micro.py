"""Tier 1: blanks only old tool output, never removes anything, stops under the level, is idempotent,
and scales linearly."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.agent_histories import TOOLS, agent_histories
from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.micro import ELIDED, MicroState, microcompact, recent_start

BIG = "line of tool output\n" * 200  # ~800 tokens


def tool_round(i: int, tool: str = "read_file", content: str = BIG) -> list:
    return [
        ModelResponse(parts=[ToolCallPart(tool, {"path": f"f{i}.py"}, tool_call_id=f"c{i}")]),
        ModelRequest(parts=[ToolReturnPart(tool, content, tool_call_id=f"c{i}")]),
    ]


def history_of(n: int, tools: tuple[str, ...] = ("read_file",)) -> list:
    out: list = [ModelRequest(parts=[UserPromptPart("go")])]
    for i in range(n):
        out += tool_round(i, tools[i % len(tools)])
    out.append(ModelResponse(parts=[TextPart("done")]))
    return out


def blanked_ids(messages: list) -> list[str]:
    return [
        p.tool_call_id
        for m in messages
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.content == ELIDED
    ]


NO_KEEP = Settings(micro_keep_recent_tokens=0)


def test_under_level_changes_nothing() -> None:
    history = history_of(3)
    sizes = estimate_messages(history)
    result = microcompact(history, sizes, level=sum(sizes), settings=NO_KEEP)  # equal is not over
    assert result.blanked == 0 and result.messages == history and result.tokens_after == sum(sizes)


def test_oldest_first_and_stops_as_soon_as_under() -> None:
    history = history_of(5)
    sizes = estimate_messages(history)
    level = sum(sizes) - 1000  # needs two blanks of ~800 tokens
    result = microcompact(history, sizes, level=level, settings=NO_KEEP)
    assert blanked_ids(result.messages) == ["c0", "c1"]
    assert result.blanked == 2 and result.tokens_after <= level
    assert result.sizes == estimate_messages(result.messages)
    assert result.tokens_after == sum(result.sizes) and result.tokens_before == sum(sizes)


def test_priority_protected_and_retry_parts() -> None:
    history = history_of(6, tools=("bash", "read_file", "grep"))
    history.insert(1, ModelRequest(parts=[RetryFeedbackPart(BIG, retry=RetryInfo("no_output"))]))
    sizes = estimate_messages(history)
    settings = Settings(
        micro_keep_recent_tokens=0, tool_priority={"bash": -1, "grep": 5}, protected_tools=("read_file",)
    )
    result = microcompact(history, sizes, level=0, settings=settings)  # blank everything allowed
    order = blanked_ids(result.messages)
    assert order == ["c0", "c2", "c3", "c5"]  # bash and grep blanked, read_file (c1, c4) protected
    assert result.messages[1].parts[0].content == ELIDED  # retry feedback (priority 0) too
    partial = microcompact(history, sizes, level=sum(sizes) - 1000, settings=settings)
    assert blanked_ids(partial.messages) == ["c0", "c3"]  # priority -1 (bash) goes first


def test_keep_recent_window_is_untouched() -> None:
    history = history_of(6)
    sizes = estimate_messages(history)
    keep = sum(sizes[-5:])  # the last two rounds plus the final answer, exactly
    start = recent_start(sizes, keep)
    assert start == len(history) - 5
    result = microcompact(history, sizes, level=0, settings=Settings(micro_keep_recent_tokens=keep))
    assert result.messages[start:] == history[start:]
    assert blanked_ids(result.messages) == ["c0", "c1", "c2", "c3"]
    assert recent_start(sizes, keep + 1) == start - 1  # one more token reaches into the previous message


def test_native_and_retried_returns() -> None:
    native = ModelResponse(parts=[NativeToolReturnPart("web_search", BIG, tool_call_id="n1")])
    retried = ModelRequest(
        parts=[
            ToolReturnPart("bash", BIG, tool_call_id="c9", outcome="retried", retry=RetryInfo("model_retry"))
        ]
    )
    history = [
        ModelRequest(parts=[UserPromptPart("go")]),
        native,
        retried,
        ModelResponse(parts=[TextPart("x")]),
    ]
    result = microcompact(history, estimate_messages(history), level=0, settings=NO_KEEP)
    assert result.messages[1] is native
    assert result.messages[2].parts[0].content == ELIDED and result.messages[2].parts[0].outcome == "retried"


def test_sizes_must_match() -> None:
    with pytest.raises(ValueError, match="sizes has 1 entries for 2 messages"):
        microcompact(history_of(0), [1], level=0, settings=NO_KEEP)


@hsettings(max_examples=40, deadline=None)
@given(
    agent_histories(max_turns=4),
    st.floats(0, 1.2),
    st.integers(0, 3000),
    st.lists(st.sampled_from(TOOLS), max_size=2),
    st.dictionaries(st.sampled_from(TOOLS), st.integers(-3, 3)),
)
def test_micro_invariants(history: list, fraction: float, keep: int, protected: list, priority: dict) -> None:
    sizes = estimate_messages(history)
    level = int(sum(sizes) * fraction)
    settings = Settings(
        micro_keep_recent_tokens=keep, protected_tools=tuple(protected), tool_priority=priority
    )
    result = microcompact(history, sizes, level=level, settings=settings)
    # Nothing removed: same messages, same part kinds; only blankable content changed.
    assert len(result.messages) == len(history)
    start = recent_start(sizes, keep)
    for i, (old, new) in enumerate(zip(history, result.messages, strict=True)):
        assert [type(p) for p in old.parts] == [type(p) for p in new.parts]
        for p, q in zip(old.parts, new.parts, strict=True):
            if p is not q and p != q:
                assert q.content == ELIDED and i < start
                assert isinstance(q, RetryFeedbackPart) or q.tool_name not in protected
    assert result.sizes == estimate_messages(result.messages)
    # Stops under the level, or ran out of candidates.
    if result.tokens_after > level:
        again = microcompact(result.messages, result.sizes, level=0, settings=settings)
        assert again.blanked == 0
    # Idempotent.
    twice = microcompact(result.messages, result.sizes, level=level, settings=settings)
    assert twice.messages == result.messages and twice.sizes == result.sizes and twice.blanked == 0


def test_work_is_linear_two_part_estimates_per_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear by construction, counted rather than timed: each blank re-estimates its part twice (old
    and new) and nothing else is tokenized, so doubling the tool results doubles the work."""
    from sessionstore.compaction import micro

    calls: list[object] = []
    real = micro.estimate_part
    monkeypatch.setattr(micro, "estimate_part", lambda part: calls.append(part) or real(part))
    work = {}
    for n in (200, 400):
        history = history_of(n)
        sizes = estimate_messages(history)
        calls.clear()
        result = microcompact(history, sizes, level=0, settings=NO_KEEP)
        assert result.blanked == n and len(calls) == 2 * n
        work[n] = len(calls)
    assert work[400] == 2 * work[200]


# -- across turns: MicroState ----------------------------------------------------------------------


def _cuts(history: list, data: st.DataObject) -> list[int]:
    """Turn boundaries: the history split into 1..4 appends."""
    points = data.draw(st.lists(st.integers(1, max(len(history) - 1, 1)), max_size=3, unique=True))
    return [0, *sorted(p for p in points if p < len(history)), len(history)]


@hsettings(max_examples=40, deadline=None)
@given(agent_histories(max_turns=4), st.floats(0, 1.2), st.integers(0, 3000), st.data())
def test_incremental_equals_from_scratch_with_one_priority(
    history: list, fraction: float, keep: int, data: st.DataObject
) -> None:
    sizes = estimate_messages(history)
    level = int(sum(sizes) * fraction)
    settings = Settings(micro_keep_recent_tokens=keep)
    state = MicroState(settings)
    cuts = _cuts(history, data)
    for a, b in pairwise(cuts):
        state.extend(history[a:b], sizes[a:b])
        state.apply(level)
        scratch = microcompact(history[:b], sizes[:b], level=level, settings=settings)
        got = state.result()
        assert got.messages == scratch.messages and got.sizes == scratch.sizes
        assert (got.tokens_before, got.tokens_after) == (scratch.tokens_before, scratch.tokens_after)
    assert state.view() == microcompact(history, sizes, level=level, settings=settings).messages


@hsettings(max_examples=40, deadline=None)
@given(
    agent_histories(max_turns=4),
    st.lists(st.floats(0, 1.2), min_size=4, max_size=4),
    st.integers(0, 3000),
    st.lists(st.sampled_from(TOOLS), max_size=2),
    st.dictionaries(st.sampled_from(TOOLS), st.integers(-3, 3)),
    st.data(),
)
def test_incremental_blanks_stand_and_each_view_is_valid(
    history: list, fractions: list, keep: int, protected: list, priority: dict, data: st.DataObject
) -> None:
    sizes = estimate_messages(history)
    settings = Settings(
        micro_keep_recent_tokens=keep, protected_tools=tuple(protected), tool_priority=priority
    )
    state = MicroState(settings)
    before: set[tuple[int, int]] = set()
    cuts = _cuts(history, data)
    for turn, (a, b) in enumerate(pairwise(cuts)):
        level = int(sum(sizes[:b]) * fractions[turn])  # the aim moves with the measurement's bias
        state.extend(history[a:b], sizes[a:b])
        state.apply(level)
        view = state.result()
        start = recent_start(sizes[:b], keep)
        now = set()
        for i, (old, new) in enumerate(zip(history[:b], view.messages, strict=True)):
            assert [type(p) for p in old.parts] == [type(p) for p in new.parts]
            for j, (p, q) in enumerate(zip(old.parts, new.parts, strict=True)):
                if p is not q and p != q:
                    assert q.content == ELIDED and i < start
                    assert isinstance(q, RetryFeedbackPart) or q.tool_name not in protected
                    now.add((i, j))
        assert before <= now  # a decision for an old message stands
        before = now
        assert view.sizes == estimate_messages(view.messages)
        assert view.tokens_before == sum(sizes[:b]) and view.tokens_after == sum(view.sizes)
        if view.tokens_after > level:  # not under the level: then nothing eligible is left
            assert microcompact(view.messages, view.sizes, level=0, settings=settings).blanked == 0


def test_incremental_work_is_the_new_turn_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a turn, the state looks only at the new messages and the parts leaving the window."""
    from sessionstore.compaction import micro

    history = history_of(200)
    sizes = estimate_messages(history)
    state = MicroState.of(history, sizes, NO_KEEP)
    level = sum(sizes) // 2
    state.apply(level)
    blanked = state.blanked
    estimated: list[object] = []
    real = micro.estimate_part
    monkeypatch.setattr(micro, "estimate_part", lambda part: estimated.append(part) or real(part))
    for i in range(200, 210):
        turn = tool_round(i)
        state.extend(turn, estimate_messages(turn))
        assert state.apply(level) in (1, 2)  # each round's ~800 tokens need one or two blanks
        assert len(estimated) <= 2 * (state.blanked - blanked)  # two part estimates per blank, no more
    assert state.blanked > blanked and state.tokens_after <= level


def test_sizes_must_match_for_extend() -> None:
    with pytest.raises(ValueError, match="sizes has 1 entries for 2 messages"):
        MicroState(NO_KEEP).extend(tool_round(0), [5])
