"""Windows, levels, the one comparison, measured prefix, refresh rules and the per-message cache."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

from sessionstore.accounting import thresholds
from sessionstore.accounting.settings import THRESHOLD_ENV, Settings
from sessionstore.accounting.thresholds import (
    Levels,
    Measurement,
    Meter,
    levels,
    measure,
    next_tier,
    over_threshold,
    resolve_window,
)
from sessionstore.errors import SettingsError

SRC = Path(__file__).resolve().parents[2] / "src" / "sessionstore"


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THRESHOLD_ENV, raising=False)


# --- levels and the comparison ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "full_reserve", "micro_reserve", "expected"),
    [
        (200_000, 0.20, 0.40, Levels(micro=120_000, full=160_000)),
        (1_048_576, 0.20, 0.40, Levels(micro=629_145, full=838_860)),
        (100, 0.20, 0.40, Levels(micro=60, full=80)),
        (128_000, 0.10, 0.30, Levels(micro=89_600, full=115_200)),
        (10, 0.05, 0.95, Levels(micro=0, full=9)),
        (1, 0.20, 0.40, Levels(micro=0, full=0)),
    ],
)
def test_levels_table(window: int, full_reserve: float, micro_reserve: float, expected: Levels) -> None:
    settings = Settings(full_reserve_fraction=full_reserve, micro_reserve_fraction=micro_reserve)
    assert levels(window, settings, env={}) == expected


@pytest.mark.parametrize("window", [0, -1])
def test_levels_refuse_empty_window(window: int) -> None:
    with pytest.raises(SettingsError, match="context window"):
        levels(window, Settings(), env={})


@pytest.mark.parametrize(
    ("tokens", "level", "fires"),
    [
        (80, 80, False),  # equal does not fire
        (81, 80, True),
        (79, 80, False),
        (0, 0, False),  # zero fires nothing, even at a zero level
        (0, -10, False),
        (1, 0, True),
        (-5, -10, False),
    ],
)
def test_over_threshold(tokens: int, level: int, fires: bool) -> None:
    assert over_threshold(tokens, level) is fires


@pytest.mark.parametrize(
    ("tokens", "tier"),
    [(0, 0), (60, 0), (61, 1), (80, 1), (81, 2), (10**9, 2)],
)
def test_next_tier(tokens: int, tier: int) -> None:
    lv = Levels(micro=60, full=80)
    assert next_tier(tokens, lv) == tier
    assert next_tier(Measurement(tokens=tokens, local=tokens), lv) == tier


def test_zero_tokens_fire_nothing_at_zero_levels() -> None:
    assert next_tier(0, Levels(micro=0, full=0)) == 0


def test_env_override_set_changed_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    base = levels(200_000, settings)
    monkeypatch.setenv(THRESHOLD_ENV, "1000")
    assert levels(200_000, settings) == Levels(micro=750, full=1000)  # micro scaled by 0.6 / 0.8
    monkeypatch.setenv(THRESHOLD_ENV, "2_000")
    assert levels(200_000, settings) == Levels(micro=1500, full=2000)  # read again, not cached
    for broken in ("abc", "0", "-5", "", "1.5"):
        monkeypatch.setenv(THRESHOLD_ENV, broken)
        assert levels(200_000, settings) == base, broken
    monkeypatch.setenv(THRESHOLD_ENV, "300")
    assert levels(200_000, settings).full == 300
    monkeypatch.delenv(THRESHOLD_ENV)
    assert levels(200_000, settings) == base


# --- window ------------------------------------------------------------------------------------------


def _model_with_capacity(capacity: int | None) -> FunctionModel:
    profile = {"context_window": capacity} if capacity is not None else None
    return FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("x")]), profile=profile)


@pytest.mark.parametrize(
    ("capacity", "configured", "replay", "expected"),
    [
        (200_000, 1_048_576, False, 200_000),  # model smaller: model wins
        (200_000, 50_000, False, 50_000),  # configured smaller: configured wins
        (200_000, 50_000, True, 200_000),  # replay budget: capacity alone
        (None, 50_000, False, 50_000),  # unknown capacity: configured
        (None, 50_000, True, 50_000),  # unknown capacity on replay: configured
    ],
)
def test_window_is_min_of_sources(capacity: int | None, configured: int, replay: bool, expected: int) -> None:
    settings = Settings(context_window_tokens=configured)
    assert resolve_window(_model_with_capacity(capacity), settings, replay=replay) == expected


@pytest.mark.parametrize("model", [None, "extractive", "test"])
def test_offline_models_use_the_configured_window_silently(model: str | None) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_window(model, Settings(context_window_tokens=12_345)) == 12_345


@pytest.mark.parametrize("model", ["no-provider-prefix", "nosuchprovider:x"])
def test_unknown_models_use_the_configured_window_and_say_how_to_set_it(model: str) -> None:
    with pytest.warns(UserWarning, match=f"unknown model '{model}'.*set context_window_tokens"):
        assert resolve_window(model, Settings(context_window_tokens=12_345)) == 12_345


def test_model_id_capacity_from_pydantic_ai() -> None:
    # openai's SDK is not installed; the window comes from genai-prices, as the profile would fill it.
    assert thresholds.model_capacity("openai:gpt-4o") == 128_000
    assert resolve_window("openai:gpt-4o", Settings()) == 128_000
    assert resolve_window("openai:gpt-4o", Settings(context_window_tokens=1000)) == 1000


# --- measured prefix ---------------------------------------------------------------------------------


def req(text: str = "hello") -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def resp(input_tokens: int = 0, output_tokens: int = 0) -> ModelResponse:
    usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
    return ModelResponse(parts=[TextPart("answer")], usage=usage)


def sized(history: list[ModelMessage]) -> tuple[list[ModelMessage], list[int]]:
    return history, [10] * len(history)


def test_measure_uses_newest_usage_plus_tail() -> None:
    history, sizes = sized([req(), resp(500, 20), req(), resp(900, 30), req()])
    m = measure(history, sizes)
    assert (m.tokens, m.local, m.anchor, m.anchor_tokens) == (940, 50, 3, 930)
    assert m.measured


def test_measure_without_usage_is_local() -> None:
    history, sizes = sized([req(), resp(), req()])
    assert measure(history, sizes) == Measurement(tokens=30, local=30, estimate=30)


def test_newest_response_without_usage_invalidates_older() -> None:
    history, sizes = sized([req(), resp(500, 20), req(), resp(0, 40), req()])
    m = measure(history, sizes)
    assert not m.measured and m.tokens == 50


def test_last_usage_stands_in_for_newest_response() -> None:
    history, sizes = sized([req(), resp(), req()])
    m = measure(history, sizes, RequestUsage(input_tokens=300, output_tokens=5))
    assert m.tokens == 315 and m.anchor == 1


def test_reset_point_ignores_older_responses() -> None:
    history, sizes = sized([req(), resp(5000, 20), req()])
    assert measure(history, sizes, reset_at=2) == Measurement(tokens=30, local=30, estimate=30)
    assert measure(history, sizes, reset_at=1).tokens == 5030


def test_sizes_must_match_history() -> None:
    with pytest.raises(ValueError, match="sizes"):
        measure([req()], [])


def test_meter_refresh_rules() -> None:
    meter = Meter()
    history, sizes = sized([req(), resp(700, 10)])
    assert meter.succeeded(history, sizes).tokens == 710
    # a failed request: the prompt was appended, no new response; the previous anchor holds
    history, sizes = sized([*history, req()])
    assert meter.failed(history, sizes).tokens == 720
    # a success whose response carries no usage invalidates: back to the local estimate
    history, sizes = sized([*history, resp()])
    assert meter.succeeded(history, sizes) == Measurement(tokens=40, local=40, estimate=40)
    # measured again
    history, sizes = sized([*history, req(), resp(900, 50)])
    assert meter.succeeded(history, sizes).tokens == 950
    # compaction replaces the history; the kept response's old usage no longer counts
    history, sizes = sized([req("summary"), resp(900, 50)])
    assert meter.reset(history, sizes).tokens == 20
    history, sizes = sized([*history, req()])
    assert meter.failed(history, sizes).tokens == 30
    assert meter.succeeded(history, sizes).tokens == 30
    history, sizes = sized([*history, resp(100, 5)])
    assert meter.succeeded(history, sizes).tokens == 105


def test_a_usage_below_the_estimate_never_lowers_the_decision() -> None:
    # FunctionModel's default usage is a word count: present, and far below what was sent.
    history, sizes = sized([req(), resp(12, 3), req()])
    m = measure(history, sizes)
    assert (m.tokens, m.measured_tokens, m.estimate, m.figure) == (30, 25, 30, "estimate")
    assert m.measured and m.anchor == 1


def test_the_factor_scales_the_estimate_and_what_follows_the_measurement() -> None:
    history, sizes = sized([req(), resp(500, 20), req(), req()])
    m = measure(history, sizes, factor=1.5)
    assert (m.measured_tokens, m.estimate, m.tokens, m.figure) == (520 + 30, 60, 550, "measured")
    unmeasured = measure(sized([req(), resp(), req()])[0], [100, 100, 101], factor=1.29)
    assert unmeasured.tokens == unmeasured.estimate == 389 and unmeasured.figure == "estimate"  # rounded up


@given(
    st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
    st.lists(st.integers(0, 3_000), min_size=1, max_size=12),
    st.floats(1.0, 2.0),
)
def test_the_decision_is_the_larger_figure_for_any_history(
    sizes: list[int], usages: list[int], factor: float
) -> None:
    history = [resp(usages[i % len(usages)], 1) if i % 2 else req() for i in range(len(sizes))]
    m = measure(history, sizes, factor=factor)
    assert m.estimate == (math.ceil(sum(sizes) * factor) if factor != 1.0 else sum(sizes))
    assert m.tokens == max(m.estimate, m.measured_tokens or 0) >= sum(sizes)
    measured_decides = m.measured_tokens is not None and m.measured_tokens >= m.estimate
    assert (m.figure == "measured") == measured_decides


def test_meter_failed_without_previous_is_local() -> None:
    history, sizes = sized([req()])
    assert Meter().failed(history, sizes) == Measurement(tokens=10, local=10, estimate=10)


# --- cache ------------------------------------------------------------------------------------------


# --- the invariant: only over_threshold compares tokens with a level ---------------------------------

_LEVEL_WORDS = ("level", "threshold")


def _names(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id.lower())
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr.lower())
    return found


def level_comparisons(source: str, filename: str) -> list[str]:
    """Comparisons whose operands mention a level or threshold, outside `over_threshold` itself."""
    tree = ast.parse(source, filename)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "over_threshold":
            allowed.update(id(sub) for sub in ast.walk(node))
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or id(node) in allowed:
            continue
        operands = [node.left, *node.comparators]
        if not any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops):
            continue
        if any(word in name for op in operands for name in _names(op) for word in _LEVEL_WORDS):
            hits.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return hits


def test_scanner_catches_a_private_comparison() -> None:
    bad = "def f(tokens, levels):\n    return tokens > levels.full or used >= micro_level\n"
    assert len(level_comparisons(bad, "bad.py")) == 2
    assert level_comparisons("def f(a, b):\n    return a > b\n", "ok.py") == []


def test_only_over_threshold_compares_tokens_with_levels() -> None:
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        hits += level_comparisons(path.read_text(), str(path.relative_to(SRC)))
    assert hits == [], "compare through accounting.thresholds.over_threshold instead:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    ("capacity", "replay", "expected"),
    [
        (128_000, False, 1000),
        (128_000, True, 128_000),
        (None, True, 1000),
        (0, False, 1000),
        (500, False, 500),
    ],
)
def test_window_for_recorded_capacity(capacity: int | None, replay: bool, expected: int) -> None:
    settings = Settings(context_window_tokens=1000)
    assert thresholds.window_for_capacity(capacity, settings, replay=replay) == expected


def test_unknown_model_warns_once_per_process_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from sessionstore.accounting import thresholds

    monkeypatch.setattr(thresholds, "_warned", set())
    settings = Settings(context_window_tokens=50_000)
    for model in ("gpt-5", "nonsense:foo"):
        with pytest.warns(UserWarning, match="context_window_tokens") as caught:
            assert resolve_window(model, settings) == 50_000
        assert len(caught) == 1 and model in str(caught[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the second use is silent
            assert resolve_window(model, settings) == 50_000
    assert "openai:gpt-5" in str(_warning_for("gpt-5", monkeypatch, settings)), "the fix is named"
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # known models, the offline summarizer and in-process models never warn
        for quiet in ("openai:gpt-4o", "extractive", "function:script", "test"):
            resolve_window(quiet, settings)


def _warning_for(model: str, monkeypatch: pytest.MonkeyPatch, settings: Settings) -> str:
    from sessionstore.accounting import thresholds

    monkeypatch.setattr(thresholds, "_warned", set())
    with pytest.warns(UserWarning) as caught:
        resolve_window(model, settings)
    return str(caught[0].message)


@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 5000), st.integers(0, 300)), max_size=12),
    st.integers(0, 12),
)
def test_a_known_local_total_measures_the_same_as_summing(
    shape: list[tuple[bool, int, int]], reset: int
) -> None:
    """`local=` (the head's recorded total, which keeps a turn O(turn)) never changes a measurement."""
    history = [resp(used, 1) if is_response else req() for is_response, used, _ in shape]
    sizes = [size for _, _, size in shape]
    assert measure(history, sizes, reset_at=reset, local=sum(sizes)) == measure(
        history, sizes, reset_at=reset
    )
    a, b = Meter(reset_at=reset), Meter(reset_at=reset)
    assert a.succeeded(history, sizes, local=sum(sizes)) == b.succeeded(history, sizes)
    assert a.failed(history, sizes, local=sum(sizes)) == b.failed(history, sizes)
    assert a.reset(history, sizes, local=sum(sizes)) == b.reset(history, sizes)


def test_model_of_is_the_newest_responses_model_with_its_provider() -> None:
    from sessionstore.accounting.thresholds import model_of

    ask = ModelRequest(parts=[UserPromptPart("hi")])
    old = ModelResponse(parts=[TextPart("a")], model_name="gpt-4o", provider_name="openai")
    new = ModelResponse(parts=[TextPart("b")], model_name="claude-sonnet-4-5")
    assert model_of([ask, old, ask]) == "openai:gpt-4o"
    assert model_of([ask, old, ask, new]) == "claude-sonnet-4-5"  # no provider: the name alone
    assert model_of([ask]) is None
    assert resolve_window(model_of([ask, old]), Settings()) == 128_000  # the window it names
