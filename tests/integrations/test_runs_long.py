"""Every request of a run fits (issue 10): one run, 30 tool calls of 1-8k tokens, a 16k window.

The FunctionModel records the size of every request it receives (the project's estimator, on what it
was actually handed after pydantic-ai merged the messages), so "fits" is checked on what was sent,
not on what the capability believes it sent.
"""

from __future__ import annotations

import asyncio
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

from helpers.long_runs import LongRun, long_run_agent
from sessionstore import SessionStore, Settings
from sessionstore.compaction.events import CompactionEvent
from sessionstore.compaction.turns import last_user_request, pairs_intact
from sessionstore.integrations.runs import RunReport, SessionCapability, run_turn, run_turn_async

WINDOW = 16_000
PROMPT = "read every file under src/ and report what each one does"
SIZES = [1_000 + (i * 977) % 7_000 for i in range(30)]  # 1,000 .. 7,999 tokens, all different


def store_at(path: Path) -> SessionStore:
    return SessionStore.open(path, settings=Settings(context_window_tokens=WINDOW))


def check_run(store: SessionStore, name: str, body: LongRun, report: RunReport) -> None:
    s = store.session(name)
    assert len(body.sent) == len(body.output_tokens) + 1, "one request per tool call, plus the answer"
    assert max(body.sent) <= WINDOW, f"a request of {max(body.sent)} tokens was sent to a {WINDOW} window"
    assert len(report.requests) == len(body.sent) and report.peak <= WINDOW
    for received in body.received:
        assert pairs_intact(received), "every request sent keeps each tool call with its return"
        request = received[last_user_request(received) or 0]
        assert any(isinstance(p, UserPromptPart) and p.content == PROMPT for p in request.parts)
    assert report.checkpoints > 0, "the loop crossed the full level: it checkpointed mid-run"
    history = s.history
    assert pairs_intact(history)
    last = history[last_user_request(history) or 0]
    assert isinstance(last, ModelRequest) and last.parts[-1].content == PROMPT, "the request stays verbatim"
    assert history[-1].parts[-1].content == f"read {len(body.output_tokens)} files", "the answer is stored"
    assert SessionStore.open(store.root).session(name).history == history, "replays from disk equal"
    check_lines(s, len(body.sent), report.peak)


def check_lines(s: object, requests: int, peak: int) -> None:
    """The run's turn lines say what `session log` needs: run, step, requests, peak, mid_run."""
    commits = s.log()[::-1]  # type: ignore[attr-defined]
    run_id = commits[-1].extra["run"]
    lines = [c for c in commits if c.kind == "turn" and c.extra.get("run") == run_id]
    assert [c.extra["step"] for c in lines] == list(range(1, len(lines) + 1))
    assert sum(c.extra["requests"] for c in lines) == requests
    assert max(c.extra["peak"] for c in lines if "peak" in c.extra) == peak
    assert [c.extra.get("mid_run", False) for c in lines] == [True] * (len(lines) - 1) + [False]
    for older, newer in pairwise(commits):
        if newer.kind == "compaction" and older.extra.get("run") == run_id and newer is not commits[-1]:
            assert older.extra.get("mid_run"), "a compaction inside the run follows a mid-run line"


