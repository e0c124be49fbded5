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
        title = section.title
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
    ["# T", "## A", "## B", "## C", "### X", "- a1", "- a2", "- b1", "- shared", "", "  - sub", "```", "text"]
)
"""Headings at three levels, so a section is matched by its whole path (`### X` under A or B)."""


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


def test_a_heading_repeated_under_different_parents_is_two_sections() -> None:
    lines = ["## Key Fixtures", "### From conftest.py", "- client", "## Assertion Helpers"]
    lines += ["### From conftest.py", "- assert_ok"]
    assert merge_duplicate_headings(lines) == (lines, [])
    keys = [s.key for s in split_sections(lines)]
    assert keys[1] == ((2, "key fixtures"), (3, "from conftest.py"))
    assert keys[3] == ((2, "assertion helpers"), (3, "from conftest.py"))


def test_a_repeated_parent_brings_its_subsections_under_the_first() -> None:
    lines = ["## A", "- a", "### X", "- x", "## B", "- b", "## A", "- a2", "### Y", "- y"]
    kept, removed = merge_duplicate_headings(lines)
    assert [line for line in kept if line] == [
        "## A",
        "- a",
        "- a2",
        "### X",
        "- x",
        "### Y",
        "- y",
        "## B",
        "- b",
    ]
    assert removed == ["## A"]


TREE_LINE = st.sampled_from(
    ["# T", "## A", "## B", "### X", "### Y", "#### X", "- 1", "- 2", "  - sub", "", "t"]
)


def _placed(lines: list[str]) -> set[tuple[object, str]]:
    """(heading path, line) of every non-blank line below a heading."""
    return {(s.key, ln) for s in split_sections(lines) for u in s.body for ln in u.lines if ln.strip()}


@hyp_settings(max_examples=300, deadline=None)
@given(st.lists(TREE_LINE, max_size=24))
def test_every_line_stays_under_its_whole_heading_path(lines: list[str]) -> None:
    kept, removed = merge_duplicate_headings(lines)
    keys = [s.key for s in split_sections(kept)]
    assert len(keys) == len(set(keys))  # each path once
    assert _placed(kept) == _placed(lines)  # nothing lost, nothing moved to another parent
    if len(set(s.key for s in split_sections(lines))) == len(split_sections(lines)):
        assert (kept, removed) == (lines, [])  # no path repeats: the file is left as it is
    assert merge_duplicate_headings(kept) == (kept, [])
