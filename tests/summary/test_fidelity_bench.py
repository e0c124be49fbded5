"""benchmarks/bench_fidelity.py (issue 26) cannot rot: its cases are well formed, its scoring tells kept
from lost, stale from current and a rule from a superseded one, and a tiny slice of it runs through the
product path. No goal is asserted here: the benchmark's table in RESULTS.md says where they stand.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_fidelity as bench
from fidelity_data import RealData, load
from fidelity_probe import holds, load_cases, newest_text, norm, user_verbatim, verdict

from helpers.realdata import MISSING, REALDATA
from sessionstore.accounting.tokens import count_text

TYPES, CASES = load_cases()
BY_ID = {c.id: c for c in CASES}
FILLER = [
    f"step {n}: ran the suite again, {n * 7} tests passed, looking at the next module" for n in range(200)
]


def test_the_held_out_set_has_every_type_and_checkable_probes() -> None:
    assert len(CASES) >= 72 and len(BY_ID) == len(CASES)
    per_type = Counter(c.type for c in CASES)
    assert set(per_type) == set(TYPES) and len(TYPES) == 12 and min(per_type.values()) >= 6
    for case in CASES:
        planted = norm("\n".join(case.texts))
        assert case.keep or case.current, case.id
        for phrase in (*case.keep, *case.not_superseded):
            assert holds(planted, phrase), (case.id, phrase)
        if case.type == "correction":
            assert len(case.texts) == 2 and case.stale and case.current, case.id
            assert holds(case.texts[0], case.stale) and not holds(case.texts[0], case.current), case.id
            assert holds(case.texts[1], case.current), case.id
        if case.plant == "tool_return":
            assert case.file, case.id
    for case in (c for c in CASES if c.type == "negated_imperative"):
        assert not re.search(r"\b(must|never|don'?t|do not|shall|should)\b", case.texts[0], re.I), case.id


def test_the_baseline_keeps_a_planted_item_that_fits_and_truncation_loses_an_early_one() -> None:
    case = BY_ID["safety-03"]
    messages = [*case.texts, "ok now run the tests", "and fix whatever fails"]
    budget = count_text("\n\n".join(messages)) + 10
    assert verdict(case, user_verbatim(messages, budget, count_text)).kept
    assert not verdict(case, user_verbatim([*messages, *FILLER], budget, count_text)).kept  # crowded out
    assert verdict(case, newest_text([*FILLER, *case.texts], 200, count_text)).kept  # late: kept
    truncated = newest_text([*case.texts, *FILLER], 200, count_text)
    assert count_text(truncated) <= 200 and not verdict(case, truncated).kept  # early: lost


def test_a_stale_latest_correction_is_detected() -> None:
    case = BY_ID["corr-01"]
    stale = "no wait, the api listens on 8443.\nthe api server listens on 7311 on my machine"
    assert verdict(case, stale) == verdict(case, stale).__class__(kept=False, stale_latest=True)
    assert verdict(case, "the api server listens on 7311\nno wait, the api listens on 8443").kept
    assert verdict(case, "- port: 8443 (was 7311)").kept  # one line naming both reads as current
    assert not verdict(case, "the api listens on 84430").kept  # values match whole
    assert not holds("a $5000 cap", "$500") and not holds("15 minutes", "15 min")


def test_a_rule_marked_superseded_is_a_false_supersession() -> None:
    case = BY_ID["corr-02"]
    rule = "Budget cap is $500 total. Never exceed without explicit approval."
    v = verdict(case, f"- Superseded (no longer current): {rule}\n- Actually it is $700, not $500.")
    assert v.false_supersessions == 1 and not v.kept
    under = "## Superseded\n- Never exceed without explicit approval\n## Constraints\n- budget $700"
    assert verdict(case, under).false_supersessions == 1
    fine = "## Constraints\n- Never exceed without explicit approval\n- budget cap $700 (not $500)"
    assert verdict(case, fine) == verdict(case, fine).__class__(kept=True)


@pytest.fixture(scope="module")
def data() -> RealData:
    if not REALDATA.is_dir():
        pytest.skip(MISSING)
    return load(REALDATA)


@pytest.mark.parametrize("path", ["compact", "cascade", "in-run"])
def test_one_round_through_the_product_path_is_scored(data: RealData, path: str) -> None:
    tally = bench.Tally()
    bench.run_session(data, 6, CASES, path, "16k", tally, rounds=1, scored=(1,))
    plants = bench.placements(CASES, 6)
    scored = sum(len(v) for k, v in tally.kept.items() if k[3] == "summary") + tally.in_tail[(path, "16k", 1)]
    assert scored == len(plants) == 3
    ((summary_tokens, replaced),) = tally.sizes[(path, "16k", 1)]
    assert 0 < summary_tokens < replaced
    assert tally.compactions[(path, "16k", 1)][0] >= 1
    early = plants[0][0]  # ~100k tokens back: the newest text of the summary's size cannot hold it
    assert tally.kept[(path, "16k", 1, "truncation", early.type)] == [False]
