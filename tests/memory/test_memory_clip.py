"""The hard clamp: caps always met (unless headings alone exceed them), headings and newest bullets kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.memory.clip import clip_lines_to_budget, within_budget
from sessionstore.memory.document import count_bytes, headings


def _memory(bullets: int, facts: int = 3) -> list[str]:
    lines = ["# Memory", "", "## Project"]
    lines += [f"- fact {i}" for i in range(facts)]
    lines += ["", "## Session notes", ""]
    lines += [f"- 2026-{1 + i // 28:02d}-{1 + i % 28:02d} s{i}: summary {i}" for i in range(bullets)]
    return lines


def test_within_budget_is_untouched() -> None:
    lines = _memory(5)
    assert clip_lines_to_budget(lines, 200, 25_000) == (lines, [])


def test_oldest_session_bullets_go_first() -> None:
    lines = _memory(30)
    kept, dropped = clip_lines_to_budget(lines, len(lines) - 5, 10**6)
    assert len(kept) == len(lines) - 5
    assert dropped == [f"- 2026-01-{1 + i:02d} s{i}: summary {i}" for i in range(5)]
    assert "- fact 0" in kept


def test_newest_bullets_survive_content_drops() -> None:
    lines = _memory(12, facts=20)
    kept, _ = clip_lines_to_budget(lines, 20, 10**6, keep_newest=10)
    assert all(f"s{i}:" in "\n".join(kept) for i in range(2, 12))
    assert headings(kept) == headings(lines)
    assert "- fact 19" in kept  # the newest fact of the section outlives the oldest ones
    assert "- fact 0" not in kept


def test_code_blocks_are_dropped_whole() -> None:
    lines = ["# M", "## Code", "```", "a", "b", "```", "- x"]
    kept, dropped = clip_lines_to_budget(lines, 4, 10**6)
    assert kept == ["# M", "## Code", "- x"]
    assert dropped == ["```", "a", "b", "```"]


def test_byte_cap_is_met() -> None:
    lines = _memory(100)
    kept, _ = clip_lines_to_budget(lines, 10**6, 2_000)
    assert count_bytes(kept) <= 2_000
    assert headings(kept) == headings(lines)


def test_headings_alone_over_the_cap_keep_every_heading() -> None:
    lines = ["# A", "- a", "## B", "- b", "## C"]
    kept, dropped = clip_lines_to_budget(lines, 2, 10**6)
    assert kept == ["# A", "## B", "## C"]
    assert dropped == ["- a", "- b"]


LINE = st.one_of(
    st.sampled_from(["", "# Top", "## Session notes", "## Facts", "```", "| a |", "  - sub"]),
    st.builds(lambda d, n: f"- 2026-11-{d:02d} s{n}: did {n}", st.integers(1, 28), st.integers(0, 50)),
    st.text(alphabet="abc xyz-", min_size=1, max_size=30).map(lambda s: "- " + s),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, max_size=60), st.integers(1, 40), st.integers(20, 800))
def test_clamp_invariants(lines: list[str], max_lines: int, max_bytes: int) -> None:
    kept, dropped = clip_lines_to_budget(lines, max_lines, max_bytes)
    # Every heading survives (headings inside code blocks are not headings).
    assert headings(kept) == headings(lines)
    # Caps are met unless the headings alone exceed them.
    only_headings = [line for line in kept if line in headings(lines)]
    assert within_budget(kept, max_lines, max_bytes) or kept == only_headings
    # Nothing is invented or reordered: the kept lines are a subsequence of the input.
    assert len(kept) + len(dropped) == len(lines)
    remaining = iter(lines)
    assert all(any(line == candidate for candidate in remaining) for line in kept)


def test_month_folds_survive_the_clip() -> None:
    """A fold stands for every old note of its month: dropping it loses them all (issue 12)."""
    lines = ["# M", "## Conventions", *[f"- rule {i}" for i in range(60)], "", "## Session notes", ""]
    lines += [f"- 2026-{m:02d} (25 sessions): work of month {m}" for m in range(6, 10)]
    lines += [f"- 2026-10-{d:02d} s{d}: did {d}" for d in range(1, 11)]
    kept, dropped = clip_lines_to_budget(lines, 60, 10**6, keep_newest=10)
    assert [line for line in lines if "(25 sessions)" in line] == [line for line in kept if "(25" in line]
    assert all(line.startswith("- rule") or not line for line in dropped)


def test_the_newest_section_is_the_last_to_lose_lines() -> None:
    lines = ["# M", "## Old", *[f"- old {i}" for i in range(10)]]
    lines += ["## New", *[f"- new {i}" for i in range(30)]]
    kept, dropped = clip_lines_to_budget(lines, 33, 10**6)
    assert len(kept) == 33
    assert all(line.startswith("- old") for line in dropped)  # though "New" is the larger section
    assert [line for line in kept if line.startswith("- new")] == lines[-30:]
