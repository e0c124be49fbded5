"""Tier 3, ultimate compaction: rebuild from checkpoint summaries and hard-fit the budget (DESIGN §7).

No LLM. The result is one summary request (the newest summary, with up to `ultimate_keep_checkpoints`
earlier ones quoted at its end; 0 = all) followed by the newest messages, and it always fits: the sum of
its message estimates is not over `budget`, for any `budget >= MIN_ULTIMATE_BUDGET`.

Fitting, in order, stopping as soon as the total fits:
1. the summary request is limited to a quarter of the budget (earlier summaries dropped oldest first,
   then sections shortened, headings kept);
2. oversized parts are shortened head+tail with a marker to an eighth of the budget;
3. the oldest whole user turns are dropped (cuts only where no call/return pair is split);
4. inside the newest turn, the oldest tool rounds after its first request are dropped (pair-safe);
5. every part is shortened further, halving the cap;
6. last resort: the newest turn's first request alone, rebuilt as one text prompt shortened to fit.
The newest user request therefore always survives, verbatim when it fits and head+tail when it alone
is larger than the budget. With no summaries at all, the dropped messages are summarized offline
so nothing vanishes without a trace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.thresholds import over_threshold
from sessionstore.accounting.tokens import MESSAGE_OVERHEAD, PART_OVERHEAD, estimate_message
from sessionstore.compaction.full import FullResult, summary_message, system_parts
from sessionstore.compaction.shrink import shrink_message, shrink_part, shrink_summary
from sessionstore.compaction.turns import safe_cuts, turn_starts
from sessionstore.errors import CompactionError
from sessionstore.summary.offline import summarize_offline
from sessionstore.summary.skeleton import is_summary_request
from sessionstore.summary.text import shorten_tokens, user_text

__all__ = ["MIN_PART_TOKENS", "MIN_ULTIMATE_BUDGET", "merge_summaries", "ultimate_compact"]

MIN_ULTIMATE_BUDGET = 256
"""Smallest budget tier 3 accepts: room for the bare skeleton (~60 tokens) and a shortened request."""

MIN_PART_TOKENS = 16


def merge_summaries(summaries: Sequence[str], keep_earlier: int) -> str:
    """The newest summary, then the kept earlier ones (newest first) quoted so their headings stay inert."""
    if not summaries:
        return ""
    earlier = list(summaries[:-1])
    if keep_earlier > 0:
        earlier = earlier[-keep_earlier:]
    text = summaries[-1].rstrip() + "\n"
    for age, older in enumerate(reversed(earlier), start=1):
        quoted = "\n".join(f"> {line}" if line else ">" for line in older.strip().splitlines())
        text += f"\n#### Earlier checkpoint summary (-{age})\n{quoted}\n"
    return text


def _leading_summary(history: Sequence[ModelMessage]) -> tuple[str | None, list[SystemPromptPart]]:
    if history and is_summary_request(history[0]):
        content = next((p.content for p in history[0].parts if isinstance(p, CompactionPart)), None)
        return content, system_parts(history[:1])
    return None, []


def _summary_within(summaries: list[str], keep: int, share: int) -> str:
    """The merged summary within `share` tokens: drop earlier summaries oldest first, then shorten."""
    if keep > 0:
        summaries = summaries[-(keep + 1) :]
    while len(summaries) > 1 and over_threshold(
        estimate_message(summary_message(merge_summaries(summaries, 0))), share
    ):
        summaries = summaries[1:]
    return shrink_summary(merge_summaries(summaries, 0), max(share - MESSAGE_OVERHEAD - PART_OVERHEAD, 1))


def _head(summary: str, carried: list[SystemPromptPart], share: int) -> list[ModelMessage]:
    """The summary request within `share` tokens: carried system prompts shortened, or dropped if need be."""
    if not summary and not carried:
        return []
    base = estimate_message(summary_message(summary))
    if carried:
        cap = max((share - base) // len(carried), MIN_PART_TOKENS)
        msg = summary_message(summary, [shrink_part(p, cap) for p in carried])
        if not over_threshold(estimate_message(msg), share):
            return [msg]
    return [summary_message(summary)]


def _fit_turns(body: list[ModelMessage], sizes: list[int], room: int) -> tuple[list[ModelMessage], list[int]]:
    """Drop the oldest whole turns, then the oldest rounds after the newest turn's first request;
    returns the kept messages and their sizes."""
    safe = safe_cuts(body)
    starts = [0, *(i for i in turn_starts(body) if safe[i] and i > 0)]
    suffix = sum(sizes)
    k = 0
    while k < len(starts) - 1 and over_threshold(suffix, room):
        suffix -= sum(sizes[starts[k] : starts[k + 1]])
        k += 1
    first = starts[k]
    kept, kept_sizes = body[first:], sizes[first:]
    if not over_threshold(suffix, room) or len(kept) <= 1:
        return kept, kept_sizes
    # Removing kept[1:j] is pair-safe when j is a safe cut: a turn's first request answers no call.
    rest = sum(kept_sizes[1:])
    for j in range(2, len(kept) + 1):
        rest -= kept_sizes[j - 1]
        if safe[first + j] and not over_threshold(kept_sizes[0] + rest, room):
            return [kept[0], *kept[j:]], [kept_sizes[0], *kept_sizes[j:]]
    return kept[:1], kept_sizes[:1]


def _last_resort(first: ModelMessage, room: int) -> list[ModelMessage]:
    """The newest turn's first request as one shortened text prompt (or nothing if it has no prompt)."""
    prompts = [p for p in first.parts if isinstance(p, UserPromptPart)]
    if not prompts:
        return []
    text = "\n\n".join(user_text(p) for p in prompts)
    allowance = max(room - MESSAGE_OVERHEAD - PART_OVERHEAD, 0)
    part = dataclasses.replace(prompts[-1], content=shorten_tokens(text, allowance))
    return [ModelRequest(parts=[part], timestamp=getattr(first, "timestamp", None))]


