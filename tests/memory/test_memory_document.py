"""Parsing MEMORY.md into units: round trip, headings outside code, session entries, the template."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.memory.document import (
    count_bytes,
    flatten,
    heading_of,
    headings,
    join_lines,
    parse_units,
    session_bullet,
    session_entry,
    session_unit_indexes,
    split_lines,
    template_text,
)

REPO = Path(__file__).resolve().parents[2]

DOC = """# Memory

## Project
- uses click
  - and orjson
| a | b |
|---|---|
| 1 | 2 |

```sh
# not a heading
echo hi
```

## Session notes
- 2026-10 (3 sessions): a: x; b: y
- 2026-11-29 fix-auth: fixed the token refresh
"""


def test_units_round_trip_and_kinds() -> None:
    lines = split_lines(DOC)
    units = parse_units(lines)
    assert flatten(units) == lines
    kinds = [unit.kind for unit in units]
    assert kinds.count("fence") == 1 and kinds.count("table") == 1
    bullet = next(unit for unit in units if unit.lines[0] == "- uses click")
    assert bullet.lines == ("- uses click", "  - and orjson")


def test_headings_inside_code_blocks_do_not_count() -> None:
    assert headings(split_lines(DOC)) == ["# Memory", "## Project", "## Session notes"]
    assert heading_of("#hashtag") is None
    assert heading_of("### Done") == (3, "Done")


def test_session_entries_only_under_session_notes() -> None:
    lines = split_lines(DOC + "\n## Other\n- 2026-11-30 x: not a session note here\n")
    units = parse_units(lines)
    found = [session_entry(units[i]) for i in session_unit_indexes(units)]
    assert [(e.key, e.name, e.count, e.is_fold) for e in found if e] == [
        ("2026-10", "", 3, True),
        ("2026-11-29", "fix-auth", 1, False),
    ]


def test_session_bullet_format() -> None:
    assert session_bullet(date(2026, 11, 29), "fix-auth", "done") == "- 2026-11-29 fix-auth: done"


def test_template_is_the_repo_root_copy_and_has_the_headings() -> None:
    assert template_text() == (REPO / "MEMORY.md.template").read_text("utf-8")
    assert {"## Project", "## Conventions", "## Decisions", "## Gotchas", "## Session notes"} <= set(
        headings(split_lines(template_text()))
    )


def test_join_and_count_bytes_agree() -> None:
    lines = ["é", "", "ab"]
    assert count_bytes(lines) == len(join_lines(lines).encode("utf-8"))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["# H", "## S", "", "- a", "  - b", "| x |", "```", "text", "~~~", " c"])))
def test_parse_units_always_round_trips(lines: list[str]) -> None:
    assert flatten(parse_units(lines)) == lines
