"""Issue 11's fidelity goals on a few seeds (benchmarks/bench_fidelity_synthetic.py has the full table).

Typed, unguessable items planted among filler must survive 5 rounds of offline compaction with a 10 %
tail; corrections must show only the latest value as current; an LLM summarizer that drops everything
must, through the check, keep every constraint and bound value; one that states superseded values as
current must, through the check, never present a stale value as current.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_fidelity_synthetic as bench

SEEDS = (0, 1, 2)


@pytest.mark.parametrize("name", ["new extractive", "LLM drops all + check", "LLM states stale + check"])
def test_planted_items_survive_five_rounds(name: str) -> None:
    compact = bench.contenders()[name]
    kinds = bench.TYPES if name == "new extractive" else bench.BOUND
    for seed in SEEDS:
        items, rounds = bench.session_rounds(seed, rounds=5, turns=16)
        history: list = []
        for new in rounds:
            history = compact([*history, *new], 0.1)
            lines, summary = bench.context_lines(history), bench.summary_lines(history)
            lost = [p.text for p in items if p.kind in kinds and not bench.survives(p, lines)]
            assert not lost, (seed, lost)
            stale = [p.text for p in items if bench.presents_stale(p, summary)]
            assert not stale, (seed, stale)


def test_the_benchmark_can_fail() -> None:
    """The survival check is not vacuous: truncation loses the planted items, a stale value fails."""
    items, rounds = bench.session_rounds(0, rounds=2, turns=16)
    lines = bench.context_lines(bench.truncate([*rounds[0], *rounds[1]], 0.3))
    assert not all(bench.survives(p, lines) for p in items)
    correction = next(p for p in items if p.kind == "correction")
    assert not bench.survives(correction, [f"the value is {correction.must[0]}", f"now {correction.stale}"])
    assert bench.survives(
        correction, [f"- Superseded (no longer current): {correction.stale}", correction.must[0]]
    )
    # in a summary, a stale line fails even with the latest value stated after it
    assert bench.presents_stale(correction, [f"- {correction.stale}", f"- {correction.must[0]}"])
    assert not bench.presents_stale(correction, [f"- {correction.stale} [superseded]", correction.must[0]])


def test_a_constraint_mid_way_through_a_real_transcript(realdata: Path) -> None:
    assert bench.real_constraint(2, realdata)["new extractive"] == 1.0
