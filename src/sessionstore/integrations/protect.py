"""Per-request protection (DESIGN §7 "Inside a run"): what ONE model request of a run may send.

The capability in `runs.py` keeps the session's stored history equal to the run's messages up to the
newest response (it commits every step before the next request), so what a request is about to send
is `session.history` plus the run's `pending` messages (the new prompt, on the first request). That is
measured without tokenizing anything stored (issue 16, item 0): the session's measurement (the
measured prefix of its newest response plus the persisted sizes after it, DESIGN §6) plus the local
estimates of `pending`. pydantic-ai merges adjacent requests only after this hook, so the sizes used
here are the stored ones, one per stored message, never shifted by a merge.

`shape_request` applies the in-memory tiers to what is sent; the mid-run checkpoint (tier 2, which
writes) is the capability's job and happens before it:

    over micro          -> tier 1 on what is sent (the session's micro view, plus pending)
    still over full     -> tier 3 on what is sent (request only; the log keeps the history)
    over the window     -> tier 3 even when `ultimate_compaction_enabled` is off; with compaction
                           disabled altogether, `CompactionError` instead of a request that cannot fit

`compaction_enabled` off means no tier at all, as in the cascade after a turn: what is sent is the
stored history plus pending, unchanged, or `CompactionError` when that is over the window. A provider
measurement far above the local estimate (tool definitions, instructions: the bias) is budgeted for;
when it alone leaves tier 3 no room under the window, `CompactionError` too, never an oversized request.

So no request leaves over the resolved window, and the stored history is never changed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..accounting.thresholds import Levels, over_threshold
from ..compaction.events import CompactionEvent, ContextMicrocompacted, ContextUltimateCompacted
from ..compaction.ultimate import MIN_ULTIMATE_BUDGET, ultimate_compact
from ..errors import CompactionError
from ..porcelain.session import cascade

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..porcelain.session.session import Session

__all__ = ["Shaped", "measure_request", "shape_request"]


@dataclass(frozen=True)
class Shaped:
    """What protection decided for one request.

    `messages` None means "send what pydantic-ai prepared, unchanged" (nothing applied and the run's
    own list is current). `tokens` is the trigger measure of what is sent (what the window is
    compared with); `measured` the same before protection; `tier` the highest tier applied (0 none,
    1 micro, 3 ultimate; a mid-run checkpoint is recorded by the caller as 2)."""

    messages: list[ModelMessage] | None
    tokens: int
    measured: int
    tier: int
    events: list[CompactionEvent] = field(default_factory=list)


def measure_request(session: Session, pending_sizes: Sequence[int], outside: int = 0) -> tuple[int, int]:
    """(tokens, bias) of `session.history + pending`: the session's measurement plus the pending
    estimates, and the provider-minus-local bias of that measurement (signed).

    `outside`: the local estimate of what the request carries beside its messages (its tool
    definitions). While no provider usage measures the session it is added, and it is the bias;
    once one does, the measured prefix holds it already and the measured bias stands instead."""
    m = session.measurement
    if not m.measured:
        return m.tokens + sum(pending_sizes) + outside, outside
    return m.tokens + sum(pending_sizes), m.tokens - m.local


def shape_request(
    session: Session,
    pending: Sequence[ModelMessage],
    pending_sizes: Sequence[int],
    *,
    window: int,
    lv: Levels,
    rebase: bool,
    outside: int = 0,
) -> Shaped:
    """Tier 1, then tier 3, on `session.history + pending` (see the module docstring).

    `rebase` says the run's own message list is stale (a mid-run checkpoint replaced the session's
    history), so the request must be rebuilt from the session even when no tier applies. `outside`:
    the estimate of the request's tool definitions (`measure_request`): before the first measured
    response they count toward the window like the bias they later are, so a first request with many
    tools is not sent over the window either.
    """
    settings = session.store.settings
    tokens, bias = measure_request(session, pending_sizes, outside)
    base: list[ModelMessage] | None = None
    sizes: list[int] | None = None
    tier, elided, events = 0, 0, []
    if settings.compaction_enabled and over_threshold(tokens, lv.micro):
        view = cascade.micro_view(session, lv.micro)
        base, sizes = list(view.messages), list(view.sizes)
        elided = view.tokens_before - view.tokens_after
        if view.blanked:
            tier = 1
            events.append(
                ContextMicrocompacted(
                    tokens_before=view.tokens_before + sum(pending_sizes),
                    tokens_after=view.tokens_after + sum(pending_sizes),
                    messages_before=len(base) + len(pending),
                    messages_after=len(base) + len(pending),
                )
            )
    sent = tokens - elided
    over_window = over_threshold(sent, window)
    if not settings.compaction_enabled:
        if over_window:  # no tier may run: refuse rather than send what cannot fit
            raise CompactionError(
                f"session {session.name!r}: the next request is {sent:,} tokens, over the {window:,}-token "
                "window, and compaction_enabled is off: enable it (or raise context_window_tokens); "
                "nothing was sent"
            )
    elif over_threshold(sent, lv.full) and (settings.ultimate_compaction_enabled or over_window):
        if base is None:
            base, sizes = session.history, session.sizes
        assert sizes is not None
        whole = [*base, *pending]
        budget = max(lv.full - max(bias, 0), MIN_ULTIMATE_BUDGET)
        result = ultimate_compact(
            whole,
            [*sizes, *pending_sizes],
            budget=budget,
            summaries=cascade.checkpoint_summaries(session),
            settings=settings,
        )
        fitted = result.tokens_after + max(bias, 0)
        if over_threshold(fitted, window):  # the bias alone leaves tier 3 no room (budget at its floor)
            raise CompactionError(
                f"session {session.name!r}: even the smallest request is {fitted:,} tokens, over the "
                f"{window:,}-token window ({bias:,} of them measured outside the messages: tool "
                "definitions, instructions): raise context_window_tokens or send fewer tools; "
                "nothing was sent"
            )
        elided = tokens - bias - result.tokens_after
        events.append(
            ContextUltimateCompacted(
                tokens_before=tokens - bias,
                tokens_after=result.tokens_after,
                messages_before=len(whole),
                messages_after=len(result.messages),
            )
        )
        session.note_sent(elided)
        return Shaped(result.messages, fitted, tokens, 3, events)
    session.note_sent(elided)  # the response's usage then measures this view; the next commit adds it back
    if base is None and not rebase:
        return Shaped(None, tokens, tokens, 0, events)
    messages = [*(base if base is not None else session.history), *pending]
    return Shaped(messages, sent, tokens, tier, events)
