"""Tier 1, microcompaction: blank old tool output in the view, no LLM, nothing persisted (DESIGN §7).

Only the *content* of plain `ToolReturnPart`s (any outcome, including 'retried') and
`RetryFeedbackPart`s is replaced, through `dataclasses.replace`; no message or part is ever removed, so
no call/return pair can be orphaned. Provider-native returns (`NativeToolReturnPart`) and typed
capability returns (subclasses of `ToolReturnPart` such as tool-search or capability-load returns, whose
content has a fixed shape a string would break) are left alone. A deprecated `RetryPromptPart` built by
hand (loading never produces one) is left alone too.

Order: lowest `tool_priority` first; a tool missing from `tool_priority` has priority 0, and so has
`RetryFeedbackPart` (it answers no tool), so negative priorities go earlier and positive ones later.
Within a priority, oldest first. Never a `protected_tools` tool, never a message any of whose tokens
lie inside the newest `micro_keep_recent_tokens`. Stops as soon as the total is not over the level.

Cost: one pass to collect candidates, and per blank two part estimates (the old and the new part), so
the whole call is linear in the history; nothing else is re-tokenized.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequestPart,
    ModelResponsePart,
    RetryFeedbackPart,
    ToolReturnPart,
)

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.thresholds import over_threshold
from sessionstore.accounting.tokens import estimate_part

__all__ = ["ELIDED", "MicroResult", "microcompact", "recent_start"]

ELIDED = "[tool output elided by microcompaction]"


@dataclass(frozen=True)
class MicroResult:
    """The micro view: same messages and parts, old tool output blanked, with updated estimates."""

    messages: list[ModelMessage]
    sizes: list[int]
    tokens_before: int
    tokens_after: int
    blanked: int


def recent_start(sizes: Sequence[int], keep_tokens: int) -> int:
    """First index of the protected recent window: messages after it hold fewer than `keep_tokens`.

    A message is protected when any of its tokens lies in the newest `keep_tokens`, i.e. when the
    messages after it total less than `keep_tokens`. The window depends only on the protected messages'
    sizes, which tier 1 never changes, so re-applying it finds the same window (idempotence).
    """
    after = 0
    index = len(sizes)
    while index > 0 and over_threshold(keep_tokens, after):
        index -= 1
        after += sizes[index]
    return index


def _blankable(part: object, protected: frozenset[str]) -> bool:
    if type(part) is ToolReturnPart:
        return part.tool_name not in protected and part.content != ELIDED
    if type(part) is RetryFeedbackPart:
        return part.content != ELIDED
    return False


def _priority(part: object, priorities: dict[str, int]) -> int:
    return priorities.get(part.tool_name, 0) if isinstance(part, ToolReturnPart) else 0


def microcompact(
    history: Sequence[ModelMessage], sizes: Sequence[int], *, level: int, settings: Settings
) -> MicroResult:
    """Blank old tool output until the history is not over `level` (or nothing blankable remains).

    `sizes[i]` must be the estimate of `history[i]` (as persisted with each commit). The input is not
    modified; unchanged messages are shared with the result.
    """
    if len(sizes) != len(history):
        raise ValueError(f"sizes has {len(sizes)} entries for {len(history)} messages")
    messages = list(history)
    new_sizes = list(sizes)
    before = sum(new_sizes)
    total = before
    if not over_threshold(total, level):
        return MicroResult(messages, new_sizes, before, total, 0)

    protected = frozenset(settings.protected_tools)
    buckets: dict[int, list[tuple[int, int]]] = {}
    for i in range(recent_start(new_sizes, settings.micro_keep_recent_tokens)):
        for j, part in enumerate(messages[i].parts):
            if _blankable(part, protected):
                buckets.setdefault(_priority(part, settings.tool_priority), []).append((i, j))

    blanked = 0
    edited: dict[int, list[ModelRequestPart | ModelResponsePart]] = {}
    for i, j in chain.from_iterable(buckets[priority] for priority in sorted(buckets)):
        if not over_threshold(total, level):
            break
        parts = edited.get(i)
        if parts is None:  # copy each message's parts once, however many of them get blanked
            parts = edited[i] = list(messages[i].parts)
        old = parts[j]
        parts[j] = dataclasses.replace(old, content=ELIDED)
        delta = estimate_part(parts[j]) - estimate_part(old)
        new_sizes[i] += delta
        total += delta
        blanked += 1
    for i, parts in edited.items():
        messages[i] = dataclasses.replace(messages[i], parts=parts)
    return MicroResult(messages, new_sizes, before, total, blanked)
