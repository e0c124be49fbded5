"""Running pydantic-ai agents on a session: one call per turn, or the pydantic-ai way, a capability.

    result = run_turn(session, agent, "fix the failing test")              # sync
    result = await run_turn_async(session, agent, "fix the failing test")  # async
    # or, inside your own call:
    agent.run_sync(prompt, message_history=session.history, capabilities=[SessionCapability(session)])

What a caller may rely on (DESIGN §7 "Inside a run"), for EVERY model request of the run, including
the requests between tool calls:

- **Fresh head.** Before the first request the on-disk head is checked: a session another writer moved
  raises `StaleSessionError` before any paid model call.
- **Durable steps.** Before each request the run's messages up to the newest response are committed as
  a turn (`compact=False`), so a crash (kill -9) mid-run loses at most the request in flight; at the end
  of the run the rest is committed. Nothing is committed twice.
- **Fits.** What is about to be sent is measured without re-tokenizing stored messages (`protect.py`).
  Over the full level the session checkpoints mid-run (`Session.compact()`: tier 2 cuts inside the
  long turn, keeping its user request verbatim; tier 3 if still over) and the run continues from
  `[summary, *tail]`; over micro, tier 1 applies to what is sent; still over, tier 3 applies to what
  is sent. No request is sent over the resolved window. The run's own history (`new_messages()`)
  stays whole; only what is sent changes.
- **Never dropped.** If another writer moves the head during the run, the run's messages are saved as a
  fork, and `StaleSessionError` names it.
- **Events** for every tier applied (session listeners), and a `RunReport` of every request's size.

A failed request keeps the previous measurement (DESIGN §6); the steps committed before it stay.
"""

from __future__ import annotations

import asyncio
import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelRequest, ModelResponse

from ..accounting.thresholds import over_threshold
from ..accounting.tokens import estimate_message, estimate_tool_definitions
from ..errors import NothingToCompact, SessionStoreError, StaleSessionError
from ..porcelain.session import cascade
from .protect import measure_request, shape_request

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext

    from ..compaction.events import CompactionEvent
    from ..porcelain.session.session import Session

__all__ = ["RUN_FIELDS", "RequestRecord", "RunReport", "SessionCapability", "run_turn", "run_turn_async"]

RUN_FIELDS = {
    "run": "the pydantic-ai run id (every line of one run carries the same)",
    "step": "1-based index of this line among the run's lines",
    "requests": "model requests whose responses this line holds",
    "peak": "the largest of those requests as sent, in tokens (the trigger measure, DESIGN §6)",
    "mid_run": "true on every line but the run's last: a compaction right after it is a mid-run checkpoint",
}
"""Extra fields of the turn lines a run writes (`session log --json` shows them)."""


@dataclass(frozen=True)
class RequestRecord:
    """One model request of a run: `tokens` sent (the trigger measure, DESIGN §6) against `window`,
    `measured` before protection, and the highest `tier` applied (0 none, 1, 2 mid-run checkpoint, 3)."""

    tokens: int
    measured: int
    window: int
    tier: int


@dataclass
class RunReport:
    """Every request the capability protected (all runs it served, oldest first)."""

    requests: list[RequestRecord] = field(default_factory=list)
    checkpoints: int = 0
    """Mid-run checkpoints (tier 2 compactions written inside a run)."""

    @property
    def peak(self) -> int:
        """The largest request sent, in tokens (0 before any request)."""
        return max((r.tokens for r in self.requests), default=0)


@dataclass
class _RunState:
    start: int | None = None
    """Index in the run's messages of its first new message (set at the first request)."""
    committed: int = 0
    """How many of the run's new messages are in the session's log."""
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


