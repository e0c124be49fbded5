"""The structure of a MEMORY.md: headings, blocks and dated session bullets, parsed into units.

A *unit* is the smallest piece compression may keep or drop whole: a heading, a blank line, a fenced
code block, a table, or one line of text with its indented continuation lines (a bullet and its
sub-bullets). Working on units rather than raw lines is what keeps a clamp from splitting a code block
or orphaning a sub-bullet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from importlib import resources

SESSION_NOTES_HEADING = "Session notes"
"""The heading session bullets go under; created at the end of the file when missing."""

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SESSION_BULLET = re.compile(r"^[-*+] (\d{4}-\d{2}-\d{2}) (\S+?): ?(.*)$")
_FOLD_LINE = re.compile(r"^[-*+] (\d{4}-\d{2}) \((\d+) sessions?\): ?(.*)$")


@dataclass(frozen=True)
class Unit:
    """A run of lines kept or dropped together; `section` is the index of the heading unit above it."""

    kind: str  # heading | blank | fence | table | text
    lines: tuple[str, ...]
    section: int  # index (in the unit list) of the nearest heading above, -1 before the first

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def heading_of(line: str) -> tuple[int, str] | None:
    """`(level, title)` when `line` is an ATX heading, else None."""
    match = _HEADING.match(line)
    if match is None:
        return None
    return len(match.group(1)), match.group(2).strip().rstrip("#").strip()


def parse_units(lines: list[str]) -> list[Unit]:
    """Split lines into units; concatenating every unit's lines gives `lines` back exactly."""
    units: list[Unit] = []
    section = -1
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if heading_of(line) is not None:
            section = len(units)
            units.append(Unit("heading", (line,), section))
            i += 1
            continue
        if fence is not None:
            marker = fence.group(1)
            j = i + 1
            # A fence closes on a line of the same character at least as long; unclosed runs to the end.
            while j < len(lines) and not lines[j].strip().startswith(marker[0] * len(marker)):
                j += 1
            end = min(j + 1, len(lines))
            units.append(Unit("fence", tuple(lines[i:end]), section))
            i = end
            continue
        if not line.strip():
            units.append(Unit("blank", (line,), section))
            i += 1
            continue
        if line.lstrip().startswith("|"):
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            units.append(Unit("table", tuple(lines[i:j]), section))
            i = j
            continue
        j = i + 1
        # Indented non-blank lines belong to the line above (sub-bullets, wrapped text).
        while j < len(lines) and lines[j][:1] in (" ", "\t") and lines[j].strip() and not _is_block(lines[j]):
            j += 1
        units.append(Unit("text", tuple(lines[i:j]), section))
        i = j
    return units


def _is_block(line: str) -> bool:
    return heading_of(line) is not None or _FENCE.match(line) is not None


def flatten(units: list[Unit]) -> list[str]:
    """The lines of `units`, in order."""
    return [line for unit in units for line in unit.lines]


def headings(lines: list[str]) -> list[str]:
    """Every heading line (outside code blocks), stripped, in order."""
    return [unit.lines[0].strip() for unit in parse_units(lines) if unit.kind == "heading"]


def is_session_notes(unit: Unit) -> bool:
    """Whether `unit` is the Session notes heading (any level, any case)."""
    if unit.kind != "heading":
        return False
    parsed = heading_of(unit.lines[0])
    return parsed is not None and parsed[1].casefold() == SESSION_NOTES_HEADING.casefold()


@dataclass(frozen=True)
class SessionEntry:
    """A dated session bullet (`- 2026-11-29 fix-auth: ...`) or a month fold line."""

    key: str  # YYYY-MM-DD for a bullet, YYYY-MM for a fold (sorts before that month's bullets)
    name: str
    summary: str
    count: int  # sessions this line stands for
    is_fold: bool


def session_entry(unit: Unit) -> SessionEntry | None:
    """The session entry a text unit holds, if it is one."""
    if unit.kind != "text":
        return None
    first = unit.lines[0]
    fold = _FOLD_LINE.match(first)
    if fold is not None:
        return SessionEntry(fold.group(1), "", fold.group(3), int(fold.group(2)), True)
    bullet = _SESSION_BULLET.match(first)
    if bullet is not None:
        return SessionEntry(bullet.group(1), bullet.group(2), bullet.group(3), 1, False)
    return None


def session_unit_indexes(units: list[Unit]) -> list[int]:
    """Indexes of the session bullets and fold lines under every Session notes heading."""
    notes = {i for i, unit in enumerate(units) if is_session_notes(unit)}
    return [i for i, unit in enumerate(units) if unit.section in notes and session_entry(unit) is not None]


def session_bullet(day: date, session_name: str, summary: str) -> str:
    """The dated one-line bullet a session end adds."""
    return f"- {day.isoformat()} {session_name}: {summary}"


def template_text() -> str:
    """The MEMORY.md template shipped as package data (a copy of MEMORY.md.template at the repo root)."""
    return resources.files("sessionstore").joinpath("templates/MEMORY.md.template").read_text("utf-8")


def count_bytes(lines: list[str]) -> int:
    """Size of `lines` written as a file with a final newline."""
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def split_lines(text: str) -> list[str]:
    """Lines of `text` without their newline characters (CRLF tolerated)."""
    return text.splitlines()


def join_lines(lines: list[str]) -> str:
    """File text for `lines`: newline-terminated, nothing for no lines."""
    return "".join(line + "\n" for line in lines)
