"""Tier 2, full compaction: one summary of everything before the verbatim tail (DESIGN §7).

The new history is `[summary request, *tail]`. The summary request holds the skeleton summary as a
`CompactionPart`, preceded by the `SystemPromptPart`s of the summarized messages: pydantic-ai adds
system prompts only to an empty history, so dropping them with the head would silently lose them.
A previous summary is element 0 of the next input, so successive compactions merge.

When nothing precedes the tail under the budget rule (everything fits), the tail shrinks to the last
user turn alone, so a manual compaction still compacts. When the newest user turn alone is over the
budget, or the history is that one turn, the cut falls on a step boundary inside it and its user request
stays verbatim first: `[summary, user request, *newest steps]` (`turns.choose_tail`). Only a single turn
with no tool step (nothing can precede its tail without splitting it) raises `CompactionError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, SystemPromptPart
from pydantic_ai.models import Model

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_message
from sessionstore.compaction.turns import (
    Tail,
    choose_tail,
    in_turn_cut,
    newest_request,
    safe_cuts,
    turn_starts,
)
from sessionstore.errors import NothingToCompact
from sessionstore.summary.summarizer import summarize

__all__ = [
    "SUMMARY_SHARE",
    "FullResult",
    "full_compact",
    "split_point",
    "summary_budget",
    "summary_message",
    "system_parts",
]


SUMMARY_SHARE = 4
"""A summary may take at most 1/SUMMARY_SHARE of the full level: with the verbatim tail (at most half
of it) that leaves a quarter for the turns before the next compaction."""


def summary_budget(settings: Settings, full_level: int) -> int:
    """Tokens a tier-2 summary may use: `summary_max_tokens + summary_user_tokens`, lowered to a
    quarter of the full level (DESIGN §10)."""
    return max(
        min(settings.summary_max_tokens + settings.summary_user_tokens, full_level // SUMMARY_SHARE), 1
    )


@dataclass(frozen=True)
class FullResult:
    """A compacted history `[summary request, *tail]` with its per-message estimates."""

    messages: list[ModelMessage]
    sizes: list[int]
    tokens_before: int
    tokens_after: int
    summary: str


def system_parts(messages: Sequence[ModelMessage]) -> list[SystemPromptPart]:
    """The distinct system prompts of `messages`, oldest first (carried into the summary request)."""
    seen: dict[str, SystemPromptPart] = {}
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, SystemPromptPart) and part.content not in seen:
                    seen[part.content] = part
    return list(seen.values())


def summary_message(summary: str, carried: Sequence[SystemPromptPart] = ()) -> ModelRequest:
    """The request that replaces a compacted head: carried system prompts, then the summary."""
    return ModelRequest(parts=[*carried, CompactionPart(content=summary)])


def split_point(history: Sequence[ModelMessage], sizes: Sequence[int], budget: int) -> Tail:
    """Where tier 2 cuts: `choose_tail`; when that keeps everything, the last safe user-turn start, or
    for a single turn the earliest step boundary inside it that fits (so a manual compaction compacts)."""
    tail = choose_tail(history, sizes, budget)
    if tail.start == 0:
        safe = safe_cuts(history)
        starts = [i for i in turn_starts(history) if safe[i]]
        if starts and starts[-1] > 0:
            tail = Tail(starts[-1])
        elif (request := newest_request(history, safe)) is not None and (
            cut := in_turn_cut(history, sizes, request, budget)
        ) is not None:
            tail = Tail(cut, request)
    if tail.start == 0:
        raise NothingToCompact(
            f"nothing to compact: the history ({len(history)} messages, {sum(sizes)} tokens) is one user "
            "turn without a tool step that stays verbatim; only ultimate compaction (tier 3) can shorten it"
        )
    return tail


def _result(history: Sequence[ModelMessage], sizes: Sequence[int], tail: Tail, summary: str) -> FullResult:
    summarized = [m for i, m in enumerate(history[: tail.start]) if i != tail.request]
    head = summary_message(summary, system_parts(summarized))
    messages = [head, *tail.messages(history)]
    new_sizes = [estimate_message(head), *tail.sizes(sizes)]
    return FullResult(messages, new_sizes, sum(sizes), sum(new_sizes), summary)


def _check(history: Sequence[ModelMessage], sizes: Sequence[int]) -> None:
    if len(sizes) != len(history):
        raise ValueError(f"sizes has {len(sizes)} entries for {len(history)} messages")


def full_compact(
    history: Sequence[ModelMessage],
    sizes: Sequence[int],
    *,
    settings: Settings,
    full_level: int,
    focus: str | None = None,
    model: Model | str | None = None,
    recall: str | None = None,
) -> FullResult:
    """Summarize everything before the tail (budget: min(keep_recent_tokens, full_level // 2)).

    `recall` (`NAME@SEQ`, the commit before this compaction) is named on the summary's last line as
    where the replaced messages can be read. Raises `CompactionError` when the summary fails or there
    is nothing before the tail; the input is never modified, so a failure leaves the caller's history
    as it was.
    """
    _check(history, sizes)
    tail = split_point(history, sizes, min(settings.keep_recent_tokens, full_level // 2))
    summary = summarize(
        [m for i, m in enumerate(history[: tail.start]) if i != tail.request],  # the request stays verbatim
        settings=settings,
        focus=focus,
        model=model,
        max_tokens=summary_budget(settings, full_level),
        recall=recall,
    )
    return _result(history, sizes, tail, summary)
