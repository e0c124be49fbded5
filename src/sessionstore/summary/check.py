"""The check an LLM summary must pass: every user constraint and bound value still stated (DESIGN §7).

The same deterministic extraction that drives the offline summarizer lists what the replaced messages
bind: current user constraints and facts, with their values. An item counts as kept when the summary
states it verbatim, or each of its values whole (case and markdown ignored; "$5000" does not state
"$500") and most of its content words; whatever is not kept is appended verbatim under
`## Critical Context` as "kept from the transcript", so a model can add, rephrase and reorder, but
never lose a rule or a value. Superseded items are not required, and a summary must not present
them as current: a line (a bullet with its continuation lines) that states a value the extraction
knows was superseded, with neither its successor's value nor a mark of its own ("old", "no longer",
"not $500", "from $500 to ...") near it, gets a note at its end, "[$500 is superseded; current: $700]"
(or "...: no longer current" for a withdrawn value), and the successor is then required on a line
without such a note. An amount, number or version (`values.is_generic`) counts only on a line that
also names its subject ("budget", "cap"): "Spent $500 on hosting" is another $500. A value some current
user item still states ("the hosting budget is $500") is not stale; a path the user retired (renamed,
moved, "stop touching") is stale too, unless the line itself retires it.
"""

from __future__ import annotations

import re

from sessionstore.summary.items import Extraction, Item
from sessionstore.summary.render import KEPT, SUPERSEDED
from sessionstore.summary.values import (
    is_generic,
    is_path,
    normalize,
    retired_paths,
    stated,
    stems,
    values,
    withdrawn,
)

__all__ = ["checklist", "complete", "correct", "missing", "required", "stale", "states", "without_notes"]

_WORD_COVERAGE = 0.6


def required(ex: Extraction) -> list[Item]:
    """What a summary of `ex` must keep: current constraints and value-binding facts (not the assistant's)."""
    return [
        item
        for item in ex.items
        if not item.superseded
        and item.source != "assistant"
        and (item.kind == "constraint" or (item.kind == "fact" and item.values))
    ]


def _holds(flat: str, value: str) -> bool:
    """Whether normalized `flat` holds `value` whole, not inside a longer word or number: "$5000",
    "$500,000" and "$500.50" do not state "$500", nor "130 s" "30 s", nor "host:54321" "host:5432",
    nor "src/core/a.py" the file name "a.py"."""
    v = normalize(value)
    if not v:
        return True
    path = is_path(value)
    at = flat.find(v)
    while at >= 0:
        end = at + len(v)
        joined_before = (
            v[0].isalnum() and at > 0 and (flat[at - 1].isalnum() or (path and flat[at - 1] in "/."))
        )
        nxt = flat[end : end + 2]
        joined_after = v[-1].isalnum() and (
            nxt[:1].isalnum() or (v[-1].isdigit() and nxt[:1] in (".", ",") and nxt[1:2].isdigit())
        )
        if not joined_before and not joined_after:
            return True
        at = flat.find(v, at + 1)
    return False


def states(summary: str, item: Item) -> bool:
    """Whether `summary` states `item`: every value it states as current present (whole), and most
    content words (by 5-letter stem); an item that takes something back ("forget the budget cap",
    "the cap is no longer $500") needs one line with most of its words saying it is gone."""
    flat = normalize(summary)
    core = item.text.rstrip(" .,;:!?")  # its closing stop is no part of a value ("$500." in "$500.50")
    if core and _holds(flat, core):  # verbatim (a line `complete` added): stated, values and all
        return True
    current = stated(item.text, list(item.values))
    if not all(_holds(flat, v) for v in current):
        return False  # the values it states as current: "$700, not $500" is stated without the $500
    wanted = stems(item.text)
    if withdrawn(item.text) or (item.values and not current):  # it takes something back: one line
        return any(  # must say it is gone ("Budget cap: $500" does not state "Forget the budget cap")
            _GONE.search(line) and (not wanted or len(wanted & stems(line)) / len(wanted) >= _WORD_COVERAGE)
            for line in summary.split("\n")
        )
    if not wanted:
        return True
    have = stems(summary)
    return len(wanted & have) / len(wanted) >= _WORD_COVERAGE


_NOTE = re.compile(
    r" \[[^\n]*? is superseded(?:; current: [^\n]*?|: no longer current)\](?=[^\S\n]*(?:\[|$))", re.M
)
"""The note `correct` puts at the end of a line; `without_notes` takes it off again."""
_MARK = re.compile(
    r"\b(?:superseded|no longer|not current|outdated|obsolete|stale|withdrawn|revoked|replaced|"
    r"previous|previously|former|formerly|originally|earlier|old|used to be)\b",
    re.I,
)
_GONE = re.compile(
    rf"{_MARK.pattern}|\b(?:lifted|dropped|removed|gone|forget|forgotten|ignore|ignored|cancell?ed|none|"
    r"withdraw|n/a)\b",
    re.I,
)
"""What a line says to state that a rule or value was taken back."""
_NEAR = 50
"""How close (characters) a summary's own mark must be to the old value to mark it."""
_BULLET = re.compile(r"\s*(?:[-*+•]|\d+[.)])\s")


def without_notes(summary: str) -> str:
    """`summary` without the notes `correct` added: what the model wrote, plus appended lines."""
    return _NOTE.sub("", summary)


def missing(summary: str, ex: Extraction) -> list[Item]:
    """The required items of `ex` that `summary` (its correction notes aside) does not state, oldest
    first: a note saying "current: $700" does not state the $700 rule."""
    text = without_notes(summary)
    return [item for item in required(ex) if not states(text, item)]


