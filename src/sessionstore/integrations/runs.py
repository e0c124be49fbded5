"""Running pydantic-ai agents on a session: one call per turn, or the pydantic-ai way, a capability.

    result = run_turn(session, agent, "fix the failing test")              # sync
    result = await run_turn_async(session, agent, "fix the failing test")  # async
    # or, inside your own call, in any run shape (run_sync, run, iter, run_stream, run_stream_events):
    agent.run_sync(prompt, message_history=session.history, capabilities=[SessionCapability(session)])

What a caller may rely on (DESIGN §7 "Inside a run"), for EVERY model request of the run, including
the requests between tool calls:

- **Fresh head.** Before the first request the on-disk head is checked: a session another writer moved
  raises `StaleSessionError` before any paid model call.
- **The session's history.** `message_history` must be the session's history, equal in content (a
  deserialized copy will do), or extend it (what the session lacks is stored with the run); anything
  else is refused before any model call (`run_history.extension_of`).
- **Durable steps.** Before each request the run's messages up to the newest response are committed as
  a turn (`compact=False`), so a crash (kill -9) mid-run loses at most the request in flight; at the end
  of the run the rest is committed, with `run_stream`'s closing request (its final tool calls' returns,
  which pydantic-ai adds only to the caller's result). A run that stops without a result (`iter` left
  early, a cancelled stream, a timeout) keeps what it received, every call it left open closed as
  interrupted. Nothing is committed twice; no tool call is stored without its return (except the calls
  a run leaves for `deferred_tool_results`).
- **Fits.** What is about to be sent is measured without re-tokenizing stored messages (`protect.py`),
  as the larger of the measured prefix and the calibrated estimate (DESIGN §6), so a usage that is
  present but wrong cannot let a request through. Over the full level the session checkpoints mid-run
  (`Session.compact()`: tier 2 cuts inside the long turn, keeping its user request verbatim; tier 3 if
  still over) and the run continues from `[summary, *tail]`; over micro, tier 1 applies to what is sent;
  still over, tier 3 applies to what is sent. No request is sent over the resolved window. The run's
  own history (`new_messages()`) stays whole; only what is sent changes. A checkpoint the agent asked
  for (`SessionToolset`'s `compact`) is written before its next request.
- **Calibration.** Each response's usage teaches its model's factor against the local estimate of the
  request as it was sent; the session keeps it on its commit lines (`accounting.calibration`).
- **Never dropped.** If another writer moves the head during the run, the run's messages are saved as a
  fork, and `StaleSessionError` names it.
- **Events** for every tier applied (session listeners), and a `RunReport` of every request's size and
  which figure it is.

A failed request keeps the previous measurement (DESIGN §6); the steps committed before it stay.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelRequest, ModelResponse
from pydantic_ai.tools import DeferredToolRequests

from ..accounting.thresholds import over_threshold
from ..accounting.tokens import estimate_message, estimate_tool_definitions
from ..errors import NothingToCompact, SessionStoreError, StaleSessionError
from ..porcelain.session import cascade
from .protect import measure_request, shape_request
from .run_history import (
    close_dangling,
    close_streamed_final,
    extension_of,
    first_difference,
    open_calls,
    same_content,
    subtract_usage,
    usage_fields,
)
from .run_report import RUN_FIELDS, RequestRecord, RunReport, run_fields

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ToolCallPart
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext, ToolDefinition

    from ..compaction.events import CompactionEvent
    from ..porcelain.session.session import Session

__all__ = ["RUN_FIELDS", "RequestRecord", "RunReport", "SessionCapability", "run_turn", "run_turn_async"]


@dataclass
class _RunState:
    start: int | None = None
    """Index in the run's messages of the first one the session does not hold (set at the first request)."""
    committed: int = 0
    """How many of the run's messages from `start` on are in the session's log."""
    usage: dict[str, Any] = field(default_factory=dict)
    """The run usage already recorded by committed lines (each line records its own delta)."""
    rebased: bool = False
    """A mid-run checkpoint replaced the session's history: requests are rebuilt from it."""
    sizes: dict[int, tuple[ModelMessage, int]] = field(default_factory=dict)
    """Estimates of pending messages by identity (the message is kept, so an id is never reused)."""
    run_id: str | None = None
    steps: int = 0
    """Lines this run has committed."""
    recorded: int = 0
    """Index in the report of the first request not yet covered by a committed line."""
    tools: tuple[tuple[int, ...], list[Any], int] | None = None
    """(ids, the definitions, their estimate) of the last request's tool definitions."""
    live: list[ModelMessage] | None = None
    """pydantic-ai's own list of the run's messages (`ctx.messages`): what a cancelled run produced."""
    run_usage: Any = None
    sent_local: int | None = None
    """Local estimate of the newest request as sent: its response's usage calibrates against it."""
    output_tools: frozenset[str] = frozenset()
    allow_text: bool = True
    executed: dict[str, tuple[Any, str | None]] = field(default_factory=dict)
    """Results of the tools run after the newest request, by call id (a streamed final's closing)."""


