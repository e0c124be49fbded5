"""`## What the user said`: every user prompt a summary replaces, verbatim and in order, within a budget.

The user's words are the ground truth a summary stands on (DESIGN §7). Each prompt is quoted whole
(`> ` before each line), injected harness text named in one line instead (boilerplate.py). Over the
budget, in this order:
1. older long prompts (all but the newest) are shortened, oldest first, to their head and tail, cut
   where no value is split (text.cut), with a marker saying how many tokens went; the rules and
   values of what went are listed under the marker (extractor.py), so they keep their place in time;
2. then the oldest prompts are dropped; their rules and values go to one list at the top, "earlier
   messages, not shown", which keeps at most a quarter of the budget: corrections first, then rules,
   values and statements, the earliest first within a rank, so a later round keeps what an earlier
   one kept (a new drop only fills room that is left);
3. the newest prompt is shortened only when it alone is over.
The section parses back (`parse`), so a re-compaction carries the previous summary's words forward as
they were and fits them again with the new ones: round 5 holds what round 1 held, within the budget.
A prompt said again word for word is kept once, where it was said last.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelRequestPart, ModelResponse, ToolCallPart, UserPromptPart

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.boilerplate import clean
from sessionstore.summary.corrections import Correction, corrections
from sessionstore.summary.extractor import Item, extract
from sessionstore.summary.record import Call, walk
from sessionstore.summary.text import cut, user_text

__all__ = ["HEADING", "Dropped", "Entry", "Prompts", "UserWords", "collect", "fit", "parse"]

HEADING = "## What the user said"
_CUT = re.compile(
    r"^\[\.\.\. ([\d,]+) tokens cut here(?:; the rules and values in them(, some left out for space)?:)?\]$"
)
_DROPPED = re.compile(
    r"^\[([\d,]+) earlier messages? \(([\d,]+) tokens\) not shown"
    r"(?:; the rules and values in them(, some left out for space)?:)?\]$"
)
_NAMED = re.compile(r"^\[(?:injected |<)[^\]]*\]$")
_MIN_KEEP, _MAX_KEEP = 48, 400
"""Tokens a shortened prompt keeps (head and tail): a sixteenth of the budget, within these bounds."""
_HEADER = 30
"""What the dropped prompts' header line costs, at most."""
_DROPPED_SHARE = 4
"""The earlier messages' list takes at most 1/_DROPPED_SHARE of the budget."""


def _n(text: str | None) -> int:
    return int(text.replace(",", "")) if text and text[0].isdigit() else int(bool(text))


def _items_text(items: list[Item], left_out: int) -> str:
    more = ", some left out for space" if left_out else ""
    return f"; the rules and values in them{more}:" if items or left_out else ""


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in text.split("\n")]


@dataclass
class Entry:
    """One user prompt as the summary quotes it: whole, or its head and tail around a cut."""

    head: str
    tail: str = ""
    cut: int = 0
    """Tokens cut from the middle (0: the prompt is whole)."""
    items: list[Item] = field(default_factory=list)
    """The rules and values of the cut middle, in order."""
    left_out: int = 0
    """Items of the cut middle with no room under the marker."""
    tokens: int = 0
    """What the whole prompt cost: what dropping it removes from the context."""
    corrections: tuple[Correction, ...] = ()
    """The explicit corrections the prompt makes (corrections.py), found when it was collected."""
    _cost: int | None = field(default=None, repr=False, compare=False)

    def render(self) -> str:
        lines = _quote(self.head)
        if self.cut:
            lines.append(f"[... {self.cut:,} tokens cut here{_items_text(self.items, self.left_out)}]")
            lines += [f"- {i.text}" for i in self.items]
            lines += _quote(self.tail)
        return "\n".join(lines)

    @property
    def cost(self) -> int:
        if self._cost is None:
            self._cost = count_text(self.render()) + 1
        return self._cost

    def own(self) -> str:
        """The person's own words in it: injected-text names left out."""
        lines = [line for line in f"{self.head}\n{self.tail}".split("\n") if not _NAMED.match(line.strip())]
        return "\n".join(lines).strip()

    def shorten(self, keep: int) -> None:
        """Keep ~`keep` tokens: two thirds head, one third tail; the middle's items under the marker."""
        text = self.head
        chars_per_token = len(text) / max(self.cost, 1)
        pieces = cut(text, int(keep * 2 / 3 * chars_per_token), int(keep / 3 * chars_per_token))
        if pieces is None:
            return
        head, tail = pieces
        middle = text[len(head) : len(text) - len(tail)]
        self.head, self.tail = head, tail
        self.cut = max(count_text(middle), 1)
        self.items, self.left_out = _within([i for i in extract(middle) if i.rank >= 2], keep)
        self._cost = None


