"""Per-model calibration (accounting/calibration.py): the newest measured/local ratio per model, the
decision factor (1.0-2.0), the decision figure (the larger of measured and estimated) and the one
warning per model when the two differ by more than 2x either way."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.accounting import calibration
from sessionstore.accounting.calibration import Calibration, decide, scale


def test_the_newest_ratio_is_kept_per_model() -> None:
    cal = Calibration()
    assert cal.factor("anthropic:claude") is None and cal.decision_factor("anthropic:claude") == 1.0
    assert cal.learn("anthropic:claude", 1_290, 1_000) == 1.29
    assert cal.learn("openai:gpt", 1_010, 1_000) == 1.01
    assert cal.learn("anthropic:claude", 1_350, 1_000) == 1.35  # the newest request replaces it
    assert cal.to_field() == {"anthropic:claude": 1.35, "openai:gpt": 1.01}
    assert Calibration.of_line({"calibration": cal.to_field()}) == cal
    assert cal.learn("anthropic:claude", 0, 1_000) is None and cal.learn("x", 5, 0) is None
    assert cal.factor("anthropic:claude") == 1.35, "a response without usage teaches nothing"


def test_a_damaged_field_reads_as_no_calibration() -> None:
    for raw in (None, "1.3", [1.3], {"m": "x"}, {"m": -1}, {"m": 0}):
        assert Calibration.of_line({"calibration": raw}).factor("m") is None


@given(st.floats(0.01, 100.0))
def test_the_decision_factor_is_the_learned_one_within_1_and_2(ratio: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = Calibration()
        cal.learn("m", max(1, round(ratio * 10_000)), 10_000)
    learned = cal.factor("m")
    assert learned is not None
    assert cal.decision_factor("m") == min(max(learned, 1.0), 2.0)


@given(
    st.integers(0, 10**7),
    st.floats(1.0, 2.0),
    st.one_of(st.none(), st.integers(0, 10**7)),
    st.integers(0, 10**6),
)
def test_the_decision_is_the_larger_figure(
    local: int, factor: float, measured: int | None, after: int
) -> None:
    d = decide(local, factor, measured, after)
    assert d.estimate == scale(local, factor) >= local
    assert d.estimate == (math.ceil(local * factor) if factor != 1.0 else local)
    if measured is None:
        assert (d.tokens, d.measured, d.figure) == (d.estimate, None, "estimate")
    else:
        assert d.measured == measured + scale(after, factor)
        assert d.tokens == max(d.measured, d.estimate)
        assert d.figure == ("measured" if d.measured >= d.estimate else "estimate")


def test_a_ratio_past_2x_either_way_is_warned_once_per_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration, "_warned", set())
    cal = Calibration()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal.learn("openai:proxy", 50, 8_000)  # a usage that counts something else
        cal.learn("openai:proxy", 40, 8_000)
        cal.learn("anthropic:claude", 1_300, 1_000)  # a tokenizer difference: no warning
        cal.learn("anthropic:claude", 31_740, 301)  # a hidden system prompt
        cal.learn("function:body:stream", 50, 8_000)  # FunctionModel: fake usage by design, no warning
        cal.learn("test:test", 50, 8_000)
    said = [str(w.message) for w in caught]
    assert len(said) == 2, said
    assert "'openai:proxy'" in said[0] and "0.01x" in said[0] and "8,000" in said[0]
    assert "'anthropic:claude'" in said[1] and "105.45x" in said[1]
    assert all("\n" not in line for line in said)
