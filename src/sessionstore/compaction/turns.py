"""Turn boundaries and tool call/return pairing: where a history may be cut without breaking it.

A cut at index `i` keeps `history[i:]`. It is *safe* when no tool call id has a part on both sides
(a call before the cut whose return, or retry, is after it). Providers reject a return without its
call, so every tier cuts only at safe points; tier 2 further cuts only at the start of a user turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.thresholds import over_threshold

__all__ = [
    "is_summary_request",
    "last_user_request",
    "orphans",
    "pairs_intact",
    "safe_cuts",
    "select_tail",
    "turn_starts",
]


def is_summary_request(msg: ModelMessage) -> bool:
    """A request carrying a compaction summary and no user prompt (what tiers 2 and 3 put first)."""
    if not isinstance(msg, ModelRequest):
        return False
    kinds = {type(p) for p in msg.parts}
    return CompactionPart in kinds and UserPromptPart not in kinds


def _has_user_prompt(msg: ModelMessage) -> bool:
    return isinstance(msg, ModelRequest) and any(isinstance(p, UserPromptPart) for p in msg.parts)


def turn_starts(history: Sequence[ModelMessage]) -> list[int]:
    """Indices of requests that start a user turn: those with a UserPromptPart, plus a summary at 0."""
    starts = [i for i, msg in enumerate(history) if _has_user_prompt(msg)]
    if history and is_summary_request(history[0]) and (not starts or starts[0] != 0):
        starts.insert(0, 0)
    return starts


def last_user_request(history: Sequence[ModelMessage]) -> int | None:
    """Index of the newest request holding a user prompt, or None when there is none."""
    for i in range(len(history) - 1, -1, -1):
        if _has_user_prompt(history[i]):
            return i
    return None


def _tool_ids(msg: ModelMessage) -> list[tuple[str, bool]]:
    """(tool_call_id, is_call) for the paired parts of a message. Provider-native calls and returns
    live together in one response, so they can never be split and are not tracked."""
    out: list[tuple[str, bool]] = []
    for part in msg.parts:
        if isinstance(part, ToolCallPart):
            out.append((part.tool_call_id, True))
        elif isinstance(part, ToolReturnPart):
            out.append((part.tool_call_id, False))
    return out


def orphans(history: Sequence[ModelMessage]) -> set[str]:
    """Tool call ids that have a call without any return/retry, or a return/retry without a call."""
    calls: set[str] = set()
    returns: set[str] = set()
    for msg in history:
        for tool_call_id, is_call in _tool_ids(msg):
            (calls if is_call else returns).add(tool_call_id)
    return calls ^ returns


def pairs_intact(history: Sequence[ModelMessage]) -> bool:
    """True when every ToolCallPart has its ToolReturnPart (or retry) and vice versa."""
    return not orphans(history)


def safe_cuts(history: Sequence[ModelMessage]) -> list[bool]:
    """`safe[i]` says whether keeping `history[i:]` splits no call/return pair; len = len(history)+1.

    Linear: each id spans [first, last] message index; cuts strictly inside a span are unsafe, marked
    with a difference array instead of per-cut scans.
    """
    spans: dict[str, list[int]] = {}
    for i, msg in enumerate(history):
        for tool_call_id, _ in _tool_ids(msg):
            span = spans.get(tool_call_id)
            if span is None:
                spans[tool_call_id] = [i, i]
            else:
                span[1] = i
    n = len(history)
    diff = [0] * (n + 2)
    for lo, hi in spans.values():
        if hi > lo:
            diff[lo + 1] += 1
            diff[hi + 1] -= 1
    safe: list[bool] = []
    running = 0
    for i in range(n + 1):
        running += diff[i]
        safe.append(running == 0)
    return safe


def select_tail(history: Sequence[ModelMessage], sizes: Sequence[int], budget: int) -> int:
    """Start index of the verbatim tail: the newest whole user turns within `budget` tokens.

    Cuts only at a turn start that splits no pair (or at 0, keeping everything). The newest such cut is
    taken whatever its size, so the last user request is always in the tail even when it alone is
    larger than the budget (tier 3 deals with size). Returns 0 when the whole history is the tail.
    """
    if not history:
        return 0
    safe = safe_cuts(history)
    candidates = [i for i in turn_starts(history) if safe[i]]
    if not candidates or candidates[0] != 0:
        candidates.insert(0, 0)
    start = candidates[-1]
    suffix = sum(sizes[start:])
    for cut in reversed(candidates[:-1]):
        suffix += sum(sizes[cut:start])
        if over_threshold(suffix, budget):
            break
        start = cut
    return start