@dataclass
class SessionCapability(AbstractCapability[Any]):
    """Binds an agent run to a `Session` (see the module docstring)."""

    session: Session
    report: RunReport = field(default_factory=RunReport)
    _run: _RunState = field(default_factory=_RunState, init=False, repr=False)

    async def for_run(self, ctx: RunContext[Any]) -> SessionCapability:
        return dataclasses.replace(self)  # fresh run state; the report is shared with the caller's object

    # -- the hooks ----------------------------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._run
        messages = ctx.messages
        if run.start is None:
            run.start = len(messages) - 1  # the request this run is about to send is its first message
            run.run_id, run.recorded = ctx.run_id, len(self.report.requests)
            await asyncio.to_thread(self._check_fresh)
            stored = self.session.history
            if (
                stored
                and isinstance(stored[-1], ModelRequest)
                and messages[run.start].parts is stored[-1].parts
            ):
                run.committed = 1  # resuming without a prompt: pydantic-ai re-sends the stored request
            _check_history(self.session.name, stored[: len(stored) - run.committed], messages[: run.start])
        pending = messages[run.start + run.committed :]
        if any(isinstance(m, ModelResponse) for m in pending):
            await asyncio.to_thread(self._commit, pending, ctx.usage)
            pending = []
        settings = self.session.store.settings
        window, lv = cascade.session_levels(self.session)
        tier = 0
        pending_sizes = self._sizes_of(pending)
        outside = self._tools_size(request_context.model_request_parameters)
        if settings.compaction_enabled and over_threshold(
            measure_request(self.session, pending_sizes, outside)[0], lv.full
        ):
            checkpointed = await asyncio.to_thread(self._checkpoint, pending, ctx.usage)
            window, lv = cascade.session_levels(self.session)
            pending, pending_sizes, tier = [], [], 2 if checkpointed else 0
        sent = list(request_context.messages)
        tail = sent[len(sent) - len(pending) :] if pending else []  # other capabilities' edits stay
        shaped = shape_request(
            self.session, tail, pending_sizes, window=window, lv=lv, rebase=self._run.rebased, outside=outside
        )
        if shaped.messages is not None:
            request_context.messages = shaped.messages
        self._emit(shaped.events)  # before the record: a listener sees which request it belongs to
        self.report.requests.append(
            RequestRecord(shaped.tokens, shaped.measured, window, max(tier, shaped.tier))
        )
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        run = self._run
        rest = (
            result.new_messages() if run.start is None else result.all_messages()[run.start + run.committed :]
        )
        if rest:  # the last commit of the run runs the cascade, as every turn between runs does
            await asyncio.to_thread(self._commit, rest, result.usage, compact=True)
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        self.session.record_failure()
        raise error

    # -- disk work (run in a thread, never on the event loop) ----------------------------------------

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
        line records the run it belongs to and the requests whose responses it holds (`RUN_FIELDS`)."""
        now = _usage_fields(usage)
        delta = _subtract(now, self._run.usage)
        fields = self._run_fields(final=compact)
        s = self.session
        sizes = self._sizes_of(messages)  # the protection counted what it sent: reused, never redone
        try:
            with s.store.lock(s.name):
                s.commit_turn(list(messages), usage=delta or None, extra=fields, sizes=sizes)
                s.measure_after_turn()
                events = s.run_cascade() if compact else []
        except StaleSessionError as err:
            fork = self._save_as_fork(messages, delta)
            raise StaleSessionError(
                f"session {s.name!r} was moved by another writer during this run: the run's "
                f"messages are saved as session {fork!r} (see `session log {fork}`); nothing was lost"
            ) from err
        self._emit(events)
        self._run.steps += 1
        self._run.recorded = len(self.report.requests)
        self._run.committed += len(messages)
        self._run.usage = now

    def _checkpoint(self, pending: Sequence[ModelMessage], usage: Any) -> bool:
        """Mid-run checkpoint: commit what is pending, then tier 2 (and tier 3 if still over).
        False when the compaction failed (warned): tier 3 on what is sent still makes it fit."""
        if pending:
            self._commit(pending, usage)
        try:
            self.session.compact()
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

    def _run_fields(self, *, final: bool) -> dict[str, Any]:
        """The run fields of the next line (see `RUN_FIELDS`)."""
        records = self.report.requests[self._run.recorded :]
        fields: dict[str, Any] = {"step": self._run.steps + 1, "requests": len(records)}
        if self._run.run_id:
            fields["run"] = self._run.run_id
        if records:
            fields["peak"] = max(r.tokens for r in records)
        if not final:
            fields["mid_run"] = True
        return fields

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


def _check_history(name: str, stored: list[ModelMessage], prefix: Sequence[ModelMessage]) -> None:
    """Refuse a run whose `message_history` is not the session's history (before any model call):
    only the run's new messages are committed, so anything else would be lost or stored wrong.

    Cheap and lenient: the newest stored message (or a request pydantic-ai merged it into, which keeps
    its parts) must be among the last few messages the run started from (a repair may add one)."""
    if not stored:
        ok = not prefix
    else:
        last = stored[-1]
        ok = any(m is last or _holds_parts(m, last) for m in prefix[-3:])
    if not ok:
        raise SessionStoreError(
            f"session {name!r}: the run was given another message_history than the session's: pass "
            "message_history=session.history with SessionCapability (run_turn does); nothing was sent"
        )


def _holds_parts(merged: ModelMessage, original: ModelMessage) -> bool:
    ids = {id(p) for p in merged.parts}
    return (
        isinstance(merged, ModelRequest)
        and bool(original.parts)
        and all(id(p) in ids for p in original.parts)
    )


def _usage_fields(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    if dataclasses.is_dataclass(usage) and not isinstance(usage, type):
        return dataclasses.asdict(usage)
    return dict(usage)


def _subtract(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """`now - before` field by field (nested `details` too), keeping only what is non-zero."""
    out: dict[str, Any] = {}
    for key, value in now.items():
        prior = before.get(key)
        if isinstance(value, dict):
            inner = _subtract(value, prior if isinstance(prior, dict) else {})
            if inner:
                out[key] = inner
        elif isinstance(value, int | float) and not isinstance(value, bool):
            diff = value - (prior if isinstance(prior, int | float) else 0)
            if diff:
                out[key] = diff
    return out


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
