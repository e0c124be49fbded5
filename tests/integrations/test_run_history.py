"""How a run's messages line up with the session's (integrations/run_history.py), through real runs.

- a `message_history` equal in content to the session's (deserialized, as a web app loads it from its
  own database) is accepted, and so is one that extends it (what a caller kept from an earlier run):
  only what the session does not hold is stored; anything else is refused before any model call;
- `run_stream`'s closing request (its final tool calls' returns) is the one pydantic-ai builds, text
  for text, for every end strategy, so a caller's `result.all_messages()` and the session agree;
- a run that ends waiting for approval keeps its calls open for `deferred_tool_results`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from helpers.agent_histories import agent_histories
from helpers.run_shapes import Coder, Report
from sessionstore import SessionStore, Settings
from sessionstore.compaction.turns import pairs_intact
from sessionstore.errors import SessionStoreError
from sessionstore.integrations.run_history import extension_of, same_content
from sessionstore.integrations.runs import SessionCapability, run_turn


def store_at(path: Path) -> SessionStore:
    return SessionStore.open(path, settings=Settings(context_window_tokens=200_000))


def loaded(messages: list[ModelMessage]) -> list[ModelMessage]:
    """`messages` as an app gets them back from its own database: new objects, same JSON."""
    return ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))


def test_a_history_equal_in_content_is_accepted_and_only_the_run_is_stored(tmp_path: Path) -> None:
    s = store_at(tmp_path).session("s")
    coder = Coder(rounds=1, file_tokens=200)
    run_turn(s, coder.agent(), "first")
    count = s.persisted_count
    copy = loaded(s.history)
    assert all(a is not b for a, b in zip(copy, s.history, strict=True))
    result = coder.agent().run_sync("second", message_history=copy, capabilities=[SessionCapability(s)])
    assert s.persisted_count == count + len(result.new_messages())
    assert store_at(tmp_path).session("s").history[count:] == result.new_messages()


def test_a_history_that_extends_the_sessions_is_stored_with_the_run(tmp_path: Path) -> None:
    s = store_at(tmp_path).session("s")
    coder = Coder(rounds=1, file_tokens=200)
    run_turn(s, coder.agent(), "first")
    count = s.persisted_count
    # The app kept an exchange the session never saw (say, a run made without the capability).
    extra = [
        ModelRequest(parts=[UserPromptPart("what time is it?")]),
        ModelResponse(parts=[TextPart("noon")]),
    ]
    result = coder.agent().run_sync(
        "second", message_history=[*loaded(s.history), *extra], capabilities=[SessionCapability(s)]
    )
    stored = store_at(tmp_path).session("s").history
    assert [m.parts[0].content for m in stored[count : count + 2]] == ["what time is it?", "noon"]
    assert stored[count + 2 :] == result.new_messages() and pairs_intact(stored)


def test_a_history_changed_in_the_middle_is_refused_before_any_call(tmp_path: Path) -> None:
    s = store_at(tmp_path).session("s")
    coder = Coder(rounds=1, file_tokens=200)
    run_turn(s, coder.agent(), "first")
    changed = loaded(s.history)
    changed[0] = ModelRequest(parts=[UserPromptPart("first, edited")])
    calls, count = len(coder.received), s.persisted_count
    with pytest.raises(SessionStoreError, match=r"message 0 differs.*session\.checkout\(REV\)"):
        coder.agent().run_sync("second", message_history=changed, capabilities=[SessionCapability(s)])
    assert len(coder.received) == calls and s.persisted_count == count, "no call made, nothing stored"


class Verdict(BaseModel):
    ok: bool


def test_the_result_of_run_stream_passed_back_is_the_sessions_history(tmp_path: Path) -> None:
    """Structured `run_stream`: the caller's `all_messages()` (pydantic-ai's own closing request) and
    the session's (rebuilt by the capability) are one history, so passing either works."""
    s = store_at(tmp_path).session("s")
    coder = Coder(rounds=1, file_tokens=200)

    async def go() -> list[ModelMessage]:
        agent = coder.agent(output_type=Report)
        async with agent.run_stream(
            "check", message_history=s.history, capabilities=[SessionCapability(s)]
        ) as r:
            await r.get_output()
        return r.all_messages()

    theirs = asyncio.run(go())
    assert len(theirs) == len(s.history) and all(
        same_content(a, b) for a, b in zip(theirs, s.history, strict=True)
    )
    count = s.persisted_count
    result = coder.agent().run_sync("again", message_history=theirs, capabilities=[SessionCapability(s)])
    assert s.persisted_count == count + len(result.new_messages()) and pairs_intact(s.history)


