"""Per-request protection (integrations/protect.py): what one model request of a run may send.

Real sessions in real stores: the stored history is committed first, then `shape_request` decides what
the next request sends. What a caller (the capability in runs.py) relies on: the measure is the
session's measurement plus the pending estimates, nothing is rebuilt when nothing applies, tier 1 and
tier 3 change only what is sent (never the stored history), no request is over the resolved window,
and with compaction disabled an over-window request is refused with `CompactionError` instead.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from helpers.agent_histories import agent_histories
from sessionstore import SessionStore, Settings
from sessionstore.accounting.tokens import estimate_message
from sessionstore.compaction.events import ContextMicrocompacted, ContextUltimateCompacted
from sessionstore.compaction.micro import ELIDED
from sessionstore.compaction.turns import pairs_intact
from sessionstore.compaction.ultimate import MIN_ULTIMATE_BUDGET
from sessionstore.errors import CompactionError
from sessionstore.integrations.protect import Shaped, measure_request, shape_request
from sessionstore.integrations.runs import RunReport, run_turn
from sessionstore.porcelain.session import cascade
from sessionstore.porcelain.session.session import Session

BIG = "line of a large file\n" * 400  # ~2,000 tokens of tool output


def tool_round(i: int, output: str, tool: str = "read_file") -> list[ModelMessage]:
    call = ToolCallPart(tool, {"path": f"f{i}.py"}, tool_call_id=f"c{i}")
    return [
        ModelResponse(parts=[call]),
        ModelRequest(parts=[ToolReturnPart(tool, output, tool_call_id=f"c{i}")]),
    ]


def history_with_rounds(rounds: int, *, usage: int | None = None) -> list[ModelMessage]:
    """A user turn with `rounds` big tool rounds, then an answer (carrying `usage` input tokens)."""
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("read every file and report")])]
    for i in range(rounds):
        out += tool_round(i, BIG)
    answer = RequestUsage(input_tokens=usage, output_tokens=10) if usage else RequestUsage()
    out.append(ModelResponse(parts=[TextPart("all read")], usage=answer))
    return out


def open_session(path: Path, history: list[ModelMessage], **overrides: object) -> Session:
    store = SessionStore.open(path, settings=Settings(**overrides))  # type: ignore[arg-type]
    s = store.session("s")
    if history:
        s.append(history, compact=False)
    return s


def prompt(text: str = "and now the tests") -> tuple[list[ModelMessage], list[int]]:
    pending: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(text)])]
    return pending, [estimate_message(m) for m in pending]


def shape(
    s: Session, pending: Sequence[ModelMessage], sizes: Sequence[int], *, rebase: bool = False
) -> Shaped:
    window, lv = cascade.session_levels(s)
    return shape_request(s, pending, sizes, window=window, lv=lv, rebase=rebase)


def stored_is_unchanged(s: Session, before: list[ModelMessage], head: str) -> bool:
    reopened = SessionStore.open(s.store.root, settings=s.store.settings).session(s.name)
    return s.history == before and s.head_id == head and reopened.history == before


def elided_count(messages: Sequence[ModelMessage]) -> int:
    return sum(1 for m in messages for p in m.parts if isinstance(p, ToolReturnPart) and p.content == ELIDED)


# -- measure_request --------------------------------------------------------------------------------


def test_the_measure_is_the_sessions_measurement_plus_the_pending_estimates(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(1))  # no usage: the local estimate decides, no excess
    r = measure_request(s, [7, 5])
    assert (r.tokens, r.local, r.excess, r.measured, r.figure) == (
        s.tokens + 12,
        s.tokens + 12,
        0,
        None,
        "estimate",
    )
    assert measure_request(s, []).tokens == s.tokens


def test_the_larger_figure_decides_and_only_a_measured_excess_is_kept(tmp_path: Path) -> None:
    for provider in (5_000, 300):  # the provider counted more than we did, then less
        s = open_session(tmp_path / str(provider), history_with_rounds(1, usage=provider))
        m = s.measurement
        assert m.measured and m.measured_tokens == provider + 10
        assert m.tokens == max(provider + 10, s.tokens), "a usage below the estimate never lowers it"
        r = measure_request(s, [9])
        assert r.measured == provider + 10 + 9
        assert r.tokens == max(provider + 19, s.tokens + 9)
        assert r.excess == max(0, provider + 19 - (s.tokens + 9))
        assert r.figure == ("measured" if provider > s.tokens else "estimate")


# -- under every level: nothing applied ------------------------------------------------------------


def test_under_the_levels_nothing_is_rebuilt_unless_the_run_is_stale(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(2))  # ~4,000 tokens in a 1M window
    pending, sizes = prompt()
    same = shape(s, pending, sizes)
    total = s.tokens + sum(sizes)
    assert same == Shaped(None, total, total, 0, [], total, "estimate")
    assert s.sent_elided == (s.head_id, 0)
    rebuilt = shape(s, pending, sizes, rebase=True)  # a mid-run checkpoint made the run's list stale
    assert rebuilt.tier == 0 and rebuilt.events == []
    assert rebuilt.messages == [*s.history, *pending] and rebuilt.messages[-1] is pending[0]
    assert rebuilt.tokens == rebuilt.measured == s.tokens + sum(sizes)


# -- tier 1 ---------------------------------------------------------------------------------------


def test_over_micro_old_tool_output_is_blanked_in_what_is_sent_only(tmp_path: Path) -> None:
    history = history_with_rounds(3)
    s = open_session(tmp_path, history, context_window_tokens=11_000, micro_keep_recent_tokens=400)
    before, head = s.history, s.head_id
    window, lv = cascade.session_levels(s)
    pending, sizes = prompt()
    measured = s.tokens + sum(sizes)
    assert lv.micro < measured <= lv.full  # micro fires, full does not
    shaped = shape_request(s, pending, sizes, window=window, lv=lv, rebase=False)
    assert shaped.tier == 1 and shaped.measured == measured
    assert shaped.messages is not None and shaped.messages[-1] is pending[0]
    assert len(shaped.messages) == len(history) + 1  # tier 1 never removes a message
    assert elided_count(shaped.messages) >= 1 and elided_count(s.history) == 0
    assert pairs_intact(shaped.messages)
    sent = sum(estimate_message(m) for m in shaped.messages)
    assert shaped.tokens == sent < measured
    [event] = shaped.events
    assert isinstance(event, ContextMicrocompacted)
    assert (event.tokens_before, event.tokens_after) == (measured, shaped.tokens)
    assert event.messages_before == event.messages_after == len(shaped.messages)
    assert stored_is_unchanged(s, before, head)
    # The response to this request measured the blanked view: the next commit records what was elided.
    s.append([*pending, ModelResponse(parts=[TextPart("done")])], compact=False)
    assert s.head is not None and s.head.extra["elided"] == measured - shaped.tokens


def test_over_micro_with_nothing_to_blank_sends_the_same_messages_at_tier_0(tmp_path: Path) -> None:
    history = history_with_rounds(3)
    s = open_session(tmp_path, history, context_window_tokens=11_000, protected_tools=["read_file"])
    pending, sizes = prompt()
    shaped = shape(s, pending, sizes)
    assert shaped.tier == 0 and shaped.events == []
    assert shaped.messages == [*history, *pending]
    assert shaped.tokens == shaped.measured == s.tokens + sum(sizes)
    assert s.sent_elided == (s.head_id, 0)


# -- tier 3 ---------------------------------------------------------------------------------------


def test_over_full_tier_3_sends_a_history_within_the_full_level(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(4), context_window_tokens=6_000)
    before, head = s.history, s.head_id
    window, lv = cascade.session_levels(s)
    pending, sizes = prompt("the last request must survive")
    shaped = shape_request(s, pending, sizes, window=window, lv=lv, rebase=False)
    assert shaped.measured == s.tokens + sum(sizes) > window
    assert shaped.tier == 3 and shaped.messages is not None
    assert shaped.tokens == sum(estimate_message(m) for m in shaped.messages) <= lv.full
    assert pairs_intact(shaped.messages)
    assert shaped.messages[-1].parts[0].content == "the last request must survive"  # type: ignore[union-attr]
    assert isinstance(shaped.events[-1], ContextUltimateCompacted)
    assert shaped.events[-1].tokens_before == shaped.measured
    assert shaped.events[-1].tokens_after == shaped.tokens
    assert shaped.events[-1].messages_before == len(before) + 1
    assert s.sent_elided == (head, shaped.measured - shaped.tokens)
    assert stored_is_unchanged(s, before, head)


def test_a_positive_bias_is_left_out_of_the_budget_and_added_to_the_sent_measure(tmp_path: Path) -> None:
    local = sum(estimate_message(m) for m in history_with_rounds(4))
    s = open_session(tmp_path, history_with_rounds(4, usage=local + 1_000), context_window_tokens=6_000)
    window, lv = cascade.session_levels(s)
    pending, sizes = prompt()
    r = measure_request(s, sizes)
    assert r.excess > 900
    shaped = shape_request(s, pending, sizes, window=window, lv=lv, rebase=False)
    assert shaped.tier == 3 and shaped.messages is not None
    sent_local = sum(estimate_message(m) for m in shaped.messages)
    assert shaped.tokens == sent_local + r.excess <= lv.full  # the provider's extra is budgeted for
    assert shaped.measured == r.tokens and shaped.figure == "measured"


def test_a_bias_that_leaves_tier_3_no_room_is_refused_not_sent_over_the_window(tmp_path: Path) -> None:
    local = sum(estimate_message(m) for m in history_with_rounds(4))
    s = open_session(tmp_path, history_with_rounds(4, usage=local + 5_900), context_window_tokens=6_000)
    before, head = s.history, s.head_id
    pending, sizes = prompt()
    assert measure_request(s, sizes).excess > 6_000 - MIN_ULTIMATE_BUDGET  # tools, instructions: nearly full
    with pytest.raises(CompactionError) as err:
        shape(s, pending, sizes)
    line = str(err.value)
    assert "\n" not in line and "'s'" in line and "6,000-token window" in line and "nothing was sent" in line
    assert s.sent_elided is None
    assert stored_is_unchanged(s, before, head)


@pytest.mark.parametrize("window", [6_000, 11_000])
def test_with_ultimate_off_tier_3_runs_only_over_the_window(tmp_path: Path, window: int) -> None:
    s = open_session(
        tmp_path,
        history_with_rounds(4),
        context_window_tokens=window,
        ultimate_compaction_enabled=False,
        protected_tools=["read_file"],  # tier 1 cannot bring it under either level
    )
    before, head = s.history, s.head_id
    _, lv = cascade.session_levels(s)
    pending, sizes = prompt()
    shaped = shape(s, pending, sizes)
    assert shaped.measured > lv.full
    if shaped.measured > window:
        assert shaped.tier == 3 and shaped.tokens <= window
    else:  # over full, under the window: the switch holds
        assert window == 11_000 and shaped.tier == 0 and shaped.tokens == shaped.measured
    assert stored_is_unchanged(s, before, head)


# -- compaction disabled ----------------------------------------------------------------------------


def test_compaction_disabled_over_the_window_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(4), context_window_tokens=6_000, compaction_enabled=False)
    before, head = s.history, s.head_id
    pending, sizes = prompt()
    with pytest.raises(CompactionError) as err:
        shape(s, pending, sizes)
    line = str(err.value)
    assert "\n" not in line and "'s'" in line and "compaction_enabled" in line and "nothing was sent" in line
    assert s.sent_elided is None  # nothing was noted as sent
    assert stored_is_unchanged(s, before, head)


def test_compaction_disabled_under_the_window_sends_everything_unchanged(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(4), context_window_tokens=11_000, compaction_enabled=False)
    window, lv = cascade.session_levels(s)
    pending, sizes = prompt()
    shaped = shape_request(s, pending, sizes, window=window, lv=lv, rebase=False)
    assert lv.full < shaped.measured <= window  # over both levels, still nothing applies
    assert shaped == Shaped(None, shaped.measured, shaped.measured, 0, [], shaped.measured, "estimate")


# -- through a run (runs.py calls shape_request before every model request) ------------------------


def reader_agent(sent: list[list[ModelMessage]]) -> Agent[None, str]:
    """Three big reads, then an answer; records what every request sent."""

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(messages)
        if len(sent) <= 3:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"{len(sent)}.py"})])
        return ModelResponse(parts=[TextPart("read them all")])

    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return BIG

    return agent


def test_a_run_with_compaction_off_sends_its_whole_history_until_the_window(tmp_path: Path) -> None:
    sent: list[list[ModelMessage]] = []
    s = open_session(tmp_path, history_with_rounds(3), context_window_tokens=15_000, compaction_enabled=False)
    report = RunReport()
    run_turn(s, reader_agent(sent), "read three more", report=report)
    _, lv = cascade.session_levels(s)
    assert max(r.tokens for r in report.requests) > lv.full  # over both levels, under the window
    assert all(r.tier == 0 for r in report.requests)
    for messages in sent:  # every request carried every stored message, nothing blanked or dropped
        assert elided_count(messages) == 0 and len(messages) >= len(history_with_rounds(3)) + 1
    assert "compaction" not in [c.kind for c in s.log()]


def test_a_run_with_compaction_off_over_the_window_makes_no_model_call(tmp_path: Path) -> None:
    sent: list[list[ModelMessage]] = []
    s = open_session(tmp_path, history_with_rounds(4), context_window_tokens=9_000, compaction_enabled=False)
    before, head = s.history, s.head_id
    with pytest.raises(CompactionError, match="nothing was sent"):
        run_turn(s, reader_agent(sent), "one more")
    assert sent == []  # refused before the paid call
    assert stored_is_unchanged(s, before, head)


# -- for every history: the request fits, the stored history stays ---------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[ModelMessage], list[ModelMessage], int, int | None, dict]:
    """(stored, pending, window, provider input tokens or None, settings): stored ends at the newest
    response, as the capability commits it; pending is what follows (the tool returns or a new prompt)."""
    history = draw(agent_histories(max_turns=3, max_rounds=3))
    last = max((i for i, m in enumerate(history) if isinstance(m, ModelResponse)), default=-1)
    stored, pending = history[: last + 1], history[last + 1 :]
    if not pending:
        pending = [ModelRequest(parts=[UserPromptPart(draw(st.text(max_size=40)))])]
    local = sum(estimate_message(m) for m in [*stored, *pending])
    window = max(int(local * draw(st.floats(0.05, 2.0))), 400)
    provider = None
    if stored and isinstance(stored[-1], ModelResponse) and draw(st.booleans()):
        provider = max(1, int(local * draw(st.floats(0.5, 1.3))))
        stored[-1] = ModelResponse(parts=stored[-1].parts, usage=RequestUsage(input_tokens=provider))
    overrides = {
        "compaction_enabled": draw(st.booleans()),
        "ultimate_compaction_enabled": draw(st.booleans()),
        "micro_keep_recent_tokens": draw(st.sampled_from([0, 200, 4_000])),
        "protected_tools": draw(st.sampled_from([(), ("bash",), ("read_file", "grep")])),
    }
    return stored, pending, window, provider, overrides


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(cases())
def test_no_request_is_sent_over_the_window_and_the_stored_history_never_changes(case) -> None:
    stored, pending, window, _, overrides = case
    with tempfile.TemporaryDirectory() as tmp:
        s = open_session(Path(tmp), stored, context_window_tokens=window, **overrides)
        before, head = s.history, s.head_id
        resolved, lv = cascade.session_levels(s)
        assert resolved == window
        sizes = [estimate_message(m) for m in pending]
        r = measure_request(s, sizes)
        try:
            shaped = shape_request(s, pending, sizes, window=window, lv=lv, rebase=False)
        except CompactionError:  # compaction off and over the window, or an excess that leaves no room
            if overrides["compaction_enabled"]:
                assert r.excess > lv.full - MIN_ULTIMATE_BUDGET
            else:
                assert r.tokens > window
            assert stored_is_unchanged(s, before, head)
            return
        assert shaped.measured == r.tokens >= r.local, "a usage below the estimate never lowers it"
        assert shaped.tokens <= window, (shaped.tier, shaped.tokens, window, r)
        assert stored_is_unchanged(s, before, head)
        sent = shaped.messages if shaped.messages is not None else [*before, *pending]
        sent_local = sum(estimate_message(m) for m in sent)
        if shaped.tier != 3:  # tiers 0 and 1 keep every message, and what was pending stays last
            assert len(sent) == len(before) + len(pending)
            assert all(a is b for a, b in zip(sent[len(before) :], pending, strict=True))
        else:
            assert pairs_intact(sent) or not pairs_intact([*before, *pending])
        assert shaped.tokens == sent_local + r.excess  # the measured excess is kept whatever is sent
        assert (shaped.tier == 0) == (shaped.events == [])
        assert s.sent_elided == (head, r.local - sent_local)


# -- tool definitions: sent with every request, measured by no one before the first usage -----------


def many_tools_agent(sent: list[tuple[list[ModelMessage], int]], tools: int) -> Agent[None, str]:
    """One read, then an answer; `tools` tools with long descriptions. Each response carries the usage
    a provider would report: the estimate of everything it was sent, tool definitions included."""
    from sessionstore.accounting.tokens import estimate_tool_definitions, estimate_total

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        size = estimate_total(messages) + estimate_tool_definitions(
            [*info.function_tools, *info.output_tools]
        )
        sent.append((messages, size))
        usage = RequestUsage(input_tokens=size, output_tokens=5)
        if len(sent) == 1:
            return ModelResponse(parts=[ToolCallPart("tool_0", {"path": "a.py"})], usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    agent: Agent[None, str] = Agent(FunctionModel(body))
    for i in range(tools):

        def tool(path: str) -> str:
            return "contents of " + path

        tool.__doc__ = f"Tool {i}: " + "reads a file of the repository and reports what it holds. " * 30
        agent.tool_plain(name=f"tool_{i}")(tool)
    return agent


def test_a_first_request_with_many_tools_is_not_sent_over_the_window(tmp_path: Path) -> None:
    # The stored history alone is under every level; with its ~4,700 tokens of tool definitions the
    # first request (no usage measured yet) is over the window: it is compacted to fit, definitions
    # included (before, it was sent as it was: 6,800 tokens into a 6,000-token window).
    from sessionstore.accounting.tokens import estimate_total

    s = open_session(tmp_path, history_with_rounds(1), context_window_tokens=6_000)
    sent: list[tuple[list[ModelMessage], int]] = []
    report = RunReport()
    run_turn(s, many_tools_agent(sent, 12), "one more", report=report)
    window, _ = cascade.session_levels(s)
    stored = estimate_total(history_with_rounds(1)) + estimate_message(prompt("one more")[0][0])
    tools = sent[0][1] - estimate_total(sent[0][0])
    assert stored < window < stored + tools  # the messages alone fit: the definitions make it overflow
    assert all(size <= window for _, size in sent), [size for _, size in sent]
    assert report.requests[0].tokens >= sent[0][1] - 50  # the report counts the definitions too


def test_tool_definitions_count_in_the_estimate_and_not_again_in_the_measured_figure(tmp_path: Path) -> None:
    s = open_session(tmp_path, history_with_rounds(2, usage=5_000))
    assert s.measurement.measured
    with_tools, without = measure_request(s, [7], outside=900), measure_request(s, [7])
    assert with_tools.measured == without.measured == 5_017  # the usage holds them already
    assert with_tools.tokens == max(5_017, s.tokens + 7 + 900)  # the estimate of the request has them
    fresh = open_session(tmp_path / "fresh", history_with_rounds(2))
    assert not fresh.measurement.measured
    r = measure_request(fresh, [7], outside=900)
    assert (r.tokens, r.measured, r.outside) == (fresh.tokens + 7 + 900, None, 900)
