"""Session end: the one-line summary, the dated bullet, the clamp, and the real ActorForth MEMORY.md."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from sessionstore.accounting.settings import Settings
from sessionstore.errors import InvalidSessionName
from sessionstore.memory.append import (
    add_session_bullet,
    append_session_summary,
    one_line_summary,
    record_session_end,
)
from sessionstore.memory.compress import compress_memory_file
from sessionstore.memory.document import headings, join_lines, split_lines, template_text

DEFAULTS = Settings()  # the settings a store with no configuration has


DAY = date(2026, 11, 29)

SKELETON = """# Conversation summary
_Extractive summary made offline (no model configured)._

## Goal
Fix the expired-token path in auth.

## Constraints & Preferences
- keep the public API

## Progress
### Done
- added a refresh test
- fixed `refresh()`.
### In Progress
- (none)
### Blocked
- none

## Key Decisions
- retry once

## Next Steps
1. release 0.2
2. update docs

## Critical Context
- src/auth.py
"""


def test_skeleton_becomes_goal_done_next() -> None:
    assert one_line_summary(SKELETON) == (
        "Fix the expired-token path in auth; done: added a refresh test, fixed `refresh()`; next: release 0.2"
    )


def test_plain_text_is_collapsed_clipped_and_redacted() -> None:
    assert one_line_summary("  fixed\n the   bug\n") == "fixed the bug"
    assert one_line_summary("") == "(no summary)"
    long = one_line_summary("word " * 100, max_chars=50)
    assert len(long) == 50 and long.endswith("…")
    assert "hunter2" not in one_line_summary("set password=hunter2hunter")


def test_bullet_goes_at_the_end_of_session_notes_before_the_next_section() -> None:
    lines = ["# M", "", "## Session notes", "", "- 2026-11-01 a: x", "", "## Later", "- y"]
    out = add_session_bullet(lines, "- 2026-11-29 b: z")
    assert out == [
        "# M",
        "",
        "## Session notes",
        "",
        "- 2026-11-01 a: x",
        "- 2026-11-29 b: z",
        "",
        "## Later",
        "- y",
    ]


def test_bullet_in_empty_template_section_and_missing_heading() -> None:
    template = split_lines(template_text())
    out = add_session_bullet(template, "- 2026-11-29 b: z")
    assert template[-1] == "## Session notes"
    assert out == [*template, "", "- 2026-11-29 b: z"]
    assert add_session_bullet(["# M", "- fact", ""], "- d s: t") == [
        "# M",
        "- fact",
        "",
        "## Session notes",
        "",
        "- d s: t",
    ]


def test_append_writes_the_dated_bullet(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(template_text())
    update = append_session_summary(path, "fix-auth", SKELETON, Settings(), today=DAY)
    assert update.changed and update.added == [path.read_text().splitlines()[-1]]
    assert path.read_text().splitlines()[-1].startswith("- 2026-11-29 fix-auth: Fix the expired-token path")


def test_append_clamp_is_always_on(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    lines = ["# M", "## Session notes", *[f"- 2026-10-{1 + i % 28:02d} s{i}: t{i}" for i in range(20)]]
    path.write_text(join_lines(lines))
    settings = Settings(memory_max_lines=15, memory_compression_enabled=False)
    update = append_session_summary(path, "new", "latest", settings, today=DAY, compress=True)
    out = split_lines(path.read_text())
    assert len(out) == 15 and out[-1] == "- 2026-11-29 new: latest"
    assert update.removed[0] == "- 2026-10-01 s0: t0"


def test_invalid_session_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("# M\n")
    with pytest.raises(InvalidSessionName):
        append_session_summary(path, "../etc", "x", Settings())
    assert path.read_text() == "# M\n"


def test_record_session_end_without_memory_file_writes_nothing(tmp_path: Path) -> None:
    update = record_session_end(tmp_path / "MEMORY.md", "s", "x", Settings())
    assert not update.changed and update.missing and "session memory init" in update.describe()
    assert not (tmp_path / "MEMORY.md").exists()


def test_record_session_end_compresses_at_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(
        join_lines(["# M", "## Session notes", *[f"- 2026-10-{d:02d} s{d}: t" for d in range(1, 29)]])
    )
    update = record_session_end(path, "last", "done", Settings(memory_max_lines=30), today=DAY)
    assert update.method == "extractive"
    out = split_lines(path.read_text())
    assert out[2].startswith("- 2026-10 (19 sessions): ")
    assert out[-1] == "- 2026-11-29 last: done" and len(out) == 13


def test_actorforth_sixty_sessions_then_squash_keeps_headings_and_newest(
    tmp_path: Path, realdata: Path
) -> None:
    source = realdata / "memory" / "actorforth_MEMORY_174e1905.md"
    path = tmp_path / "MEMORY.md"
    path.write_bytes(source.read_bytes())
    original = split_lines(source.read_text("utf-8"))
    assert len(original) == 174
    # Plenty of room while appending, so the 60 bullets all land; then the team cap applies at squash.
    roomy = Settings(memory_max_lines=1_000, memory_max_bytes=100_000)
    for i in range(60):
        day = date(2026, 9 + i // 30, 1 + i % 30)
        append_session_summary(path, f"s{i:02d}", f"worked on item {i} of the roadmap", roomy, today=day)
    appended = split_lines(path.read_text())
    bullets = [line for line in appended if line.startswith("- 2026-")]
    assert len(bullets) == 60
    update = compress_memory_file(path, Settings(), only_past_caps=True)
    out = split_lines(path.read_text())
    assert update.changed and len(out) <= 200
    assert headings(out) == headings(appended)
    assert set(headings(original)) <= set(headings(out))
    assert out[-10:] == bullets[-10:]
    # Facts outside Session notes are all still there: folding was enough.
    assert all(line in out for line in original if line.strip())
    assert not compress_memory_file(path, Settings(), only_past_caps=True).changed


def test_an_offline_summary_becomes_its_goal_without_placeholders_or_repeats() -> None:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from sessionstore.summary.offline import summarize_offline

    history = [
        ModelRequest(parts=[UserPromptPart(content="Please fix the expired token path in src/auth.py")]),
        ModelResponse(parts=[TextPart("I fixed refresh() and added a test.")]),
    ]
    line = one_line_summary(summarize_offline(history, settings=DEFAULTS))
    assert line.startswith("Please fix the expired token path in src/auth.py")
    assert "none recorded" not in line and "extractive summary" not in line
    assert line.count("expired token path") == 1


def test_a_plain_append_says_appended_and_a_clamp_says_clamp(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(template_text())
    plain = append_session_summary(path, "fix-auth", "did it", Settings(), today=DAY)
    assert plain.method == "append" and "(append)" in plain.describe()
    lines = ["# M", "## Session notes", *[f"- 2026-10-{1 + i % 28:02d} s{i}: t{i}" for i in range(20)]]
    path.write_text(join_lines(lines))
    settings = Settings(memory_max_lines=15, memory_compression_enabled=False)
    clamped = append_session_summary(path, "new", "latest", settings, today=DAY)
    assert clamped.method == "clamp" and "clamp" in clamped.describe()
