"""Running pydantic-ai agents on a session: one call per turn, or the pydantic-ai way, a capability.

    result = run_turn(session, agent, "fix the failing test")              # sync
    result = await run_turn_async(session, agent, "fix the failing test")  # async
    # or, inside your own call:
    agent.run_sync(prompt, message_history=session.history, capabilities=[SessionCapability(session)])

The capability sends the micro view (tier 1) on every model request of the run, including the requests
between tool calls, without touching the run's own history; after the run it persists
`result.new_messages()` (never `all_messages()`: pydantic-ai repairs and merges the history it is
given) with the run's usage, refreshes the measurement from the newest response and runs the cascade.
A failed run keeps the previous measurement and persists nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability

from ..accounting.thresholds import over_threshold
from ..accounting.tokens import estimate_message, estimate_messages
from ..compaction.micro import microcompact
from ..porcelain import cascade

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext

    from ..porcelain.session import Session


def request_view(
    session: Session,
    messages: list[ModelMessage],
    sizes_of: Callable[[Sequence[ModelMessage]], list[int]] = estimate_messages,
) -> list[ModelMessage]:
    """`messages` (the session's history plus what this run added) with tier 1 applied when due.

    `sizes_of` estimates the messages past the stored history (a run's capability caches them, so each
    request of a run tokenizes only what the previous request did not already see)."""
    settings = session.store.settings
    if not settings.compaction_enabled or not messages:
        return messages
    known = len(session.messages)
    sizes = list(session.message_sizes[:known]) if len(messages) >= known else []
    sizes = sizes + sizes_of(messages[len(sizes) :])
    m = session.measurement
    bias = m.tokens - m.local  # provider count minus our estimate for the stored history (signed)
    _, lv = cascade.session_levels(session)
    if not over_threshold(sum(sizes) + bias, lv.micro):
        session.note_sent(0)
        return messages
    view = microcompact(messages, sizes, level=max(0, lv.micro - bias), settings=settings)
    session.note_sent(view.tokens_before - view.tokens_after)
    return view.messages


@dataclass
class SessionCapability(AbstractCapability[Any]):
    """Binds an agent run to a `Session` (see the module docstring)."""

    session: Session
    _sizes: dict[int, tuple[ModelMessage, int]] = field(default_factory=dict, init=False, repr=False)
    """Estimates of this run's messages by identity (the message is kept, so an id is never reused):
    every request of a run resends all the run's earlier messages, which are tokenized only once."""

    async def for_run(self, ctx: RunContext[Any]) -> SessionCapability:
        return dataclasses.replace(self)  # a fresh, empty estimate cache per run

    def _sizes_of(self, messages: Sequence[ModelMessage]) -> list[int]:
        out = []
        for msg in messages:
            hit = self._sizes.get(id(msg))
            if hit is None or hit[0] is not msg:
                hit = self._sizes[id(msg)] = (msg, estimate_message(msg))
            out.append(hit[1])
        return out

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        # Request-only: what is sent shrinks, the run's history (and so new_messages()) stays whole.
        request_context.messages = request_view(self.session, list(request_context.messages), self._sizes_of)
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        await asyncio.to_thread(self.session.append, result.new_messages(), usage=result.usage)
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        self.session.record_failure()
        raise error


def _kwargs(session: Session, agent: Agent[Any, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    if session.model is None:
        session.model = agent.model  # a Model object carries its profile's context window
    capabilities = [*(kwargs.pop("capabilities", None) or ()), SessionCapability(session)]
    return {"message_history": session.history, "capabilities": capabilities, **kwargs}


def run_turn(
    session: Session, agent: Agent[Any, Any], prompt: Any = None, **kwargs: Any
) -> AgentRunResult[Any]:
    """Run one agent turn on `session` and persist it (see the module docstring)."""
    return agent.run_sync(prompt, **_kwargs(session, agent, kwargs))


async def run_turn_async(
    session: Session, agent: Agent[Any, Any], prompt: Any = None, **kwargs: Any
) -> AgentRunResult[Any]:
    """Async twin of `run_turn`: disk work runs in a thread, never on the event loop."""
    return await agent.run(prompt, **_kwargs(session, agent, kwargs))
