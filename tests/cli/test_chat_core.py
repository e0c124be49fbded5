"""`Chat` without a terminal: the footer follows every model request of a run, not only the turn's end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from sessionstore.cli.chat_core import Chat
from sessionstore.porcelain.session.gauge import format_gauge, gauge
from sessionstore.porcelain.store import SessionStore

WINDOW = 100_000


def test_the_footer_is_refreshed_after_each_request_of_a_run(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    seen: list[str] = []
    chat: Chat

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(chat.footer_text())  # what the person sees while this request is in flight
        k = len(seen)
        parts = [ToolCallPart("probe", {"n": k}, f"c{k}")] if k < 3 else [TextPart("done")]
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=10_000 * k, output_tokens=100))

    agent = Agent(FunctionModel(model, model_name="probe-model", profile={"context_window": WINDOW}))

    @agent.tool_plain
    def probe(n: int) -> str:
        return f"probed {n}"

    out: list[str] = []
    session = store.session("c")
    chat = Chat(store, session, agent, "probe", out.append)

    async def turn() -> None:
        await chat.handle("go")
        assert chat.busy and "working… Ctrl-C cancels" in chat.footer_text()
        await chat.job

    asyncio.run(turn())
    window, lv = WINDOW, chat.reading().levels
    for k in (1, 2):  # request k+1 shows the usage request k measured
        expected = format_gauge(gauge(10_000 * k + 100, window, lv, figure="measured"), color=False)
        assert expected in seen[k], (expected, seen[k])
    assert "c: new" in seen[0]
    assert out[:2] == ["  → probe(n=1)", "  → probe(n=2)"] and out[2] == "assistant  done"
    head = session.head
    # one line per step of the run (issue 10: each step is durable before the next request)
    assert head is not None and head.seq == 3 and f"head {head.id[:7]} c@3" in chat.footer_text()
    assert "working" not in chat.footer_text()


def test_busy_writes_are_refused_and_change_nothing(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    gate: asyncio.Event

    async def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await gate.wait()
        return ModelResponse(parts=[TextPart("late")])

    from pydantic_ai.models.function import FunctionModel as FM

    agent = Agent(FM(function=None, stream_function=None) if False else FM(slow))
    out: list[str] = []
    session = store.session("b")
    chat = Chat(store, session, agent, "slow", out.append)

    async def scenario() -> None:
        nonlocal gate
        gate = asyncio.Event()
        await chat.handle("first")
        await asyncio.sleep(0)
        for line in ("/compact", "/checkout @1", "/fork b2", "second"):
            await chat.handle(line)
        chat.interrupt()
        await chat.job

    asyncio.run(scenario())
    assert out[:3] == [
        "still answering the last message: /compact waits until it is done; nothing changed",
        "still answering the last message: /checkout waits until it is done; nothing changed",
        "still answering the last message: /fork waits until it is done; nothing changed",
    ]
    assert out[3].startswith("still answering the last message: wait for it")
    assert out[4] == "cancelled. The session keeps what was persisted: 0 messages."
    assert session.head is None and not store.exists("b2") and store.sessions() == []


def test_a_turn_that_finds_the_session_moved_reloads_it_and_loses_nothing(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    other = SessionStore.open(tmp_path / "store").session("m")

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # Another writer (a second process, say) appends while this turn's request is in flight.
        other.append([ModelRequest(parts=[UserPromptPart("theirs")]), ModelResponse(parts=[TextPart("ok")])])
        return ModelResponse(parts=[TextPart("mine")])

    out: list[str] = []
    session = store.session("m")
    chat = Chat(store, session, Agent(FunctionModel(model)), "m", out.append)

    async def turn() -> None:
        await chat.handle("hello")
        await chat.job

    asyncio.run(turn())
    assert len(out) == 1 and "'m-run1'" in out[0] and "nothing was lost" in out[0], out
    assert out[0].endswith(f"; reloaded 'm' (2 messages, head {other.head.id[:7]})")
    assert [m.parts[0].content for m in store.session("m-run1").history[-2:]] == ["hello", "mine"]
    assert session.head == other.head and [c.kind for c in session.log()] == ["turn"]
    assert f"head {other.head.id[:7]} m@1" in chat.footer_text()