def _stale_values(ex: Extraction) -> list[tuple[Item | None, str, list[str]]]:
    """(superseded item, its old value, its successor's current values), for each value a superseded
    item stated that neither its successor nor any current user item states; then (None, path, [the
    path now in its place, if any: `Extraction.replacement`]) for each other path the user retired
    (renamed, moved, "stop touching": `retired_files`)."""
    current: set[str] = set()
    kept: set[str] = set()  # paths current items state, but not those they retire ("stop touching a.py")
    for i in ex.items:
        if not i.superseded and i.source != "assistant" and i.kind in ("constraint", "fact"):
            now = stated(i.text, list(i.values))
            current.update(now)
            kept.update(set(now) - set(retired_paths(i.text, list(i.values))))
    out: list[tuple[Item | None, str, list[str]]] = []
    for item in ex.superseded():
        successor = item.successor()
        if successor is None:
            continue
        new = stated(successor.text, list(successor.values))
        out += [
            (item, v, new) for v in stated(item.text, list(item.values)) if v not in new and v not in current
        ]
    listed = {v for _, v, _ in out}
    gone = [p for p in ex.retired_files() if p not in listed and p not in kept]
    return out + [(None, p, [new] if (new := ex.replacement(p)) else []) for p in gone]


def _units(summary: str) -> list[tuple[int, int]]:
    """The (start, end) of each line of `summary`, a bullet's indented continuation lines joined to it."""
    spans: list[list[int]] = []
    pos = 0
    for line in summary.split("\n"):
        joins = spans and line[:1] in (" ", "\t") and line.strip() and not _BULLET.match(line)
        if joins:
            spans[-1][1] = pos + len(line)
        else:
            spans.append([pos, pos + len(line)])
        pos += len(line) + 1
    return [(a, b) for a, b in spans]


def _marked_old(unit: str, flat: str, value: str) -> bool:
    """Whether the line itself says `value` is old: "not $500", "from $500 to ...", or a mark word
    ("old", "no longer", "superseded") near it."""
    plain = re.sub(r"[`*]", "", unit)
    if plain.lstrip(" -*+").startswith((SUPERSEDED, "(superseded")):
        return True
    if value in values(plain) and value not in stated(plain):
        return True
    v = normalize(value)
    at = flat.find(v)
    while at >= 0:
        if _MARK.search(flat[max(at - _NEAR, 0) : at + len(v) + _NEAR]):
            return True
        at = flat.find(v, at + 1)
    return False


def _stale_in(summary: str, ex: Extraction) -> list[tuple[int, int, Item | None, str, list[str]]]:
    found: list[tuple[int, int, Item | None, str, list[str]]] = []
    olds = _stale_values(ex)
    if not olds:
        return found
    for a, b in _units(summary):
        unit = summary[a:b]
        flat = normalize(unit)
        shown: set[str] = set()
        for item, value, new in olds:
            if value in shown or not _holds(flat, value) or any(_holds(flat, n) for n in new):
                continue
            if item is not None and is_generic(value) and not stems(item.subject or "") & stems(unit):
                continue  # "$500" with no word of "budget cap" near it: some other $500
            if _marked_old(unit, flat, value) or (item is None and value in retired_paths(unit)):
                continue  # the line says it is old: "Renamed src/a.py to src/b.py"
            shown.add(value)
            found.append((a, b, item, value, new))
    return found


def stale(summary: str, ex: Extraction) -> list[tuple[str, Item | None, str]]:
    """(line, superseded item, old value) for each line of `summary` that presents a superseded value
    as current: the value whole, neither its successor's value nor a mark of its own on the line. The
    item is None for a path the user retired without a superseded item (a rename, "stop touching")."""
    return [(summary[a:b], item, value) for a, b, item, value, _ in _stale_in(summary, ex)]


def correct(summary: str, ex: Extraction) -> str:
    """`summary` with a note at the end of each line that presents a superseded value as current
    ("[$500 is superseded; current: $700]"); `summary` itself when there is none. Only notes are
    added: `without_notes` gives back `summary`."""
    found = _stale_in(summary, ex)
    if not found:
        return summary
    notes: dict[int, list[str]] = {}
    for _a, b, _item, value, new in found:
        end = len(summary[:b].rstrip())  # before any trailing space, so without_notes restores it
        note = (
            f" [{value} is superseded; current: {', '.join(new)}]"
            if new
            else f" [{value} is superseded: no longer current]"
        )
        notes.setdefault(end, []).append(note)
    out = summary
    for end in sorted(notes, reverse=True):
        out = out[:end] + "".join(notes[end]) + out[end:]
    return out


def complete(summary: str, ex: Extraction) -> str:
    """`summary` corrected (`correct`), then every missing required item appended under
    `## Critical Context`, verbatim; `summary` itself when nothing is stale or missing.

    `## Critical Context` is the skeleton's last section, so appending at the end puts the lines in it.
    """
    corrected = correct(summary, ex)
    lost = missing(corrected, ex)
    if not lost:
        return corrected
    added = "\n".join(f"- {KEPT}{item.text}" for item in lost)
    return corrected.rstrip() + "\n" + added + "\n"


def checklist(ex: Extraction, limit: int = 80) -> str:
    """The required items as a bullet list for the summary prompt (newest kept when over `limit`)."""
    items = required(ex)[-limit:]
    lines = [f"- {item.text}" for item in items]
    lines += [f"- (superseded, not current) {item.text}" for item in ex.superseded()[-20:]]
    return "\n".join(lines)
