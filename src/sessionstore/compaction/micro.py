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

**Across turns** (`MicroState`): a live session keeps one state and feeds it each turn's messages.
Decisions for old messages stand: a part blanked once stays blanked (so the prefix a provider caches
stays the same from one request to the next), and each turn only moves what moved: the new messages,
the protected window's start, and the stopping point. The work after a turn is the new messages, the
parts that left the protected window, and the blanks made now; never the whole history. With one
priority for every tool (the default) and the same level, the state after any sequence of turns
equals `microcompact` of the whole history from scratch (a property test pins it), so a reopened
session (which runs `microcompact`, or a fresh state) sends the same view. With `tool_priority` set, a
new low-priority output no longer un-blanks a higher-priority one blanked earlier, so the two may
differ; both are valid tier-1 views (only eligible parts blanked, not over the level unless nothing
eligible remains).
"""

from __future__ import annotations

import dataclasses
from collections import deque
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

__all__ = ["ELIDED", "MicroResult", "MicroState", "microcompact", "recent_start"]

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


def _blank(parts: list[ModelRequestPart | ModelResponsePart], j: int) -> int:
    """Blank `parts[j]` in place; returns the change of its estimate (re-estimating that part only)."""
    old = parts[j]
    parts[j] = dataclasses.replace(old, content=ELIDED)
    return estimate_part(parts[j]) - estimate_part(old)


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
        delta = _blank(parts, j)
        new_sizes[i] += delta
        total += delta
        blanked += 1
    for i, parts in edited.items():
        messages[i] = dataclasses.replace(messages[i], parts=parts)
    return MicroResult(messages, new_sizes, before, total, blanked)


class MicroState:
    """Tier 1 kept across the turns of one history (see "Across turns" above).

    Feed it the stored messages as they are appended (`extend`), then `apply(level)` after each turn.
    `view()` is what to send. After a reset point (a compaction, a checkout, a reload) start a new
    state from the new history: a state only ever grows.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._protected = frozenset(settings.protected_tools)
        self._messages: list[ModelMessage] = []
        self._sizes: list[int] = []
        self._stored_total = 0
        self._total = 0
        self._collected = 0
        """Messages before this index have had their blankable parts queued in `_pending`."""
        self._pending: dict[int, deque[tuple[int, int]]] = {}
        """Blankable (message, part) pairs not blanked yet, by priority, oldest first."""
        self.blanked = 0
        """Parts blanked so far (they stay blanked)."""
        self._first: ModelMessage | None = None
        self._last: ModelMessage | None = None

    @classmethod
    def of(cls, history: Sequence[ModelMessage], sizes: Sequence[int], settings: Settings) -> MicroState:
        """A state holding `history` (with its persisted `sizes`), nothing blanked yet."""
        state = cls(settings)
        state.extend(history, sizes)
        return state

    def __len__(self) -> int:
        return len(self._messages)

    def follows(self, history: Sequence[ModelMessage]) -> bool:
        """True when `history` starts with the very messages (by identity) this state was fed: it may
        then `extend` with the rest. False after a reset point, which replaces the history's objects."""
        n = len(self._messages)
        if n == 0:
            return True
        return n <= len(history) and history[0] is self._first and history[n - 1] is self._last

    @property
    def tokens_before(self) -> int:
        """The estimate of the stored history (nothing blanked)."""
        return self._stored_total

    @property
    def tokens_after(self) -> int:
        """The estimate of the view."""
        return self._total

    def extend(self, messages: Sequence[ModelMessage], sizes: Sequence[int]) -> None:
        """Append stored messages with their estimates (`sizes[i]` of `messages[i]`): O(len(messages))."""
        if len(sizes) != len(messages):
            raise ValueError(f"sizes has {len(sizes)} entries for {len(messages)} messages")
        if messages:
            if not self._messages:
                self._first = messages[0]
            self._last = messages[-1]
        self._messages.extend(messages)
        self._sizes.extend(sizes)
        added = sum(sizes)
        self._stored_total += added
        self._total += added

    def apply(self, level: int) -> int:
        """Blank old tool output until the view is not over `level`; returns how many were blanked now.

        Parts that left the protected window since the last call become eligible; earlier blanks stay.
        """
        start = recent_start(self._sizes, self.settings.micro_keep_recent_tokens)  # protected: unblanked
        if start > self._collected:
            priorities = self.settings.tool_priority
            for i in range(self._collected, start):
                for j, part in enumerate(self._messages[i].parts):
                    if _blankable(part, self._protected):
                        self._pending.setdefault(_priority(part, priorities), deque()).append((i, j))
            self._collected = start
        if not over_threshold(self._total, level):
            return 0
        now = 0
        for priority in sorted(self._pending):
            queue = self._pending[priority]
            while queue and over_threshold(self._total, level):
                i, j = queue.popleft()
                parts = list(self._messages[i].parts)
                delta = _blank(parts, j)
                self._messages[i] = dataclasses.replace(self._messages[i], parts=parts)
                self._sizes[i] += delta
                self._total += delta
                now += 1
            if not queue:
                del self._pending[priority]
            if not over_threshold(self._total, level):
                break
        self.blanked += now
        return now

    def view(self) -> list[ModelMessage]:
        """The messages to send, old tool output blanked (a new list; the messages are shared)."""
        return list(self._messages)

    def result(self) -> MicroResult:
        """The state as a `MicroResult` (what `microcompact` returns), copying the lists."""
        return MicroResult(
            list(self._messages), list(self._sizes), self._stored_total, self._total, self.blanked
        )
