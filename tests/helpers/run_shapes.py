"""Every way people run a pydantic-ai agent, on a session, against a scripted coder (issue 27).

`Coder` is a FunctionModel body and stream function at once: for each user prompt it reads `rounds`
files (one `read` call per request, each returning `file_tokens` tokens of varied text), then answers:
a text (streamed in chunks when streaming) or, when the agent has an output type, a call of its
output tool. Every request it receives is counted with the tokenizer (the project's estimator: the
messages as the model got them plus the tool definitions), so "no request over the window" is
checked on what was received, not on what the capability believes it sent.

`UsageMode` sets the usage the responses carry: `exact` (the count of what was received), `default`
(FunctionModel's own: a word count, 50 input tokens when streaming) or `absent` (none).

`SHAPES` run one turn each, as a user writes it (`run_sync`, `run`, `iter`, `iter` stopped at the first
tool call, `run_stream` with text, `run_stream` with structured output, `run_stream_events`, and
`run_stream` cancelled mid-answer), and return what pydantic-ai produced for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.usage import RequestUsage

from helpers.long_runs import filler
from sessionstore.accounting.tokens import (
    count_text,
    estimate_message,
    estimate_messages,
    estimate_tool_definitions,
)
from sessionstore.integrations.run_history import extension_of
from sessionstore.integrations.runs import RunReport, SessionCapability
from sessionstore.porcelain.session.session import Session

ANSWER = "I read the files: the parser splits lines, the writer syncs each record before the rename."


class Report(BaseModel):
    """The structured output of the `run_stream` structured shape."""

    summary: str
    files: int


def _turn(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The messages since the newest user prompt (the current turn)."""
    for i in range(len(messages) - 1, -1, -1):
        if any(p.part_kind == "user-prompt" for p in messages[i].parts):
            return messages[i:]
    return messages


@dataclass
class Coder:
    """The scripted model (see the module docstring)."""

    rounds: int = 3
    file_tokens: int = 2_500
    chunk_delay: float = 0.0
    received: list[int] = field(default_factory=list)
    """Tokens of every request received (messages + tool definitions), in order."""
    requests: list[list[ModelMessage]] = field(default_factory=list)
    chunks_sent: int = 0
    streamed: asyncio.Event | None = None
    """Set once the first chunk of a streamed answer has gone out (the cancel shape waits for it)."""

    def _receive(self, messages: list[ModelMessage], info: AgentInfo) -> int:
        tools = estimate_tool_definitions([*info.function_tools, *info.output_tools])
        extra = count_text(info.instructions) if info.instructions else 0
        self.received.append(sum(estimate_messages(messages)) + tools + extra)
        self.requests.append(messages)
        return sum(p.part_kind == "tool-return" for m in _turn(messages) for p in m.parts)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = self._receive(messages, info)
        if done < self.rounds:
            return ModelResponse(parts=[ToolCallPart("read", {"i": done}, tool_call_id=f"r{done}")])
        if info.output_tools:
            args = {"summary": ANSWER, "files": done}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args, tool_call_id="out")])
        return ModelResponse(parts=[TextPart(ANSWER)])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        done = self._receive(messages, info)
        if done < self.rounds:
            yield {0: DeltaToolCall("read", f'{{"i": {done}}}', tool_call_id=f"r{done}")}
            return
        if info.output_tools:
            name = info.output_tools[0].name
            yield {0: DeltaToolCall(name, '{"summary": "' + ANSWER[:40], tool_call_id="out")}
            yield {0: DeltaToolCall(None, ANSWER[40:] + f'", "files": {done}}}')}
            return
        words = ANSWER.split(" ")
        for i, word in enumerate(words):
            yield word + (" " if i < len(words) - 1 else "")
            self.chunks_sent += 1
            if self.streamed is not None:
                self.streamed.set()
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)

    def agent(self, output_type: Any = str) -> Agent[None, Any]:
        agent: Agent[None, Any] = Agent(
            FunctionModel(self, stream_function=self.stream), output_type=output_type
        )

        @agent.tool_plain
        def read(i: int) -> str:
            """Read file number i of the repository."""
            return filler(self.file_tokens, f"file {i}")

        return agent