def ultimate_compact(
    history: Sequence[ModelMessage],
    sizes: Sequence[int],
    *,
    budget: int,
    summaries: Sequence[str],
    settings: Settings,
) -> FullResult:
    """Rebuild `history` from `summaries` (oldest first) and its newest messages, fitting `budget`."""
    if over_threshold(MIN_ULTIMATE_BUDGET, budget):
        raise CompactionError(
            f"ultimate compaction needs a budget of at least {MIN_ULTIMATE_BUDGET} tokens, got {budget}; "
            "raise the context window or the compaction threshold"
        )
    if len(sizes) != len(history):
        raise ValueError(f"sizes has {len(sizes)} entries for {len(history)} messages")
    leading, carried = _leading_summary(history)
    offset = 1 if leading is not None else 0
    body = list(history[offset:])
    body_sizes = list(sizes[offset:])
    chosen = [s for s in summaries if s]
    if leading and leading not in chosen:
        chosen.append(leading)  # the history's own summary is newer than a journal that lacks it
    if not chosen:
        starts = turn_starts(body)
        dropped = body[: starts[-1]] if starts else []
        chosen = [summarize_offline(dropped, settings=settings, max_tokens=budget // 4)] if dropped else []
    carried += [p for p in system_parts(body) if p.content not in {c.content for c in carried}]
    summary = _summary_within(chosen, settings.ultimate_keep_checkpoints, budget // 4) if chosen else ""
    head = _head(summary, carried, budget // 3)
    head_sizes = [estimate_message(m) for m in head]
    room = budget - sum(head_sizes)

    cap = max(budget // 8, MIN_PART_TOKENS)
    kept = body
    while True:
        for i, msg in enumerate(kept):
            if over_threshold(body_sizes[i], cap):  # a message within the cap has no part above it
                kept[i] = shrink_message(msg, cap)
                body_sizes[i] = estimate_message(kept[i])  # only shortened messages are re-estimated
        kept, body_sizes = _fit_turns(kept, body_sizes, room)
        if not over_threshold(sum(body_sizes), room) or cap == MIN_PART_TOKENS:
            break
        cap = max(cap // 2, MIN_PART_TOKENS)
    if over_threshold(sum(body_sizes), room) and kept:
        kept = _last_resort(kept[0], room)
        body_sizes = [estimate_message(m) for m in kept]
    messages = [*head, *kept]
    new_sizes = [*head_sizes, *body_sizes]
    if over_threshold(sum(new_sizes), budget):
        raise CompactionError(
            f"ultimate compaction could not fit {budget} tokens ({sum(new_sizes)} after truncation); "
            "raise the context window"
        )
    return FullResult(messages, new_sizes, sum(sizes), sum(new_sizes), summary)
