"""The hard clamp: drop the oldest, lowest-signal units until a MEMORY.md fits its line and byte caps.

Drop order (each step only while still over a cap):
1. redundant blank lines (runs of blanks, trailing blanks);
2. session bullets, oldest first, except the newest `keep_newest` bullets;
3. blank lines next to headings;
4. other content, oldest (topmost) first, from whichever section is largest at the time, so every
   section keeps its newest facts as long as possible; the newest (last) section goes only when no
   other has anything left to give;
5. month folds, oldest first: a fold stands for every old note of its month, so it outlives facts;
6. the newest session bullets, oldest first.
Headings are never dropped; if the headings alone exceed a cap, that is what remains.
"""

from __future__ import annotations

from typing import NamedTuple

from .document import Unit, count_bytes, flatten, parse_units, session_entry, session_unit_indexes

DEFAULT_KEEP_NEWEST = 10
"""Session bullets that survive everything but the last resort, so the latest corrections stay."""


class Clipped(NamedTuple):
    """What a clamp kept and what it dropped (in file order)."""

    lines: list[str]
    dropped: list[str]


def within_budget(lines: list[str], max_lines: int, max_bytes: int) -> bool:
    """True when `lines` (written with newlines) fit both caps."""
    return len(lines) <= max_lines and count_bytes(lines) <= max_bytes


def clip_lines_to_budget(
    lines: list[str], max_lines: int, max_bytes: int, *, keep_newest: int = DEFAULT_KEEP_NEWEST
) -> Clipped:
    """Drop units in the documented order until `lines` fit `max_lines` and `max_bytes`."""
    if within_budget(lines, max_lines, max_bytes):
        return Clipped(list(lines), [])
    units = parse_units(lines)
    state = _Budget(units, max_lines, max_bytes)
    before, after = _static_order(units, keep_newest)
    for index in before:
        if state.fits():
            break
        state.drop(index)
    if not state.fits():
        state.drop_largest_sections_first()
    for index in after:
        if state.fits():
            break
        state.drop(index)
    kept = [unit for i, unit in enumerate(units) if i not in state.dropped]
    kept, extra = _tidy_blanks(kept)
    dropped = flatten([unit for i, unit in enumerate(units) if i in state.dropped]) + extra
    return Clipped(flatten(kept), dropped)


class _Budget:
    """Running line and byte totals as units are dropped."""

    def __init__(self, units: list[Unit], max_lines: int, max_bytes: int) -> None:
        self.units = units
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.lines = sum(len(unit.lines) for unit in units)
        self.bytes = sum(count_bytes(list(unit.lines)) for unit in units)
        self.dropped: set[int] = set()

    def fits(self) -> bool:
        return self.lines <= self.max_lines and self.bytes <= self.max_bytes

    def drop(self, index: int) -> None:
        if index in self.dropped or self.units[index].kind == "heading":
            return
        self.dropped.add(index)
        self.lines -= len(self.units[index].lines)
        self.bytes -= count_bytes(list(self.units[index].lines))

    def drop_largest_sections_first(self) -> None:
        """Step 4: the topmost droppable unit of the section with the most remaining lines, repeatedly."""
        protected = set(session_unit_indexes(self.units))
        queues: dict[int, list[int]] = {}
        for i, unit in enumerate(self.units):
            if unit.kind != "heading" and i not in protected and i not in self.dropped:
                queues.setdefault(unit.section, []).append(i)
        sizes = {section: sum(len(self.units[i].lines) for i in queue) for section, queue in queues.items()}
        newest = max(queues, default=-1)
        while not self.fits() and any(queues.values()):
            others = [s for s in queues if queues[s] and s != newest]
            section = max(others, key=lambda s: (sizes[s], -s)) if others else newest
            index = queues[section].pop(0)
            sizes[section] -= len(self.units[index].lines)
            self.drop(index)


def _static_order(units: list[Unit], keep_newest: int) -> tuple[list[int], list[int]]:
    """Unit indexes for steps 1-3 (before the section pass) and for steps 5-6 (after it)."""
    last_content = max((i for i, unit in enumerate(units) if unit.kind != "blank"), default=-1)
    blanks_redundant = [
        i
        for i, unit in enumerate(units)
        if unit.kind == "blank" and (i == 0 or units[i - 1].kind == "blank" or i > last_content)
    ]
    sessions = session_unit_indexes(units)
    entries = {i: entry for i in sessions if (entry := session_entry(units[i])) is not None}
    by_age = sorted(entries, key=lambda i: (entries[i].key, i))
    bullets = [i for i in by_age if not entries[i].is_fold]
    newest = set(bullets[-keep_newest:]) if keep_newest > 0 else set()
    older = [i for i in bullets if i not in newest]
    folds = [i for i in by_age if entries[i].is_fold]
    near_headings = [
        i
        for i, unit in enumerate(units)
        if unit.kind == "blank"
        and (
            (i > 0 and units[i - 1].kind == "heading")
            or (i + 1 < len(units) and units[i + 1].kind == "heading")
        )
    ]
    before = blanks_redundant + older + near_headings
    after = folds + [i for i in by_age if i in newest]
    return before, after


def _tidy_blanks(units: list[Unit]) -> tuple[list[Unit], list[str]]:
    """Collapse blank runs that dropping left behind (e.g. around an emptied section)."""
    kept: list[Unit] = []
    extra: list[str] = []
    for unit in units:
        if unit.kind == "blank" and (not kept or kept[-1].kind == "blank"):
            extra.extend(unit.lines)
            continue
        kept.append(unit)
    while kept and kept[-1].kind == "blank":
        extra.extend(kept.pop().lines)
    return kept, extra