@dataclass
class UsageMode(AbstractCapability[Any]):
    """Sets the usage every response carries (see the module docstring)."""

    mode: str
    coder: Coder

    async def after_model_request(
        self, ctx: Any, *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        if self.mode == "exact":
            usage = RequestUsage(
                input_tokens=self.coder.received[-1], output_tokens=estimate_message(response)
            )
            return replace(response, usage=usage)
        if self.mode == "absent":
            return replace(response, usage=RequestUsage())
        return response


USAGE_MODES = ("exact", "default", "absent")


@dataclass
class Outcome:
    """What pydantic-ai produced for one run: its messages from the session's end on (None when the run
    ended without a result object, as a cancelled one does), and the streamed text it delivered."""

    new: list[ModelMessage] | None
    text: str = ""
    cancelled: bool = False


def _since(history: list[ModelMessage], captured: list[ModelMessage]) -> list[ModelMessage]:
    """The run's own messages in what `capture_run_messages` holds (pydantic-ai may have merged the
    history's adjacent requests, so the history's length is not where they start)."""
    end = extension_of(history, captured)
    assert end is not None, "the run's messages start with the history it was given"
    return captured[end:]


def _kwargs(session: Session, mode: str, coder: Coder, report: RunReport) -> dict[str, Any]:
    return {
        "message_history": session.history,
        "capabilities": [UsageMode(mode, coder), SessionCapability(session, report)],
    }


async def _run_sync(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    result = await asyncio.to_thread(agent.run_sync, prompt, **kw)
    return Outcome(result.new_messages())


async def _run(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    return Outcome((await agent.run(prompt, **kw)).new_messages())


async def _iter(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    async with agent.iter(prompt, **kw) as run:
        async for _ in run:
            pass
    assert run.result is not None
    return Outcome(run.result.new_messages())


async def _iter_stopped(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    with capture_run_messages() as captured:
        async with agent.iter(prompt, **kw) as run:
            async for node in run:
                if Agent.is_call_tools_node(node):
                    break  # the model asked for a tool: stop before it runs
    return Outcome(_since(kw["message_history"], captured), cancelled=True)


async def _stream_text(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    async with agent.run_stream(prompt, **kw) as result:
        text = "".join([chunk async for chunk in result.stream_text(delta=True)])
    return Outcome(result.new_messages(), text)


async def _stream_structured(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    async with agent.run_stream(prompt, output_type=Report, **kw) as result:
        output = await result.get_output()
    assert isinstance(output, Report) and output.summary == ANSWER
    return Outcome(result.new_messages())


async def _stream_events(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    async with agent.run_stream_events(prompt, **kw) as events:
        async for event in events:
            result = getattr(event, "result", None)
    assert result is not None
    return Outcome(result.new_messages())


async def _stream_cancelled(agent: Agent, prompt: str, kw: dict[str, Any]) -> Outcome:
    coder: Coder = kw["capabilities"][0].coder
    coder.streamed, coder.chunk_delay = asyncio.Event(), 0.05
    received: list[str] = []

    async def consume() -> None:
        async with agent.run_stream(prompt, **kw) as result:
            async for chunk in result.stream_text(delta=True):
                received.append(chunk)

    with capture_run_messages() as captured:
        task = asyncio.ensure_future(consume())
        await coder.streamed.wait()
        while not received:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    coder.streamed, coder.chunk_delay = None, 0.0
    return Outcome(_since(kw["message_history"], captured), "".join(received), cancelled=True)


Shape = Callable[[Agent, str, dict[str, Any]], Awaitable[Outcome]]
SHAPES: dict[str, Shape] = {
    "run_sync": _run_sync,
    "run": _run,
    "iter": _iter,
    "iter_stopped": _iter_stopped,
    "run_stream_text": _stream_text,
    "run_stream_structured": _stream_structured,
    "run_stream_events": _stream_events,
    "run_stream_cancelled": _stream_cancelled,
}


def run_shape(
    shape: str, session: Session, coder: Coder, mode: str, prompt: str, report: RunReport
) -> Outcome:
    """Run one turn of `shape` on `session` with usage `mode`; returns what pydantic-ai produced."""
    agent = coder.agent()
    return asyncio.run(SHAPES[shape](agent, prompt, _kwargs(session, mode, coder, report)))
