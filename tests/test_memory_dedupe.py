"""Exact duplicates (union merges), near duplicates (newer kept), and month folds (idempotent)."""

from __future__ import annotations

from sessionstore.memory.dedupe import (
    FOLD_MAX_CHARS,
    fold_old_sessions,
    remove_exact_duplicates,
    remove_near_duplicates,
)


def test_exact_duplicates_removed_first_kept_blocks_untouched() -> None:
    lines = ["# M", "## A", "- x", "", "- x", "```", "}", "}", "```", "## B", "- x", "", ""]
    kept, removed = remove_exact_duplicates(lines)
    assert removed == ["- x"]
    assert kept == ["# M", "## A", "- x", "", "```", "}", "}", "```", "## B", "- x", "", ""]


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