@dataclass
class SessionCapability(AbstractCapability[Any]):
    """Binds an agent run to a `Session` (see the module docstring)."""

    session: Session
    report: RunReport = field(default_factory=RunReport)
    _run: _RunState = field(default_factory=_RunState, init=False, repr=False)

    async def for_run(self, ctx: RunContext[Any]) -> SessionCapability:
        return replace(self)  # fresh run state; the report is shared with the caller's object

    # -- the hooks ----------------------------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._run
        messages = ctx.messages
        run.live, run.run_usage = messages, ctx.usage
        if run.start is None:
            run.run_id, run.recorded = ctx.run_id, len(self.report.requests)
            await asyncio.to_thread(self._check_fresh)
            run.start, run.committed = self._starting_point(messages)
        pending = messages[run.start + run.committed :]
        if any(isinstance(m, ModelResponse) for m in pending):
            await asyncio.to_thread(self._commit, pending, ctx.usage)
            pending = []
        run.executed.clear()
        settings = self.session.store.settings
        window, lv = cascade.session_levels(self.session)
        tier = 0
        pending_sizes = self._sizes_of(pending)
        params = request_context.model_request_parameters
        outside = self._tools_size(params)
        run.output_tools = frozenset(t.name for t in params.output_tools)
        run.allow_text = params.allow_text_output
        requested = self.session.checkpoint_request
        if requested is not None or (
            settings.compaction_enabled
            and over_threshold(measure_request(self.session, pending_sizes, outside).tokens, lv.full)
        ):
            checkpointed = await asyncio.to_thread(self._checkpoint, pending, ctx.usage, requested)
            window, lv = cascade.session_levels(self.session)
            pending, pending_sizes, tier = [], [], 2 if checkpointed else 0
        sent = list(request_context.messages)
        tail = sent[len(sent) - len(pending) :] if pending else []  # other capabilities' edits stay
        shaped = shape_request(
            self.session, tail, pending_sizes, window=window, lv=lv, rebase=run.rebased, outside=outside
        )
        if shaped.messages is not None:
            request_context.messages = shaped.messages
        self._emit(shaped.events)  # before the record: a listener sees which request it belongs to
        run.sent_local = shaped.local
        self.report.requests.append(
            RequestRecord(
                shaped.tokens, shaped.measured, window, max(tier, shaped.tier), shaped.figure, shaped.local
            )
        )
        return request_context

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        result: Any,
    ) -> Any:
        # A streamed final response's tools run after the stream, outside the run's own history:
        # their results are what the session must store as their returns (`close_streamed_final`).
        self._run.executed[call.tool_call_id] = (result, getattr(tool_def, "tool_kind", None))
        return result

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        run = self._run
        everything = result.all_messages()
        rest = result.new_messages() if run.start is None else everything[run.start + run.committed :]
        closing = None
        if not isinstance(result.output, DeferredToolRequests) and everything and open_calls(everything):
            last = everything[-1]
            if isinstance(last, ModelResponse):  # run_stream ended at this response (see run_history)
                closing = close_streamed_final(
                    last, output_tools=run.output_tools, allow_text=run.allow_text, executed=run.executed
                )
        if closing is not None:
            rest = [*rest, closing]
        if rest:  # the last commit of the run runs the cascade, as every turn between runs does
            await asyncio.to_thread(self._commit, rest, result.usage, compact=True)
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        self.session.record_failure()
        raise error

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> AgentRunResult[Any]:
        """Around the whole run: a run that ends without a result (cancelled, `iter` left early, a
        timeout) keeps what it received, with no tool call left open (`_keep_partial`)."""
        try:
            return await handler()
        except (asyncio.CancelledError, Exception) as err:
            if self._run.start is not None and not isinstance(err, SessionStoreError):
                with anyio.CancelScope(shield=True):  # cancelled: the write still happens
                    await asyncio.to_thread(self._keep_partial)
            raise

    # -- disk work (run in a thread, never on the event loop) ----------------------------------------

    def _starting_point(self, messages: list[ModelMessage]) -> tuple[int, int]:
        """(start, committed) of a run about to send its first request: where the session's history
        ends in the run's messages. Refuses (before any model call) a run whose `message_history` is
        not the session's history or an extension of it: only the run's messages are committed, so
        anything else would be lost or stored wrong."""
        stored = self.session.messages
        new = len(messages) - 1  # the request about to be sent
        last = messages[new]
        if stored and isinstance(stored[-1], ModelRequest) and isinstance(last, ModelRequest):
            resent = last.parts is stored[-1].parts or same_content(
                ModelRequest(parts=last.parts), ModelRequest(parts=stored[-1].parts)
            )
            if resent and extension_of(stored[:-1], messages[:new]) == new:
                return new, 1  # resuming without a prompt: pydantic-ai re-sends the stored request
        end = extension_of(stored, messages[:new])
        if end is None:
            raise SessionStoreError(
                f"session {self.session.name!r}: the run was given another message_history than the "
                f"session's ({first_difference(stored, messages[:new])}): pass "
                "message_history=session.history with SessionCapability (run_turn does), or a copy equal "
                "in content; to continue from an earlier point, session.checkout(REV) first; nothing was sent"
            )
        return end, 0

    def _check_fresh(self) -> None:
        s = self.session
        on_disk = s.store.log(s.name).head()
        if (on_disk.id if on_disk else None) != (s.head.id if s.head else None):
            raise StaleSessionError(
                f"session {s.name!r} was changed by another writer since it was loaded: call "
                "session.reload() and run again; no model request was made"
            )

    def _commit(self, messages: Sequence[ModelMessage], usage: Any, *, compact: bool = False) -> None:
        """Commit the run's next messages as a turn (its usage: what the run spent since the last one).
        Steps commit with `compact=False`: the next request's own check decides, on what it sends. The
        line records the run it belongs to and the requests whose responses it holds (`RUN_FIELDS`).
        The newest response's usage calibrates the model against what its request sent (`sent_local`)."""
        now = usage_fields(usage)
        delta = subtract_usage(now, self._run.usage)
        run = self._run
        fields = run_fields(
            self.report.requests[run.recorded :], step=run.steps + 1, run_id=run.run_id, final=compact
        )
        s = self.session
        sizes = self._sizes_of(messages)  # the protection counted what it sent: reused, never redone
        sent = run.sent_local if any(isinstance(m, ModelResponse) for m in messages) else None
        try:
            with s.store.lock(s.name):
                s.commit_turn(list(messages), usage=delta or None, extra=fields, sizes=sizes, sent_local=sent)
                s.measure_after_turn()
                events = s.run_cascade() if compact else []
        except StaleSessionError as err:
            fork = self._save_as_fork(messages, delta)
            raise StaleSessionError(
                f"session {s.name!r} was moved by another writer during this run: the run's "
                f"messages are saved as session {fork!r} (see `session log {fork}`); nothing was lost"
            ) from err
        self._emit(events)
        run.steps += 1
        run.recorded = len(self.report.requests)
        run.committed += len(messages)
        run.usage = now

    def _keep_partial(self) -> None:
        """A run ended without a result: commit what it received since the last commit (a response
        cut off mid-stream is kept as pydantic-ai recorded it, `state='interrupted'`), every tool call
        it leaves open closed as pydantic-ai's `repair_messages` closes one. Nothing when it received
        nothing (a request that failed before any part arrived keeps the previous state)."""
        run = self._run
        assert run.live is not None and run.start is not None
        done = run.start + run.committed
        tail = [m for m in run.live[done:] if m.parts or isinstance(m, ModelRequest)]
        received = any(
            (isinstance(m, ModelResponse) and m.parts)
            or any(p.part_kind in ("tool-return", "retry-prompt") for p in m.parts)
            for m in tail
        )
        if not received:
            return
        closed = close_dangling(self.session.messages, tail)
        try:
            self._commit(closed, run.run_usage)
        except SessionStoreError as err:  # the run's own error is what the caller must see
            warnings.warn(
                f"session {self.session.name!r}: the stopped run was not saved: {err}", stacklevel=2
            )

    def _checkpoint(self, pending: Sequence[ModelMessage], usage: Any, requested: str | None = None) -> bool:
        """Mid-run checkpoint: commit what is pending, then tier 2 (and tier 3 if still over), with the
        focus the agent asked for (`SessionToolset`'s compact tool), if it did. False when the
        compaction failed (warned): tier 3 on what is sent still makes it fit."""
        if pending:
            self._commit(pending, usage)
        self.session.checkpoint_request = None
        try:
            self.session.compact(focus=requested or None)
        except NothingToCompact:  # one long user turn: tier 3 shortens what is sent, and says so (its event)
            return False
        except SessionStoreError as err:  # tier 3 on what is sent still guarantees the fit
            warnings.warn(f"session {self.session.name!r}: mid-run compaction failed: {err}", stacklevel=2)
            return False
        self._run.rebased = True
        self.report.checkpoints += 1
        return True

    def _save_as_fork(self, messages: Sequence[ModelMessage], usage: dict[str, Any]) -> str:
        s = self.session
        n = 1
        while s.store.exists(fork := f"{s.name[:120]}-run{n}"):
            n += 1
        target = s.store.fork(f"{s.name}@{s.head.seq}", fork) if s.head else s.store.session(fork)
        target.append(list(messages), usage=usage or None, compact=False)
        return fork

    # -- helpers ------------------------------------------------------------------------------------

    def _tools_size(self, params: ModelRequestParameters) -> int:
        """The estimate of the request's tool definitions (function and output tools), counted once
        per run for the same definitions: a tool loop sends them with every request."""
        tools = [*params.function_tools, *params.output_tools]
        key = tuple(id(tool) for tool in tools)
        if self._run.tools is None or self._run.tools[0] != key:
            self._run.tools = (key, tools, estimate_tool_definitions(tools))  # tools kept: ids stay theirs
        return self._run.tools[2]

    def _sizes_of(self, messages: Sequence[ModelMessage]) -> list[int]:
        out = []
        for msg in messages:
            hit = self._run.sizes.get(id(msg))
            if hit is None or hit[0] is not msg:
                hit = self._run.sizes[id(msg)] = (msg, estimate_message(msg))
            out.append(hit[1])
        return out

    def _emit(self, events: Sequence[CompactionEvent]) -> None:
        for event in events:
            for listener in self.session.listeners:
                listener(event)


def _kwargs(
    session: Session, agent: Agent[Any, Any], kwargs: dict[str, Any], report: RunReport | None
) -> dict[str, Any]:
    if session.model is None:
        session.model = agent.model  # a Model object carries its profile's context window
    capability = SessionCapability(session, report if report is not None else RunReport())
    capabilities = [*(kwargs.pop("capabilities", None) or ()), capability]
    return {"message_history": session.history, "capabilities": capabilities, **kwargs}


def run_turn(
    session: Session,
    agent: Agent[Any, Any],
    prompt: Any = None,
    *,
    report: RunReport | None = None,
    **kwargs: Any,
) -> AgentRunResult[Any]:
    """Run one agent turn on `session`, every request protected and every step persisted (see the
    module docstring). `report`, if given, receives a record of every request the run sent."""
    return agent.run_sync(prompt, **_kwargs(session, agent, kwargs, report))


async def run_turn_async(
    session: Session,
    agent: Agent[Any, Any],
    prompt: Any = None,
    *,
    report: RunReport | None = None,
    **kwargs: Any,
) -> AgentRunResult[Any]:
    """Async twin of `run_turn`: disk work runs in a thread, never on the event loop."""
    return await agent.run(prompt, **_kwargs(session, agent, kwargs, report))
