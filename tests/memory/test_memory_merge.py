"""merge_three (the driver's merge) and merge_duplicate_headings (squash's repair), on lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from sessionstore.memory.document import heading_of
from sessionstore.memory.merge import merge_duplicate_headings, merge_three, split_sections

BASE = ["# Memory", "", "## Gotchas", "", "- old gotcha", "", "## Session notes", "", "- 2026-11-01 a: one"]


def _under(lines: list[str]) -> dict[str, list[str]]:
    """{heading title: its non-blank lines}."""
    out: dict[str, list[str]] = {}
    for section in split_sections(lines):
        title = section.key[1] if section.key else ""
        out.setdefault(title, []).extend(line for u in section.body for line in u.lines if line.strip())
    return out


def test_each_side_adds_under_its_own_heading_newest_last() -> None:
    ours = [*BASE[:5], "- our gotcha", *BASE[5:], "- 2026-11-02 alice: two"]
    theirs = [*BASE[:5], "- their gotcha", *BASE[5:], "- 2026-11-03 bob: three"]
    merged = merge_three(BASE, ours, theirs)
    assert _under(merged) == {
        "memory": [],
        "gotchas": ["- old gotcha", "- our gotcha", "- their gotcha"],
        "session notes": ["- 2026-11-01 a: one", "- 2026-11-02 alice: two", "- 2026-11-03 bob: three"],
    }
    assert merged[:4] == ["# Memory", "", "## Gotchas", ""]  # the layout stays Markdown-tidy


def test_a_deletion_on_one_side_wins_over_an_untouched_line() -> None:
    ours = [line for line in BASE if line != "- old gotcha"]
    theirs = [*BASE, "- 2026-11-03 bob: three"]
    merged = merge_three(BASE, ours, theirs)
    assert "- old gotcha" not in merged and "- 2026-11-03 bob: three" in merged


def test_a_section_only_theirs_has_lands_after_the_section_it_follows() -> None:
    theirs = [*BASE[:6], "## Decisions", "", "- use uv", "", *BASE[6:]]
    merged = merge_three(BASE, BASE, theirs)
    titles = [heading_of(line)[1] for line in merged if heading_of(line)]  # type: ignore[index]
    assert titles == ["Memory", "Gotchas", "Decisions", "Session notes"]


def test_both_sides_adding_the_same_line_keep_it_once() -> None:
    ours = [*BASE, "- 2026-11-02 x: same"]
    assert merge_three(BASE, ours, list(ours)).count("- 2026-11-02 x: same") == 1


def test_duplicated_headings_become_one_in_the_first_place() -> None:
    lines = ["# M", "## Session notes", "- a", "## Gotchas", "- g", "## session notes", "- b", "- g"]
    kept, removed = merge_duplicate_headings(lines)
    assert _under(kept) == {"m": [], "session notes": ["- a", "- b", "- g"], "gotchas": ["- g"]}
    assert removed == ["## session notes"]
    assert merge_duplicate_headings(kept) == (kept, [])


LINE = st.sampled_from(
    ["## A", "## B", "## C", "- a1", "- a2", "- b1", "- shared", "", "  - sub", "```", "text"]
)


@hyp_settings(max_examples=150, deadline=None)
@given(st.lists(LINE, max_size=14), st.lists(LINE, max_size=6), st.lists(LINE, max_size=6))
def test_nothing_added_on_either_side_is_lost(
    base: list[str], extra_o: list[str], extra_t: list[str]
) -> None:
    ours, theirs = base + extra_o, base + extra_t
    merged = merge_three(base, ours, theirs)
    keys = [s.key for s in split_sections(merged)]
    assert len(keys) == len(set(keys))  # each heading once
    got = _units_by_section(merged)
    for side in (ours, theirs):
        for key, units in _units_by_section(side).items():
            for unit in units - _units_by_section(base).get(key, set()):
                assert unit in got.get(key, set()), (unit, key, merged)


def _units_by_section(lines: list[str]) -> dict[object, set[str]]:
    """{section key: its non-blank lines} (lines, not units: a merge may re-attach an indented line
    that opened a repeated section to the bullet now above it, which loses nothing)."""
    out: dict[object, set[str]] = {}
    for section in split_sections(lines):
        out.setdefault(section.key, set()).update(ln for u in section.body for ln in u.lines if ln.strip())
    return out


@hyp_settings(max_examples=100, deadline=None)
@given(st.lists(LINE, max_size=16))
def test_merging_a_file_with_itself_only_tidies_it(lines: list[str]) -> None:
    once = merge_three(lines, lines, lines)
    assert merge_three(once, once, once) == once
    assert set(once) <= {*lines, "", "```"}  # nothing new but blank lines and a closed code block
