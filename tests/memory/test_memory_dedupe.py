"""Exact duplicates (union merges), near duplicates (newer kept), and month folds (idempotent)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from sessionstore.memory.dedupe import (
    FOLD_MAX_CHARS,
    _similar,
    _words,
    fold_old_sessions,
    remove_exact_duplicates,
    remove_near_duplicates,
)
from sessionstore.memory.document import parse_units


def test_exact_duplicates_keep_the_newest_place_blocks_untouched() -> None:
    lines = ["# M", "## A", "- x", "- y", "", "- x", "```", "}", "}", "```", "## B", "- x", "", ""]
    kept, removed = remove_exact_duplicates(lines)
    assert removed == ["- x"]
    assert kept == ["# M", "## A", "- y", "", "- x", "```", "}", "}", "```", "## B", "- x", "", ""]


def test_exact_duplicate_units_include_sub_bullets() -> None:
    lines = ["## A", "- parent", "  - one", "- parent", "  - two"]
    assert remove_exact_duplicates(lines).removed == []


def test_near_duplicates_keep_the_newer_line() -> None:
    lines = [
        "## Gotchas",
        "- Stale beam files: run rebar3 clean && rebar3 compile if edits don't take effect",
        "- unrelated fact about the LSP server",
        "- stale beam files: run `rebar3 clean && rebar3 compile` when edits don't take effect",
    ]
    kept, removed = remove_near_duplicates(lines)
    assert removed == [lines[1]]
    assert kept == [lines[0], lines[2], lines[3]]


def test_same_session_twice_with_different_dates_is_one_fact() -> None:
    lines = [
        "## Session notes",
        "- 2026-11-01 fix-auth: fixed refresh",
        "- 2026-11-02 fix-auth: fixed refresh",
    ]
    assert remove_near_duplicates(lines).lines == ["## Session notes", "- 2026-11-02 fix-auth: fixed refresh"]


def test_short_lines_need_an_exact_word_match() -> None:
    lines = ["## A", "- use uv", "- use pip"]
    assert remove_near_duplicates(lines).removed == []


def _notes(days: list[str]) -> list[str]:
    return ["# M", "## Session notes", *[f"- {day} s{i}: did {i}" for i, day in enumerate(days)]]


def test_fold_keeps_newest_and_folds_older_by_month() -> None:
    days = [f"2026-09-{d:02d}" for d in range(1, 6)] + [f"2026-10-{d:02d}" for d in range(1, 16)]
    lines = _notes(days)
    folded, removed = fold_old_sessions(lines, keep_newest=10)
    assert folded[:3] == [
        "# M",
        "## Session notes",
        "- 2026-09 (5 sessions): s0: did 0; s1: did 1; s2: did 2; s3: did 3; s4: did 4",
    ]
    assert folded[3].startswith("- 2026-10 (5 sessions): s5: did 5")
    assert folded[4:] == lines[-10:]
    assert len(removed) == 10
    assert fold_old_sessions(folded, keep_newest=10).lines == folded


def test_existing_fold_absorbs_new_old_bullets() -> None:
    lines = ["## Session notes", "- 2026-09 (4 sessions): a: x", "- 2026-09-20 b: y", "- 2026-10-01 c: z"]
    folded, _ = fold_old_sessions(lines, keep_newest=1)
    assert folded == ["## Session notes", "- 2026-09 (5 sessions): a: x; b: y", "- 2026-10-01 c: z"]


def test_fold_line_is_capped() -> None:
    lines = ["## Session notes", *[f"- 2026-09-{d:02d} s{d}: {'word ' * 30}" for d in range(1, 20)]]
    folded, _ = fold_old_sessions(lines, keep_newest=0)
    assert len(folded) == 2
    assert len(folded[1]) <= FOLD_MAX_CHARS + len("- 2026-09 (19 sessions): ")


# Enough distinct words that long lines can differ by one or two (prefixes longer than one word).
WORDS = st.lists(st.sampled_from([f"w{i}" for i in range(14)]), min_size=1, max_size=14)


@hyp_settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(WORDS.map(lambda ws: "- " + " ".join(ws)), st.just("## Next")), max_size=25))
def test_prefix_filter_finds_what_comparing_all_pairs_finds(lines: list[str]) -> None:
    units = parse_units(lines)
    bags = {i: _words(unit) for i, unit in enumerate(units) if unit.kind == "text"}
    expected = {
        i
        for i in bags
        for j in bags
        if j > i and units[i].section == units[j].section and _similar(bags[i], bags[j])
    }
    assert remove_near_duplicates(lines).removed == [units[i].lines[0] for i in sorted(expected)]