@dataclass
class Dropped:
    """The prompts dropped for space: how many, what they cost, and their rules and values."""

    messages: int = 0
    tokens: int = 0
    items: list[Item] = field(default_factory=list)
    left_out: int = 0

    def render(self) -> str:
        if not self.messages:
            return ""
        head = (
            f"[{self.messages:,} earlier message{'s' if self.messages != 1 else ''} ({self.tokens:,} tokens) "
            f"not shown{_items_text(self.items, self.left_out)}]"
        )
        return "\n".join([head, *(f"- {i.text}" for i in self.items)])

    @property
    def cost(self) -> int:
        """Its tokens as rendered (the header, one line per item): summed, never re-counted."""
        return _HEADER + sum(i.cost for i in self.items) if self.messages else 0

    def absorb(self, entries: list[Entry], room: int) -> None:
        """Add `entries` (dropped, oldest first) and their items, then keep the items that fit `room`
        (`_within`). Once the rules and corrections alone fill `room`, a later sentence could only
        enter as a correction (the earliest win within a rank), so only those are looked for: the
        cost stops growing with the text dropped."""
        strong = sum(len(i.text) // 4 for i in self.items if i.rank >= 3)  # a cheap guess at tokens
        for entry in entries:
            self.messages += 1
            self.tokens += entry.tokens
            self.left_out += entry.left_out
            corrects = bool(entry.corrections) or entry.cut > 0  # a cut prompt was never searched whole
            if strong >= room:
                new = [i for t in (entry.head, entry.tail) if corrects for i in extract(t) if i.rank == 4]
                new += [i for i in entry.items if i.rank == 4]
                self.left_out += 1
            else:
                new = [
                    *extract(entry.head, corrects=corrects),
                    *entry.items,
                    *extract(entry.tail, corrects=corrects),
                ]
            self.items += new
            strong += sum(len(i.text) // 4 for i in new if i.rank >= 3)
        self.items, more = _within(self.items, room)
        self.left_out += more


def _within(items: list[Item], budget: int) -> tuple[list[Item], int]:
    """The items that fit `budget` tokens: highest rank first, the earliest first within a rank,
    until one does not fit; shown in their order; and how many were left out."""
    chosen: set[int] = set()
    used = 0
    for n in sorted(range(len(items)), key=lambda n: (-items[n].rank, n)):
        if used + items[n].cost > budget:
            break
        chosen.add(n)
        used += items[n].cost
    return [items[n] for n in sorted(chosen)], len(items) - len(chosen)


@dataclass
class UserWords:
    """The section's content: the dropped prompts' list, then each kept prompt, oldest first."""

    dropped: Dropped = field(default_factory=Dropped)
    entries: list[Entry] = field(default_factory=list)

    def render(self) -> str:
        blocks = [self.dropped.render(), *(e.render() for e in self.entries)]
        return "\n\n".join(b for b in blocks if b)

    def cost(self) -> int:
        return self.dropped.cost + sum(e.cost for e in self.entries)

    def latest_request(self) -> str:
        """The newest prompt with three words or more of the person's own: the goal by content."""
        for entry in reversed(self.entries):
            own = entry.own()
            if len(own.split()) >= 3:
                return own
        return ""


class Prompts:
    """The user prompts of a history as entries, built as `record.walk` feeds it (a `record.Reader`):
    a prompt of injected text alone is kept as its names; one of nothing (a bare caveat) is left out."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._seen: dict[str, tuple[int, tuple[Correction, ...]]] = {}

    def response(self, msg: ModelResponse, calls: list[tuple[ToolCallPart, Call]]) -> None:
        return None

    def request_part(self, part: ModelRequestPart) -> None:
        if not isinstance(part, UserPromptPart):
            return
        cleaned = clean(user_text(part))
        if not cleaned.text:
            return
        entry = Entry(cleaned.text)
        known = self._seen.get(cleaned.text)  # a prompt said again: counted and read once
        if known is None:
            known = self._seen[cleaned.text] = (entry.cost, tuple(corrections(cleaned.own)))
        entry.tokens, entry.corrections = known
        entry._cost = known[0]
        self.entries.append(entry)


def collect(messages: Iterable[ModelMessage]) -> list[Entry]:
    """An entry for each user prompt of `messages`, in order (see `Prompts`)."""
    prompts = Prompts()
    walk(messages, prompts)
    return prompts.entries


def _once(entries: list[Entry]) -> list[Entry]:
    """`entries` with a whole prompt said again word for word kept only where it was said last."""
    seen: set[str] = set()
    kept: list[Entry] = []
    for entry in reversed(entries):
        key = entry.head if not entry.cut else None
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(entry)
    return kept[::-1]


def fit(words: UserWords, new: list[Entry], budget: int) -> UserWords:
    """`words` (a previous summary's, or empty) followed by `new`, within `budget` tokens: linear in
    the number of prompts (each is counted once, when it is made or cut)."""
    old = words.dropped
    dropped = Dropped(old.messages, old.tokens, list(old.items), old.left_out)
    entries = _once([*words.entries, *new])
    keep = min(max(budget // 16, _MIN_KEEP), _MAX_KEEP)
    total = dropped.cost + sum(e.cost for e in entries)
    for entry in entries[:-1]:  # 1. shorten older long prompts, oldest first
        if total <= budget:
            break
        if entry.cut == 0 and entry.cost > 2 * keep:
            before = entry.cost
            entry.shorten(keep)
            total += entry.cost - before
    if total > budget and entries:  # 2. drop the oldest: keep the newest that fit beside the list
        room = budget - min(budget // _DROPPED_SHARE, max(dropped.cost, _HEADER) + _spare(entries))
        start, kept = len(entries) - 1, entries[-1].cost
        while start > 0 and kept + entries[start - 1].cost <= room:
            start -= 1
            kept += entries[start].cost
        dropped.absorb(entries[:start], max(budget - kept - _HEADER, 0))
        entries = entries[start:]
    if entries and dropped.cost + sum(e.cost for e in entries) > budget:  # 3. the newest alone is over
        room = max(budget - dropped.cost, _MIN_KEEP)
        if entries[-1].cut == 0:
            entries[-1].shorten(min(room * 3 // 4, room - 20))
        if dropped.cost + entries[-1].cost > budget:
            dropped.absorb([entries.pop()], max(budget - _HEADER, 0))
    return UserWords(dropped, entries)


def _spare(entries: list[Entry]) -> int:
    """What the items of the prompts about to be dropped would add to the list, at most: a guess
    made before extracting them, so that the newest prompts are not dropped to make room for a list
    that turns out small (a quarter of what they cost)."""
    return sum(e.cost for e in entries[:-1]) // 4


def parse(body: str) -> UserWords:
    """The section body of a summary back into its parts (the inverse of `UserWords.render`)."""
    words = UserWords()
    for block in re.split(r"\n[ \t]*\n", body.strip("\n")):
        lines = block.split("\n")
        found = _DROPPED.match(lines[0].strip()) if lines else None
        if found:
            words.dropped = Dropped(_n(found.group(1)), _n(found.group(2)), left_out=_n(found.group(3)))
            words.dropped.items = [Item.of(line[2:]) for line in lines[1:] if line.startswith("- ")]
            continue
        head: list[str] = []
        tail: list[str] = []
        entry = Entry("")
        for line in lines:
            if line.startswith(">"):
                (tail if entry.cut else head).append(line[2:] if line.startswith("> ") else line[1:])
            elif (marker := _CUT.match(line.strip())) is not None:
                entry.cut, entry.left_out = _n(marker.group(1)), _n(marker.group(2))
            elif line.startswith("- ") and entry.cut:
                entry.items.append(Item.of(line[2:]))
        if not head and not tail:
            continue
        entry.head, entry.tail = "\n".join(head), "\n".join(tail)
        entry.tokens = entry.cost + entry.cut
        entry.corrections = tuple(corrections(entry.own()))
        words.entries.append(entry)
    return words
