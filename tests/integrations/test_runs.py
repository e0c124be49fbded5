"""Running pydantic-ai agents on a session: run_turn, run_turn_async and SessionCapability."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from sessionstore import SessionStore, Settings
from sessionstore.accounting import tokens
from sessionstore.compaction.micro import ELIDED
from sessionstore.compaction.turns import pairs_intact
from sessionstore.integrations.runs import RunReport, SessionCapability, run_turn, run_turn_async
from sessionstore.summary.skeleton import SKELETON, validate_summary


class Script:
    """A FunctionModel body: one tool call per user prompt, then an answer; usage set per request."""

    def __init__(self, input_tokens: int = 100) -> None:
        self.input_tokens = input_tokens
        self.sent: list[list[ModelMessage]] = []
        self.fail = False

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if self.fail:
            raise RuntimeError("provider down")
        self.sent.append(messages)
        usage = RequestUsage(input_tokens=self.input_tokens, output_tokens=10)
        if any(p.part_kind == "user-prompt" for p in messages[-1].parts):
            call = ToolCallPart(tool_name="read_file", args={"path": "a.py"})
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart("read it")], usage=usage)


def make_agent(script: Script) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(script))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return "line\n" * 300

    return agent


def small_store(path: Path) -> SessionStore:
    settings = Settings(context_window_tokens=5_000, micro_keep_recent_tokens=400, keep_recent_tokens=1_000)
    return SessionStore.open(path, settings=settings)


def test_run_turn_persists_only_new_messages(tmp_path: Path) -> None:
    store = small_store(tmp_path)
    script = Script()
    agent = make_agent(script)
    s = store.session("s")
    first = run_turn(s, agent, "read a.py")
    assert s.persisted_count == len(first.new_messages()) == 4
    second = run_turn(s, agent, "again")
    assert s.persisted_count == 8
    assert s.history[4:] == second.new_messages()
    assert store.session("s").history == s.history
    # Each step is its own line (durable mid-run); the lines of a run add up to the run's usage.
    lines = [c for c in s.log() if c.seq > 2]
    assert [c.count for c in lines] == [8, 7]  # newest first
    total: dict[str, int] = {}
    for c in lines:
        for key, value in c.usage.items():
            total[key] = total.get(key, 0) + value
    assert total == {"input_tokens": 200, "output_tokens": 20, "requests": 2, "tool_calls": 1}


def test_measured_prefix_comes_from_the_newest_response(tmp_path: Path) -> None:
    store = small_store(tmp_path)
    s = store.session("s")
    run_turn(s, make_agent(Script(input_tokens=1_234)), "hi")
    m = s.measurement
    assert m.measured and m.tokens == 1_234 + 10
    assert store.session("s").measurement.tokens == m.tokens, "a reopened session measures the same"


def test_requests_carry_the_micro_view_but_history_stays_whole(tmp_path: Path) -> None:
    settings = Settings(context_window_tokens=6_000, micro_keep_recent_tokens=400, keep_recent_tokens=1_000)
    store = SessionStore.open(tmp_path, settings=settings)
    # Over micro (3,600), under full (4,800): a flat 3,200 reported for a ~40-token first request
    # calibrates the model at the 2x cap, so what follows a measurement counts double.
    script = Script(input_tokens=3_200)
    agent = make_agent(script)
    s = store.session("s")
    for i in range(4):
        run_turn(s, agent, f"turn {i}")
    sent_parts = [p for sent in script.sent for m in sent for p in m.parts]
    assert any(isinstance(p, ToolReturnPart) and p.content == ELIDED for p in sent_parts)
    stored = [p for m in s.history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert stored and all(p.content != ELIDED for p in stored)
    turns = [c for c in s.log() if c.kind == "turn"]
    assert any(c.extra.get("elided", 0) > 0 for c in turns), "a turn records what its view elided"


def test_each_message_of_a_run_is_estimated_once_across_its_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every request of a run resends the run's earlier messages; the view once re-tokenized them all
    # on every request (quadratic in the run's tool rounds).
    rounds = 12

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(p.part_kind == "tool-return" for m in messages for p in m.parts)
        if done < rounds:
            return ModelResponse(parts=[ToolCallPart(tool_name="read_file", args={"path": f"{done}.py"})])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return "line\n" * 50

    counted: list[object] = []
    real = tokens.estimate_part
    monkeypatch.setattr(tokens, "estimate_part", lambda part: counted.append(part) or real(part))
    s = small_store(tmp_path).session("s")
    run_turn(s, agent, "go")
    assert s.persisted_count == 2 * rounds + 2
    parts = sum(len(m.parts) for m in s.history)
    # Once each: the requests' view counts what it sends, and the commits reuse those counts (only
    # the run's last response, never sent, is counted when it is committed).
    assert len(counted) <= parts
    assert s.sizes == tokens.estimate_messages(s.history)  # the reused counts are the right ones


def test_failed_run_persists_nothing_and_keeps_the_measurement(tmp_path: Path) -> None:
    store = small_store(tmp_path)
    script = Script(input_tokens=777)
    agent = make_agent(script)
    s = store.session("s")
    run_turn(s, agent, "ok")
    before = (s.persisted_count, s.measurement)
    script.fail = True
    with pytest.raises(RuntimeError, match="provider down"):
        run_turn(s, agent, "boom")
    assert (s.persisted_count, s.measurement) == before
    assert store.session("s").persisted_count == before[0]


def test_async_turn_and_capability_used_directly(tmp_path: Path) -> None:
    store = small_store(tmp_path)
    agent = make_agent(Script())
    s = store.session("s")

    async def go() -> None:
        await run_turn_async(s, agent, "one")
        await agent.run("two", message_history=s.history, capabilities=[SessionCapability(s)])

    asyncio.run(go())
    assert s.persisted_count == 8
    assert store.session("s").history == s.history


# -- a real model client against a local OpenAI-compatible server --------------------------------------


@pytest.fixture
def openai_server() -> Iterator[tuple[str, list[dict]]]:
    requests: list[dict] = []
    summary = SKELETON.replace("## Goal\n", "## Goal\nShip the fix for expired tokens.\n", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": summary},
                    }
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", requests
    server.shutdown()


def test_summary_through_an_openai_compatible_client(
    tmp_path: Path, openai_server: tuple[str, list[dict]]
) -> None:
    pytest.importorskip("openai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    url, requests = openai_server
    store = small_store(tmp_path)
    store.summarizer = OpenAIChatModel(
        "local-summarizer", provider=OpenAIProvider(base_url=url, api_key="test")
    )
    s = store.session("s")
    agent = make_agent(Script())
    for i in range(3):
        run_turn(s, agent, f"turn {i}")
    commit = s.compact()
    text = s.history[0].parts[-1].content
    assert commit.tier == 2 and validate_summary(text) == []
    assert "Ship the fix for expired tokens." in text
    assert len(requests) == 1 and requests[0]["model"] == "local-summarizer"
    sent = json.dumps(requests[0]["messages"])
    assert "turn 0" in sent, "the transcript to summarize was sent to the model"


# -- another writer: no paid call on a stale session, and a run's work is never dropped ----------------


def test_stale_session_makes_no_model_call(tmp_path: Path) -> None:
    from sessionstore.errors import StaleSessionError

    store = small_store(tmp_path)
    script = Script()
    s = store.session("s")
    run_turn(s, make_agent(script), "one")
    store.session("s").append(s.history[:1])  # another writer moves the head
    calls = len(script.sent)
    with pytest.raises(StaleSessionError, match="reload"):
        run_turn(s, make_agent(script), "two")
    assert len(script.sent) == calls, "no model request was made"
    s.reload()
    run_turn(s, make_agent(script), "two")
    assert s.persisted_count == 4 + 1 + 4


@pytest.mark.parametrize("when", ["mid-run", "at the end"])
def test_head_moved_during_the_run_saves_the_run_as_a_fork(tmp_path: Path, when: str) -> None:
    from sessionstore.errors import StaleSessionError

    store = small_store(tmp_path)
    s = store.session("s")
    run_turn(s, make_agent(Script()), "first")
    other = store.session("s")
    rounds = 3
    strike = 2 if when == "mid-run" else rounds + 1

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(p.part_kind == "tool-return" for m in messages for p in m.parts) - 1  # the first run's
        if n + 1 == strike:
            other.reload()
            other.append(other.history[:1])  # another writer, while this run is in flight
        if n < rounds:
            return ModelResponse(parts=[ToolCallPart(tool_name="read_file", args={"path": f"{n}.py"})])
        return ModelResponse(parts=[TextPart("the answer")])

    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return f"contents of {path}"

    with pytest.raises(StaleSessionError, match="saved as session 's-run1'"):
        run_turn(s, agent, "second")
    fork = store.session("s-run1")
    texts = [p.content for m in fork.history for p in m.parts if p.part_kind in ("text", "user-prompt")]
    assert "second" in texts, "the run's prompt is kept"
    if when == "at the end":
        assert texts[-1] == "the answer", "the run's answer is kept, in the fork"
    assert pairs_intact(fork.history)
    assert store.session("s").persisted_count == other.persisted_count, "the other writer's work stands"


def test_the_capability_refuses_a_history_that_is_not_the_sessions(tmp_path: Path) -> None:
    from sessionstore.errors import SessionStoreError

    store = small_store(tmp_path)
    script = Script()
    s = store.session("s")
    run_turn(s, make_agent(script), "first")
    other = store.session("other")
    run_turn(other, make_agent(script), "elsewhere")
    calls = len(script.sent)
    for wrong in (None, other.history, s.history[:-1]):
        with pytest.raises(SessionStoreError, match=r"message_history=session\.history") as err:
            make_agent(script).run_sync("x", message_history=wrong, capabilities=[SessionCapability(s)])
        assert "session.checkout(REV)" in str(err.value) and "\n" not in str(err.value)
    assert len(script.sent) == calls and s.persisted_count == 4, "no model call, nothing written"
    # An empty session's history is a prefix of any: a history given to it is stored with the run.
    fresh = store.session("fresh")
    make_agent(script).run_sync("x", message_history=s.history, capabilities=[SessionCapability(fresh)])
    assert fresh.history[:4] == s.history and fresh.persisted_count == 8


# -- calibration: learned from each response, kept with the session, scaling what nothing measured ------


def scaled_agent(ratio: float, sent: list[int]) -> Agent[None, str]:
    """A provider that counts `ratio` times what the local estimate counts (messages + tools)."""
    from sessionstore.accounting.tokens import estimate_tool_definitions

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        local = sum(tokens.estimate_messages(messages)) + estimate_tool_definitions(info.function_tools)
        sent.append(local)
        usage = RequestUsage(input_tokens=round(local * ratio), output_tokens=5)
        if not any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.py"})], usage=usage)
        return ModelResponse(parts=[TextPart("read it")], usage=usage)

    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def read_file(path: str) -> str:
        return "line of the file\n" * 200

    return agent


def test_the_calibration_is_learned_kept_and_scales_what_nothing_measured(tmp_path: Path) -> None:
    from sessionstore.porcelain.session.gauge import commit_gauge, format_gauge

    store = SessionStore.open(tmp_path, settings=Settings(context_window_tokens=200_000))
    s = store.session("s")
    sent: list[int] = []
    report = RunReport()
    run_turn(s, scaled_agent(1.3, sent), "read a.py", report=report)
    model = s.model_key
    assert model and abs(s.calibration.factor(model) - 1.3) < 0.01  # type: ignore[operator]
    assert [r.local for r in report.requests] == sent, "calibrated against what the model received"
    second = report.requests[1]  # the first response taught the factor: the next request is scaled
    assert second.tokens >= math.ceil(1.3 * second.local) - 1 and report.peak_figure in (
        "measured",
        "estimate",
    )
    reopened = SessionStore.open(tmp_path).session("s")
    assert (
        reopened.calibration == s.calibration
        and reopened.head.extra["calibration"] == s.calibration.to_field()
    )
    # After a compaction nothing is measured: the estimate, scaled by the model's factor, decides.
    s.compact()
    m = s.measurement
    assert (
        not m.measured
        and m.factor == s.calibration.factor(model)
        and m.tokens == math.ceil(s.tokens * m.factor)
    )
    gauge = commit_gauge(s.head, store.settings)
    assert (
        gauge.used == m.tokens
        and gauge.figure == "estimate"
        and " estimate · " in format_gauge(gauge, color=False)
    )


def test_a_model_that_reports_less_never_lets_more_through(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path, settings=Settings(context_window_tokens=200_000))
    s = store.session("s")
    report = RunReport()
    run_turn(s, scaled_agent(0.3, []), "read a.py", report=report)  # FunctionModel: not warned about
    assert s.decision_factor == 1.0 and s.measurement.figure == "estimate"
    assert s.measurement.tokens == s.tokens  # the estimate decides, not the provider's low count
    assert all(r.figure == "estimate" and r.tokens >= r.local for r in report.requests)