@pytest.mark.parametrize("strategy", ["early", "graceful", "exhaustive"])
def test_run_streams_closing_request_is_the_one_pydantic_ai_builds(tmp_path: Path, strategy: str) -> None:
    """A streamed final response that also calls tools: pydantic-ai runs (or skips) them after the
    stream, outside the run's history; the session stores the same returns, in the same order."""

    async def stream(messages: list[ModelMessage], info: AgentInfo):  # type: ignore[no-untyped-def]
        yield {0: DeltaToolCall("note", '{"x": "1"}', tool_call_id="n1")}
        yield {1: DeltaToolCall(info.output_tools[0].name, '{"ok": true}', tool_call_id="out")}
        yield {2: DeltaToolCall("note", '{"x": "2"}', tool_call_id="n2")}

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise AssertionError("streamed only")

    agent: Agent[None, Verdict] = Agent(
        FunctionModel(body, stream_function=stream), output_type=Verdict, end_strategy=strategy
    )

    @agent.tool_plain
    def note(x: str) -> str:
        return f"noted {x}"

    s = store_at(tmp_path).session("s")

    async def go() -> list[ModelMessage]:
        async with agent.run_stream(
            "go", message_history=s.history, capabilities=[SessionCapability(s)]
        ) as r:
            await r.get_output()
        return r.new_messages()

    theirs = asyncio.run(go())[-1]
    ours = s.history[-1]
    assert isinstance(ours, ModelRequest) and pairs_intact(s.history)
    got = [(p.tool_call_id, p.content) for p in ours.parts]
    assert got == [(p.tool_call_id, p.content) for p in theirs.parts], strategy  # type: ignore[union-attr]


def test_a_run_waiting_for_approval_keeps_its_calls_open_for_the_results(tmp_path: Path) -> None:
    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(p.part_kind == "tool-return" for p in messages[-1].parts):
            return ModelResponse(parts=[TextPart("deleted")])
        return ModelResponse(parts=[ToolCallPart("delete", {"path": "a.txt"}, tool_call_id="d1")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(body), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        return f"deleted {path}"

    s = store_at(tmp_path).session("s")
    first = run_turn(s, agent, "delete a.txt")
    assert isinstance(first.output, DeferredToolRequests)
    assert isinstance(s.history[-1], ModelResponse) and s.history[-1].tool_calls, "the call stays open"
    results = DeferredToolResults(approvals={"d1": True})
    second = run_turn(s, agent, None, deferred_tool_results=results)
    assert second.output == "deleted" and pairs_intact(s.history)
    assert store_at(tmp_path).session("s").history == s.history


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent_histories(max_turns=3), st.integers(0, 3), st.data())
def test_a_copy_extends_the_history_and_any_change_does_not(
    history: list[ModelMessage], extra: int, data: st.DataObject
) -> None:
    more = [ModelRequest(parts=[UserPromptPart(f"more {i}")]) for i in range(extra)]
    copy = loaded(history)
    assert extension_of(history, [*copy, *more]) == len(history)
    assert extension_of(history, copy[:-1]) is None
    i = data.draw(st.integers(0, len(history) - 1))
    changed = [*copy[:i], ModelResponse(parts=[TextPart("something else")]), *copy[i + 1 :]]
    assert extension_of(history, changed) is None
