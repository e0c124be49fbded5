"""Per-request protection (DESIGN §7 "Inside a run"): what ONE model request of a run may send.

The capability in `runs.py` keeps the session's stored history equal to the run's messages up to the
newest response (it commits every step before the next request), so what a request is about to send
is `session.history` plus the run's `pending` messages (the new prompt, on the first request). That is
measured without tokenizing anything stored (issue 16, item 0): the session's measurement (the
measured prefix of its newest response plus the persisted sizes after it, DESIGN §6) plus the local
estimates of `pending`, against the calibrated local estimate of the whole request (tool definitions
included): the larger decides (`measure_request`). pydantic-ai merges adjacent requests only after
this hook, so the sizes used here are the stored ones, one per stored message, never shifted by a merge.

`shape_request` applies the in-memory tiers to what is sent; the mid-run checkpoint (tier 2, which
writes) is the capability's job and happens before it:

    over micro          -> tier 1 on what is sent (the session's micro view, plus pending)
    still over full     -> tier 3 on what is sent (request only; the log keeps the history)
    over the window     -> tier 3 even when `ultimate_compaction_enabled` is off; with compaction
                           disabled altogether, `CompactionError` instead of a request that cannot fit

`compaction_enabled` off means no tier at all, as in the cascade after a turn: what is sent is the
stored history plus pending, unchanged, or `CompactionError` when that is over the window. A provider
measurement above the calibrated estimate (a hidden prompt: the excess) is budgeted for when what is
sent is shaped; when it alone leaves tier 3 no room under the window, `CompactionError` too, never an
oversized request.

So no request leaves over the resolved window, and the stored history is never changed here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..accounting.calibration import decide, scale
from ..accounting.thresholds import Levels, over_threshold
from ..compaction.events import CompactionEvent, ContextMicrocompacted, ContextUltimateCompacted
from ..compaction.ultimate import MIN_ULTIMATE_BUDGET, ultimate_compact
from ..errors import CompactionError
from ..porcelain.session import cascade

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..porcelain.session.session import Session

__all__ = ["RequestMeasure", "Shaped", "measure_request", "shape_request"]


@dataclass(frozen=True)
class RequestMeasure:
    """The decision figure of one request (DESIGN §6) and how to re-figure it once what is sent changes.

    `local` is the local estimate of its messages (the stored history's persisted sizes plus the pending
    estimates), `outside` of what it carries beside them (tool definitions), `factor` the session's
    decision factor (>= 1.0). `tokens` = max(the measured figure, the calibrated estimate of
    `local + outside`); `excess` is how far the measured figure is above that estimate (0 when it is
    not, or when nothing is measured): tokens the provider counts that no local estimate explains
    (hidden prompts), kept when what is sent is shaped."""

    tokens: int
    local: int
    outside: int
    factor: float
    excess: int
    measured: int | None

    @property
    def figure(self) -> str:
        """`"measured"` when the measured prefix decides, else `"estimate"`."""
        return "measured" if self.excess > 0 or self.measured == self.tokens else "estimate"

    def fitted(self, messages_local: int) -> int:
        """The decision figure of the same request with messages of `messages_local` local tokens."""
        return scale(messages_local + self.outside, self.factor) + self.excess

    def budget(self, level: int) -> int:
        """The most local message tokens a request may carry and stay at `level` (`fitted` inverted)."""
        return math.floor((level - self.excess) / self.factor) - self.outside


@dataclass(frozen=True)
class Shaped:
    """What protection decided for one request.

    `messages` None means "send what pydantic-ai prepared, unchanged" (nothing applied and the run's
    own list is current). `tokens` is the decision figure of what is sent (what the window is
    compared with), `figure` which figure that is (`"measured"` or `"estimate"`); `measured` the same
    before protection; `local` the plain local estimate of what is sent (messages and tool
    definitions: what a response's usage calibrates against); `tier` the highest tier applied (0 none,
    1 micro, 3 ultimate; a mid-run checkpoint is recorded by the caller as 2)."""

    messages: list[ModelMessage] | None
    tokens: int
    measured: int
    tier: int
    events: list[CompactionEvent] = field(default_factory=list)
    local: int = 0
    figure: str = "estimate"


def measure_request(session: Session, pending_sizes: Sequence[int], outside: int = 0) -> RequestMeasure:
    """The decision figure of `session.history + pending`, without tokenizing anything stored.

    Measured: the session's measured prefix plus the calibrated estimate of the messages after it and
    of the pending ones; estimated: the calibrated local estimate of the messages plus `outside` (the
    request's tool definitions). Decisions take the larger (DESIGN §6), so a usage that is present
    but wrong (FunctionModel's word count, 50 tokens when streaming) never lets a request through
    that the local estimate says is over a level."""
    m = session.measurement
    pending = sum(pending_sizes)
    local = m.local + pending
    d = decide(local + outside, m.factor, None if m.measured_tokens is None else m.measured_tokens, 0)
    measured = None if d.measured is None else d.measured + scale(pending, m.factor)
    tokens = max(d.estimate, measured or 0)
    return RequestMeasure(tokens, local, outside, m.factor, max(0, tokens - d.estimate), measured)


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
    the estimate of the request's tool definitions (`measure_request`): they count toward the window
    in the estimate, so a first request with many tools is not sent over the window either.
    """
    settings = session.store.settings
    req = measure_request(session, pending_sizes, outside)
    tokens = req.tokens
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
    sent = req.fitted(req.local - elided) if elided else tokens
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
        result = ultimate_compact(
            whole,
            [*sizes, *pending_sizes],
            budget=max(req.budget(lv.full), MIN_ULTIMATE_BUDGET),
            summaries=cascade.checkpoint_summaries(session),
            settings=settings,
        )
        fitted = req.fitted(result.tokens_after)
        if over_threshold(fitted, window):  # what is measured outside the messages leaves tier 3 no room
            raise CompactionError(
                f"session {session.name!r}: even the smallest request is {fitted:,} tokens, over the "
                f"{window:,}-token window ({fitted - result.tokens_after:,} of them outside the messages: "
                "tool definitions, instructions, the provider's own count): raise context_window_tokens "
                "or send fewer tools; nothing was sent"
            )
        events.append(
            ContextUltimateCompacted(
                tokens_before=req.local,
                tokens_after=result.tokens_after,
                messages_before=len(whole),
                messages_after=len(result.messages),
            )
        )
        session.note_sent(req.local - result.tokens_after)
        return Shaped(result.messages, fitted, tokens, 3, events, result.tokens_after + outside, req.figure)
    session.note_sent(elided)  # the response's usage then measures this view; the next commit adds it back
    if base is None and not rebase:
        return Shaped(None, tokens, tokens, 0, events, req.local + outside, req.figure)
    messages = [*(base if base is not None else session.history), *pending]
    return Shaped(messages, sent, tokens, tier, events, req.local - elided + outside, req.figure)
