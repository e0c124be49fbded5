"""Session end: one dated bullet per session under `## Session notes`, then compress or clamp.

`record_session_end` is what `session end NAME` and a `Session`'s context-manager exit call;
`one_line_summary` turns a compaction summary (DESIGN §7 skeleton) or plain text into that bullet's text.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ..accounting.settings import Settings
from ..plumbing.names import check_name
from .clip import clip_lines_to_budget
from .compress import at_cap, compress_lines
from .dedupe import remove_exact_duplicates
from .document import (
    SESSION_NOTES_HEADING,
    Unit,
    flatten,
    heading_of,
    is_session_notes,
    join_lines,
    parse_units,
    session_bullet,
    split_lines,
)
from .fileio import MemoryUpdate, read_memory_file, write_atomic
from .lock import memory_lock
from .redact import redact, redactions

SUMMARY_MAX_CHARS = 200
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
# "(none recorded)", "_None_", "n/a", "-": skeleton slots the summarizer had nothing for.
_PLACEHOLDER = re.compile(
    r"^[\s_*()\[\].-]*(?:(?:none|nothing)\b[^)]*|n/?a|tbd)?[\s_*()\[\].-]*$", re.IGNORECASE
)
_SUMMARY_PARTS = (
    ("goal", ""),
    ("done", "done: "),
    ("in progress", "in progress: "),
    ("next steps", "next: "),
)


def one_line_summary(summary_markdown_or_text: str, max_chars: int = SUMMARY_MAX_CHARS) -> str:
    """One line for a session bullet: goal, done, in progress and next from a skeleton, else the text."""
    sections = _sections(summary_markdown_or_text)
    parts: list[str] = []
    seen: list[str] = []
    for title, label in _SUMMARY_PARTS:
        # The goal and next step are single thoughts; done/in-progress lists are what happened.
        items = sections.get(title, [])[: 1 if title in ("goal", "next steps") else None]
        # Skip items that only restate an earlier one ("Continue from the latest request: <goal>").
        fresh = [item.rstrip(".") for item in items if not any(old in item.casefold() for old in seen)]
        seen += [item.casefold() for item in fresh]
        if fresh:
            parts.append(label + ", ".join(fresh))
    line = "; ".join(parts) if parts else " ".join(item for items in sections.values() for item in items)
    line = redact(" ".join(line.split()))
    if not line:
        return "(no summary)"
    if len(line) > max_chars:
        line = line[: max_chars - 1].rstrip() + "…"
    return line


def _sections(text: str) -> dict[str, list[str]]:
    """Content lines (markers and placeholders stripped) keyed by their casefolded heading title."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in split_lines(text):
        parsed = heading_of(line)
        if parsed is not None:
            current = parsed[1].casefold()
            continue
        item = _MARKER.sub("", line).strip()
        if current == "conversation summary" and item.startswith(("_", "(", "*", ">")):
            continue  # the extractive summarizer's "made offline" note, not content
        if item and not _PLACEHOLDER.fullmatch(item):
            sections.setdefault(current, []).append(item)
    return sections


def add_session_bullet(lines: list[str], bullet: str) -> list[str]:
    """`lines` with `bullet` appended under the last Session notes heading (created when missing)."""
    units = parse_units(lines)
    notes = [i for i, unit in enumerate(units) if is_session_notes(unit)]
    if not notes:
        while units and units[-1].kind == "blank":
            units.pop()
        tail = ["", f"## {SESSION_NOTES_HEADING}", ""] if units else [f"## {SESSION_NOTES_HEADING}", ""]
        return [*flatten(units), *tail, bullet]
    end = notes[-1] + 1
    while end < len(units) and units[end].kind != "heading":
        end += 1
    insert = end
    while insert > notes[-1] + 1 and units[insert - 1].kind == "blank":
        insert -= 1
    new = [Unit("text", (bullet,), notes[-1])]
    if insert == notes[-1] + 1:  # an empty section: keep a blank line under the heading
        new.insert(0, Unit("blank", ("",), notes[-1]))
    if insert < len(units):  # another section follows: keep it separated
        new.append(Unit("blank", ("",), notes[-1]))
        while insert < len(units) and units[insert].kind == "blank":
            units.pop(insert)
    return flatten([*units[:insert], *new, *units[insert:]])


def append_session_summary(
    path: Path,
    session: str,
    summary: str,
    settings: Settings,
    *,
    today: date | None = None,
    compress: bool = False,
    model: Any = None,
) -> MemoryUpdate:
    """Add `- DATE SESSION: SUMMARY` under Session notes; clamp to the caps (compress first if asked,
    with `model`, default `settings.model`). `settings` are the store's or the CLI's: never defaults.

    Holds the file's memory lock (`memory.lock`) from the read to the rename, so concurrent writers
    (other appends, a squash, a merge) keep every bullet."""
    check_name(session)
    with memory_lock(path, settings.lock_timeout_s):
        return _append(path, session, summary, settings, today=today, compress=compress, model=model)


def _append(
    path: Path,
    session: str,
    summary: str,
    settings: Settings,
    *,
    today: date | None,
    compress: bool,
    model: Any,
) -> MemoryUpdate:
    original = read_memory_file(path)
    clean, redacted = redactions(original)
    lines = split_lines(clean)
    bullet = session_bullet(today or datetime.now(UTC).date(), session, one_line_summary(summary))
    lines = add_session_bullet(lines, bullet)
    if compress and settings.memory_compression_enabled and at_cap(lines, settings):
        result = compress_lines(lines, settings, model=model)
        lines, removed, method, notes = result.lines, result.removed, result.method, result.notes
    else:
        lines, removed = remove_exact_duplicates(lines)
        clipped = clip_lines_to_budget(lines, settings.memory_max_lines, settings.memory_max_bytes)
        removed += clipped.dropped
        method = "clamp" if removed else "append"  # "clamp" only when the clamp took something
        lines, notes = clipped.lines, []
    text = join_lines(lines)
    update = MemoryUpdate(
        path=path,
        changed=text != original,
        method=method,
        lines_before=len(split_lines(original)),
        lines_after=len(lines),
        bytes_before=len(original.encode("utf-8")),
        bytes_after=len(text.encode("utf-8")),
        added=[bullet] if bullet in lines else [],
        removed=removed,
        notes=notes + [r.describe() for r in redacted],
    )
    if update.changed:
        write_atomic(path, text)
    return update


def record_session_end(
    memory_path: Path,
    session_name: str,
    summary_text: str,
    settings: Settings,
    *,
    today: date | None = None,
    model: Any = None,
) -> MemoryUpdate:
    """Append the session's dated bullet to MEMORY.md, compressing when the file reached its caps.

    A missing MEMORY.md means the team has not opted in: nothing is written (run `session memory
    init` to start one). Unreadable or read-only files raise `MemoryFileError`.
    """
    if not memory_path.exists():
        return MemoryUpdate(path=memory_path, missing=True)
    return append_session_summary(
        memory_path, session_name, summary_text, settings, today=today, compress=True, model=model
    )