def test_thirty_big_tool_calls_through_run_turn(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    body, report = LongRun(SIZES), RunReport()
    events: list[CompactionEvent] = []
    s = store.session("sync")
    s.subscribe(events.append)
    run_turn(s, long_run_agent(body), PROMPT, report=report)
    check_run(store, "sync", body, report)
    assert {e.tier for e in events} >= {2}, "each mid-run checkpoint emitted its event"
    # Without protection the same run would have sent the whole loop: several times the window.
    assert sum(SIZES) > 5 * WINDOW


def test_thirty_big_tool_calls_through_run_turn_async(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    body, report = LongRun(SIZES), RunReport()
    asyncio.run(run_turn_async(store.session("async"), long_run_agent(body), PROMPT, report=report))
    check_run(store, "async", body, report)


def test_thirty_big_tool_calls_through_the_capability(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    s = store.session("cap")
    run_turn(s, long_run_agent(LongRun([500])), "warm up")  # a session with history already
    body = LongRun(SIZES)
    capability = SessionCapability(s)
    agent = long_run_agent(body)
    result = agent.run_sync(PROMPT, message_history=s.history, capabilities=[capability])
    check_run(store, "cap", body, capability.report)
    # The run's own history stays whole (only what is sent shrinks); nothing was committed twice.
    assert len(result.new_messages()) == 2 * len(SIZES) + 2
    stored_returns = [p for m in s.history for p in m.parts if isinstance(p, ToolReturnPart)]
    ids = [p.tool_call_id for p in stored_returns]
    assert len(ids) == len(set(ids)), "no tool return is stored twice"


@hsettings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.integers(50, 9_000), min_size=1, max_size=12),
    st.integers(200, 2_000),
)
def test_any_loop_fits(tmp_path_factory: pytest.TempPathFactory, outputs: list[int], reasoning: int) -> None:
    store = store_at(tmp_path_factory.mktemp("any"))
    body, report = LongRun(outputs, reasoning_tokens=reasoning), RunReport()
    s = store.session("any")
    run_turn(s, long_run_agent(body), PROMPT, report=report)
    assert max(body.sent) <= WINDOW and all(pairs_intact(m) for m in body.received)
    assert len(body.sent) == len(outputs) + 1
    assert SessionStore.open(store.root).session("any").history == s.history
    assert s.history[last_user_request(s.history) or 0].parts[-1].content == PROMPT


def test_a_tool_output_bigger_than_the_window_is_never_sent_whole(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    body, report = LongRun([2_000, 30_000, 1_000]), RunReport()
    s = store.session("huge")
    run_turn(s, long_run_agent(body), PROMPT, report=report)
    assert max(body.sent) <= WINDOW and report.checkpoints >= 1
    assert [r.tier for r in report.requests][2] == 2, "the request after the 30k output checkpointed first"
    assert pairs_intact(s.history) and s.history[-1].parts[-1].content == "read 3 files"


def test_stored_messages_are_never_re_tokenized_by_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16 item 0: pydantic-ai merges [summary, user request] into one request before sending;
    the run measures from the stored sizes, so a reopened session's messages are not tokenized again."""
    from sessionstore.accounting import tokens

    store = store_at(tmp_path)
    s = store.session("big")
    for i in range(8):
        run_turn(s, long_run_agent(LongRun([900, 700], reasoning_tokens=300)), f"task {i}")
    assert s.log()[-1].kind == "turn" and any(c.kind == "compaction" for c in s.log()), "merge case present"
    s = store_at(tmp_path).session("big")  # reopened: sizes come from the log
    before = s.measurement
    counted: list[object] = []
    in_model = [False]  # the model's own count of what it received is not the run's work
    real = tokens.estimate_part

    def counting(part: object) -> int:
        if not in_model[0]:
            counted.append(part)
        return real(part)

    monkeypatch.setattr(tokens, "estimate_part", counting)

    tools: list[int] = []

    class Model(LongRun):
        def __call__(self, messages: list, info: object) -> object:  # type: ignore[override]
            in_model[0] = True
            tools.append(tokens.estimate_tool_definitions(info.function_tools))  # type: ignore[attr-defined]
            try:
                return super().__call__(messages, info)  # type: ignore[arg-type]
            finally:
                in_model[0] = False

    report = RunReport()
    result = run_turn(s, long_run_agent(Model([], reasoning_tokens=300)), "one more", report=report)
    new_parts = sum(len(m.parts) for m in result.new_messages())
    assert len(counted) <= 2 * new_parts, "only the run's own messages are tokenized (view + commit)"
    prompt = tokens.estimate_message(result.new_messages()[0])
    measured = before.measured_tokens + prompt if before.measured_tokens is not None else 0
    expected = max(measured, before.local + prompt + tools[0])  # DESIGN §6: the larger figure decides
    assert report.requests[0].measured == expected, "the measurement reuses the stored sizes exactly"


def test_a_failed_mid_run_summary_still_sends_nothing_over_the_window(tmp_path: Path) -> None:
    """The summary model is down: no checkpoint can be written, so tier 3 shapes what is sent
    (request only) and the log keeps every step whole."""
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def down(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("summary model unavailable")

    store = store_at(tmp_path)
    store.summarizer = FunctionModel(down)
    body, report = LongRun(SIZES[:8]), RunReport()
    s = store.session("down")
    with pytest.warns(UserWarning) as caught:
        run_turn(s, long_run_agent(body), PROMPT, report=report)
    said = [str(w.message) for w in caught]
    assert any("mid-run compaction failed" in m for m in said), said
    assert any("compaction failed, history kept" in m for m in said), said  # and after the turn
    assert max(body.sent) <= WINDOW and all(pairs_intact(m) for m in body.received)
    assert report.checkpoints == 0 and 3 in {r.tier for r in report.requests}
    assert not any(c.kind == "compaction" for c in s.log()), "nothing was summarized"
    assert len(s.history) == 2 * 8 + 2, "every step is stored whole"
