"""Turn boundaries and tool call/return pairing: where a history may be cut without breaking it.

A cut at index `i` keeps `history[i:]`. It is *safe* when no tool call/return pair has a part on both
sides. Pairs are matched by POSITION, not by a global id map: a return (or retried return) answers the
newest call with its id at or before it. Tool-call ids reused across turns (FunctionModels and some
providers restart them per run) therefore pair within their own turn and never span the history.
Providers reject a return without its call, so every tier cuts only at safe points; tier 2 cuts at the
start of a user turn, or, when the newest turn alone is over its budget (a long tool loop), on a step
boundary inside it with the turn's user request kept verbatim (`choose_tail`, DESIGN §7).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.thresholds import over_threshold
from sessionstore.summary.skeleton import is_summary_request

__all__ = [
    "SafeFromEnd",
    "Tail",
    "choose_tail",
    "in_turn_cut",
    "last_user_request",
    "newest_request",
    "orphans",
    "pairs_intact",
    "safe_cuts",
    "select_tail",
    "step_boundaries",
    "turn_starts",
]


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


def _pairs(history: Sequence[ModelMessage]) -> tuple[list[list[int]], set[str]]:
    """Positional pairing: ([first, last] message span of each call with its returns, orphan ids).

    A return pairs with the newest call with its id at or before it (a second return of the same call,
    e.g. after a retry, extends that call's span); a call answered by no return, or a return with no
    call before it, is an orphan.
    """
    spans: list[list[int]] = []
    answered: list[bool] = []
    newest: dict[str, int] = {}  # id -> index into spans of the newest call with that id
    orphan: set[str] = set()
    for i, msg in enumerate(history):
        for tool_call_id, is_call in _tool_ids(msg):
            if is_call:
                previous = newest.get(tool_call_id)
                if previous is not None and not answered[previous]:
                    orphan.add(tool_call_id)  # an earlier call with this id was never answered
                newest[tool_call_id] = len(spans)
                spans.append([i, i])
                answered.append(False)
            else:
                k = newest.get(tool_call_id)
                if k is None:
                    orphan.add(tool_call_id)
                else:
                    spans[k][1] = i
                    answered[k] = True
    orphan.update(tool_call_id for tool_call_id, k in newest.items() if not answered[k])
    return spans, orphan


def orphans(history: Sequence[ModelMessage]) -> set[str]:
    """Tool call ids with a call no return answers, or a return with no call before it."""
    return _pairs(history)[1]


def pairs_intact(history: Sequence[ModelMessage]) -> bool:
    """True when every ToolCallPart has its ToolReturnPart after it and every return its call."""
    return not orphans(history)


def safe_cuts(history: Sequence[ModelMessage]) -> list[bool]:
    """`safe[i]` says whether keeping `history[i:]` splits no call/return pair; len = len(history)+1.

    Linear: each pair spans [call, last return] message indices; cuts strictly inside a span are
    unsafe, marked with a difference array instead of per-cut scans.
    """
    spans, _ = _pairs(history)
    n = len(history)
    diff = [0] * (n + 2)
    for lo, hi in spans:
        if hi > lo:
            diff[lo + 1] += 1
            diff[hi + 1] -= 1
    safe: list[bool] = []
    running = 0
    for i in range(n + 1):
        running += diff[i]
        safe.append(running == 0)
    return safe


class SafeFromEnd(Sequence[bool]):
    """`safe_cuts(history)` read lazily from the newest message back: `safe[i]` walks the history back
    only as far as `i` (and, while a return at or after `i` waits for its call, to that call), so
    choosing a tail costs the tail's messages, not the history's. Same answer as `safe_cuts` for every
    `i` (tests/compaction/test_turns.py checks it for any history).

    Walking back, a return's id waits ("pending") until a call with that id is met: forward, that call
    is the newest one at or before the return, so they pair. The cut before message `i` is unsafe
    exactly when an id pending at `i` meets its call below `i`; one that never does is an orphan return,
    which pairs with nothing and splits nothing.
    """

    def __init__(self, history: Sequence[ModelMessage]) -> None:
        self._history = history
        self._next = len(history) - 1  # the next message to walk back over
        self._waiting: set[str] = set()  # return ids after `_next` not yet met by their call
        self._pending: dict[int, frozenset[str]] = {}  # i -> ids waiting when the walk reached i
        self._lowest_call: dict[str, int] = {}  # id -> lowest index walked with a call of it

    def __len__(self) -> int:
        return len(self._history) + 1

    def _step(self) -> None:
        i = self._next
        for tool_call_id, is_call in reversed(_tool_ids(self._history[i])):
            if is_call:
                self._waiting.discard(tool_call_id)
                self._lowest_call[tool_call_id] = i
            else:
                self._waiting.add(tool_call_id)
        if self._waiting:
            self._pending[i] = frozenset(self._waiting)
        self._next = i - 1

    def _called_below(self, tool_call_id: str, i: int) -> bool:
        while self._lowest_call.get(tool_call_id, i) >= i:
            if self._next < 0:
                return False
            self._step()
        return True

    def __getitem__(self, i: int) -> bool:  # type: ignore[override]
        if not 0 <= i <= len(self._history):
            raise IndexError(i)
        while self._next >= i:
            self._step()
        return not any(self._called_below(x, i) for x in self._pending.get(i, ()))


def _candidates_from_end(history: Sequence[ModelMessage], safe: Sequence[bool]) -> Iterator[int]:
    """The cuts `select_tail` may take, newest first: safe user-turn starts, then 0."""
    for i in range(len(history) - 1, 0, -1):
        if _has_user_prompt(history[i]) and safe[i]:
            yield i
    yield 0


def select_tail(
    history: Sequence[ModelMessage], sizes: Sequence[int], budget: int, safe: Sequence[bool] | None = None
) -> int:
    """Start index of the verbatim tail: the newest whole user turns within `budget` tokens.

    Cuts only at a turn start that splits no pair (or at 0, keeping everything). The newest such cut is
    taken whatever its size, so the last user request is always in the tail even when it alone is
    larger than the budget (`choose_tail` then cuts inside it). Returns 0 when the whole history is the
    tail. Walks back from the newest message and stops at the first cut over `budget`.
    """
    if not history:
        return 0
    candidates = _candidates_from_end(history, SafeFromEnd(history) if safe is None else safe)
    start = next(candidates)
    suffix = sum(sizes[start:])
    for cut in candidates:
        suffix += sum(sizes[cut:start])
        if over_threshold(suffix, budget):
            break
        start = cut
    return start


def step_boundaries(
    history: Sequence[ModelMessage], request: int, safe: Sequence[bool] | None = None
) -> list[int]:
    """Step boundaries inside the turn that `history[request]` starts: indices `j` of a response that
    follows a request (after a tool return, before the next response), past the turn's first response,
    where keeping `[history[request], *history[j:]]` splits no pair."""
    safe = safe if safe is not None else SafeFromEnd(history)
    return [
        j
        for j in range(request + 2, len(history))
        if isinstance(history[j], ModelResponse) and isinstance(history[j - 1], ModelRequest) and safe[j]
    ]


def in_turn_cut(
    history: Sequence[ModelMessage],
    sizes: Sequence[int],
    request: int,
    budget: int,
    safe: Sequence[bool] | None = None,
) -> int | None:
    """Where to cut inside the turn starting at `request`: the earliest step boundary whose tail
    `[request, *history[j:]]` fits `budget`, else the newest boundary (the newest step stays whatever
    its size; tier 3 deals with size). None when the turn has no inner boundary."""
    boundaries = step_boundaries(history, request, safe)
    if not boundaries:
        return None
    suffix = sizes[request] + sum(sizes[boundaries[-1] :])
    chosen = boundaries[-1]
    for k in range(len(boundaries) - 2, -1, -1):
        suffix += sum(sizes[boundaries[k] : boundaries[k + 1]])
        if over_threshold(suffix, budget):
            break
        chosen = boundaries[k]
    return chosen


@dataclass(frozen=True)
class Tail:
    """Tier 2's verbatim tail: `history[start:]`, preceded by `history[request]` when the cut falls
    inside the newest turn (then `request < start - 1` and the messages between are summarized)."""

    start: int
    request: int | None = None

    def indices(self, n: int) -> list[int]:
        head = [] if self.request is None else [self.request]
        return [*head, *range(self.start, n)]

    def messages(self, history: Sequence[ModelMessage]) -> list[ModelMessage]:
        return [history[i] for i in self.indices(len(history))]

    def sizes(self, sizes: Sequence[int]) -> list[int]:
        return [sizes[i] for i in self.indices(len(sizes))]


def choose_tail(history: Sequence[ModelMessage], sizes: Sequence[int], budget: int) -> Tail:
    """The tail of DESIGN §7: the newest whole user turns within `budget`; when the newest turn alone
    is over `budget` (a long tool loop), a cut on a step boundary inside it, keeping its user request.

    `Tail(0)` means the whole history fits (or cannot be cut at all): nothing precedes the tail.
    """
    if not history:
        return Tail(0)
    safe = SafeFromEnd(history)
    start = select_tail(history, sizes, budget, safe)
    if not over_threshold(sum(sizes[start:]), budget):
        return Tail(start)
    request = newest_request(history, safe)
    if request is None:
        return Tail(start)
    cut = in_turn_cut(history, sizes, request, budget, safe)
    return Tail(start) if cut is None else Tail(cut, request)


def newest_request(history: Sequence[ModelMessage], safe: Sequence[bool] | None = None) -> int | None:
    """Index of the newest user request that starts a turn at a safe cut, or None (walked back from the
    newest message)."""
    safe = safe if safe is not None else SafeFromEnd(history)
    for i in range(len(history) - 1, -1, -1):
        if _has_user_prompt(history[i]) and safe[i]:
            return i
    return None
