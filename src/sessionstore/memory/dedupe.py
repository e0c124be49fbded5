"""Lossless-first shrinking: exact duplicates, near-duplicates, and old session bullets folded by month.

`merge=union` resolves MEMORY.md conflicts by keeping both sides, so the same fact (or the same session
bullet) can appear twice; exact duplicates are removed on every rewrite, even under the caps.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import NamedTuple

from .clip import DEFAULT_KEEP_NEWEST
from .document import SessionEntry, Unit, flatten, parse_units, session_entry, session_unit_indexes

NEAR_DUPLICATE_JACCARD = 0.85
"""Word-set similarity from which two lines of one section say the same thing (the newer one stays)."""
NEAR_DUPLICATE_MIN_WORDS = 4
FOLD_MAX_CHARS = 240
"""Length cap of a month fold line's text, so folding always shrinks the file."""

_WORD = re.compile(r"[0-9a-z]+")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


class Shrunk(NamedTuple):
    """Lines after a pass, and the lines it removed (folded bullets count as removed)."""

    lines: list[str]
    removed: list[str]


def remove_exact_duplicates(lines: list[str]) -> Shrunk:
    """Drop repeated text units within a section; the LAST occurrence stays, in its place (lower
    lines are newer, as for near duplicates); blocks and headings stay."""
    units = parse_units(lines)
    seen: set[tuple[int, str]] = set()
    drop: set[int] = set()
    for i in range(len(units) - 1, -1, -1):
        unit = units[i]
        if unit.kind != "text":
            continue
        key = (unit.section, "\n".join(line.rstrip() for line in unit.lines))
        if key in seen:
            drop.add(i)
        else:
            seen.add(key)
    kept = [unit for i, unit in enumerate(units) if i not in drop]
    return Shrunk(flatten(kept), flatten([units[i] for i in sorted(drop)]))


def remove_near_duplicates(lines: list[str]) -> Shrunk:
    """Drop a text unit when a later unit of its section says nearly the same (the newer one stays)."""
    units = parse_units(lines)
    words: dict[int, frozenset[str]] = {}
    for i, unit in enumerate(units):
        if unit.kind == "text":
            words[i] = _words(unit)
    drop = {
        i
        for i, j in _candidate_pairs(words)
        if units[i].section == units[j].section and _similar(words[i], words[j])
    }
    removed = [units[i] for i in sorted(drop)]
    kept = [unit for i, unit in enumerate(units) if i not in drop]
    return Shrunk(flatten(kept), flatten(removed))


def _candidate_pairs(words: dict[int, frozenset[str]]) -> set[tuple[int, int]]:
    """Pairs (i < j) that may reach the similarity threshold: prefix filtering, so not all n² pairs.

    With words ordered rarest first, two sets with Jaccard >= t share a word among the first
    `len - ceil(t * len) + 1` words of each; only sets meeting in such a prefix are compared.
    """
    frequency = Counter(word for bag in words.values() for word in bag)
    index: dict[str, list[int]] = {}
    pairs: set[tuple[int, int]] = set()
    for i, bag in words.items():
        if not bag:
            continue
        # Short lines must match exactly (threshold 1), so their prefix is one word.
        threshold = NEAR_DUPLICATE_JACCARD if len(bag) >= NEAR_DUPLICATE_MIN_WORDS else 1.0
        ordered = sorted(bag, key=lambda word: (frequency[word], word))
        for word in ordered[: len(bag) - math.ceil(threshold * len(bag)) + 1]:
            for earlier in index.setdefault(word, []):
                pairs.add((earlier, i))
            index[word].append(i)
    return pairs


def _words(unit: Unit) -> frozenset[str]:
    entry = session_entry(unit)
    if entry is not None and not entry.is_fold:
        # Two sessions with the same name and summary are one fact, whatever their dates.
        text = f"{entry.name} {entry.summary}"
    else:
        text = " ".join(_MARKER.sub("", line) for line in unit.lines)
    return frozenset(_WORD.findall(text.casefold()))


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if min(len(a), len(b)) < NEAR_DUPLICATE_MIN_WORDS:
        return a == b and len(a) > 0
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE_JACCARD


def fold_old_sessions(lines: list[str], keep_newest: int = DEFAULT_KEEP_NEWEST) -> Shrunk:
    """Fold session bullets older than the newest `keep_newest` into one line per month.

    A month with a single old line is left as it is (folding it would not shrink anything). Existing
    fold lines of a month absorb the new ones, so folding again is a no-op.
    """
    units = parse_units(lines)
    sessions = session_unit_indexes(units)
    entries = {i: entry for i in sessions if (entry := session_entry(units[i])) is not None}
    by_age = sorted(entries, key=lambda i: (entries[i].key, i))
    bullets = [i for i in by_age if not entries[i].is_fold]
    newest = set(bullets[-keep_newest:]) if keep_newest > 0 else set()
    months: dict[str, list[int]] = {}
    for i in by_age:
        if i not in newest:
            months.setdefault(entries[i].key[:7], []).append(i)
    replace: dict[int, Unit] = {}
    removed: list[str] = []
    for month, group in sorted(months.items()):
        if len(group) < 2:
            continue
        anchor = min(group)
        line = _fold_line(month, [entries[i] for i in group])
        replace[anchor] = Unit("text", (line,), units[anchor].section)
        for i in group:
            removed.extend(units[i].lines)
    if not replace:
        return Shrunk(list(lines), [])
    folded = {i for group in months.values() if len(group) >= 2 for i in group}
    out: list[Unit] = []
    for i, unit in enumerate(units):
        if i in replace:
            out.append(replace[i])
        elif i not in folded:
            out.append(unit)
    return Shrunk(flatten(out), removed)


def _fold_line(month: str, entries: list[SessionEntry]) -> str:
    count = sum(entry.count for entry in entries)
    parts = [entry.summary if entry.is_fold else f"{entry.name}: {entry.summary}" for entry in entries]
    text = "; ".join(part.strip() for part in parts if part.strip())
    if len(text) > FOLD_MAX_CHARS:
        text = text[: FOLD_MAX_CHARS - 1].rstrip() + "…"
    noun = "session" if count == 1 else "sessions"
    return f"- {month} ({count} {noun}): {text}"
