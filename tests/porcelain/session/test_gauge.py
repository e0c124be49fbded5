"""The gauge: glyph by nearest quarter, bands from the trigger levels, tokens left, unknown usage."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.thresholds import Levels, levels, next_tier, window_for_capacity
from sessionstore.plumbing.commits import Commit
from sessionstore.porcelain.session.gauge import (
    GLYPHS,
    commit_gauges,
    fired_tiers,
    format_gauge,
    format_tokens,
    gauge,
)

LEVELS = Levels(micro=120_000, full=160_000)
WINDOW = 200_000


@pytest.mark.parametrize(
    ("used", "glyph", "percent", "band", "next_level", "left"),
    [
        (0, "○", 0, "green", "micro", 120_000),
        (24_999, "○", 12, "green", "micro", 95_001),
        (25_000, "◔", 12, "green", "micro", 95_000),  # 12.5% rounds half to even
        (36_000, "◔", 18, "green", "micro", 84_000),
        (120_000, "◑", 60, "green", "micro", 0),  # equal to micro: not fired
        (120_001, "◑", 60, "yellow", "full", 39_999),
        (141_600, "◕", 71, "yellow", "full", 18_400),
        (160_000, "◕", 80, "yellow", "full", 0),
        (160_001, "◕", 80, "red", None, 0),
        (199_999, "●", 99, "red", None, 0),
        (200_000, "●", 100, "red", None, 0),
        (300_000, "●", 150, "red", None, 0),
    ],
)
def test_gauge_table(
    used: int, glyph: str, percent: int, band: str, next_level: str | None, left: int
) -> None:
    g = gauge(used, WINDOW, LEVELS)
    assert g.glyph == glyph
    assert g.percent == percent
    assert (g.band, g.next_level, g.tokens_left) == (band, next_level, left)


@pytest.mark.parametrize("used", [0, 60_000, 120_000, 120_001, 160_000, 160_001, 10**7])
def test_band_agrees_with_triggers(used: int) -> None:
    band = {0: "green", 1: "yellow", 2: "red"}[next_tier(used, LEVELS)]
    assert gauge(used, WINDOW, LEVELS).band == band


def test_every_glyph_reachable() -> None:
    seen = {gauge(u, 100, Levels(60, 80)).glyph for u in range(0, 120)}
    assert seen == set(GLYPHS)


def test_unknown_usage_shows_question_mark() -> None:
    g = gauge(None, WINDOW, LEVELS)
    assert (g.glyph, g.percent, g.band, g.tokens_left) == ("?", None, None, None)
    assert format_gauge(g, color=True) == "? of 200k · micro at 60% · full at 80%"


def test_format_like_design_sketch() -> None:
    line = format_gauge(gauge(141_600, WINDOW, LEVELS, fired=frozenset({"micro"})), color=False)
    assert line == "◕ 71% of 200k · micro at 60% (fired) · full in 18,400 tok"


def test_format_green_and_red() -> None:
    assert format_gauge(gauge(36_000, WINDOW, LEVELS), color=False) == (
        "◔ 18% of 200k · micro in 84,000 tok · full at 80%"
    )
    both = frozenset({"micro", "full"})
    assert format_gauge(gauge(170_000, WINDOW, LEVELS, fired=both), color=False) == (
        "◕ 85% of 200k · micro at 60% (fired) · full at 80% (fired)"
    )
    # Over a level is not "fired": pending until the next append, off when disabled, over without state.
    assert format_gauge(gauge(170_000, WINDOW, LEVELS, fired=frozenset({"micro"})), color=False) == (
        "◕ 85% of 200k · micro at 60% (fired) · full at 80% (pending)"
    )
    off = gauge(170_000, WINDOW, LEVELS, fired=frozenset(), compaction_enabled=False)
    assert format_gauge(off, color=False) == "◕ 85% of 200k · micro at 60% (off) · full at 80% (off)"
    assert format_gauge(gauge(170_000, WINDOW, LEVELS), color=False) == (
        "◕ 85% of 200k · micro at 60% (over) · full at 80% (over)"
    )


def test_color_only_when_asked() -> None:
    g = gauge(170_000, WINDOW, LEVELS)
    assert "\x1b[31m" in format_gauge(g, color=True)
    assert "\x1b[" not in format_gauge(g, color=False)


def test_to_json() -> None:
    data = gauge(141_600, WINDOW, LEVELS).to_json()
    assert data["band"] == "yellow" and data["tokens_left"] == 18_400 and data["full_level"] == 160_000


@pytest.mark.parametrize(
    ("count", "text"), [(200_000, "200k"), (128_000, "128k"), (1_048_576, "1.05M"), (512, "512")]
)
def test_format_tokens(count: int, text: str) -> None:
    assert format_tokens(count) == text


def test_bad_window() -> None:
    with pytest.raises(ValueError, match="window"):
        gauge(5, 0, LEVELS)


def test_import_is_light() -> None:
    code = (
        "import sys, sessionstore.porcelain.session.gauge\n"
        "bad = [m for m in ('pydantic_ai', 'tiktoken') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_commit_gauge_reads_the_same_window_as_the_triggers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One source of truth: the gauge from a log line resolves the window the cascade uses."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.usage import RequestUsage

    from sessionstore import SessionStore
    from sessionstore.porcelain.session import cascade
    from sessionstore.porcelain.session.gauge import commit_gauge

    store = SessionStore.open(tmp_path / "s")
    s = store.session("s")
    for i in range(3):
        response = ModelResponse(
            parts=[TextPart(f"answer {i}")],
            model_name="gpt-4o",
            provider_name="openai",
            usage=RequestUsage(input_tokens=50_000 + i, output_tokens=10),
        )
        s.append([ModelRequest(parts=[UserPromptPart(f"question {i}")]), response])
    window, lv = cascade.session_levels(s)
    reading = commit_gauge(s.head, store.settings)
    assert window == reading.window == 128_000
    assert reading.used == s.measurement.tokens == 50_012
    assert (reading.levels.micro, reading.levels.full) == (lv.micro, lv.full)
    s.compact()
    assert commit_gauge(s.head, store.settings).window == cascade.session_levels(s)[0] == 128_000


def test_fired_only_for_a_tier_that_fired_on_the_current_state(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Real sessions: a turn over full committed without compaction is pending; after the
    compaction its state says fired; with compaction off nothing ever fired."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from sessionstore import SessionStore, Settings
    from sessionstore.porcelain.session.gauge import commit_gauge

    def turn(i: int) -> list:
        return [
            ModelRequest(parts=[UserPromptPart(f"q{i} " + "word " * 400)]),
            ModelResponse(parts=[TextPart("ok")]),
        ]

    for enabled in (True, False):
        settings = Settings(context_window_tokens=2_000, compaction_enabled=enabled, keep_recent_tokens=300)
        store = SessionStore.open(tmp_path / str(enabled), settings=settings)
        s = store.session("s")
        for i in range(5):
            s.append(turn(i), compact=False)  # as an import or a mid-run step: over full, not compacted
        line = format_gauge(commit_gauge(s.head, settings), color=False)
        assert (
            s.tokens > 1_600 and "full at 80% (pending)" in line if enabled else "full at 80% (off)" in line
        )
        assert ("micro at 60% (fired)" if enabled else "micro at 60% (off)") in line
        if enabled:
            s.compact()
            reading = commit_gauge(s.head, settings)
            assert s.head.kind == "compaction" and reading.fired is not None and "full" in reading.fired
            assert "(pending)" not in format_gauge(reading, color=False)


_COMMIT_FIELDS = st.fixed_dictionaries(
    {
        "tokens": st.integers(0, 400_000),
        "kind": st.sampled_from(["turn", "compaction", "import", "reset"]),
        "capacity": st.sampled_from([None, 8_000, 128_000, 200_000]),
        "measured": st.one_of(st.none(), st.integers(0, 400_000)),
        "calibration": st.one_of(st.none(), st.floats(0.3, 5.0)),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    heads=st.lists(st.one_of(st.none(), _COMMIT_FIELDS), max_size=30),
    enabled=st.booleans(),
)
def test_many_heads_read_as_each_alone(heads: list[dict | None], enabled: bool) -> None:
    """`commit_gauges` (levels per window, one reading shared per state) gives, for every head, the
    reading worked out from its own line: window, levels, fired tiers and the gauge itself."""
    conf = Settings(context_window_tokens=150_000, compaction_enabled=enabled)
    commits = []
    for h in heads:
        if h is None:
            commits.append(None)
            continue
        extra = {k: h[k] for k in ("capacity", "measured") if h[k] is not None}
        if h["calibration"] is not None:
            extra |= {"model": "anthropic:claude-x", "calibration": {"anthropic:claude-x": h["calibration"]}}
        commits.append(
            Commit(id="0" * 64, parent=None, seq=1, kind=h["kind"], blob=None, count=1, tokens=h["tokens"],
                   usage=None, time="2026-01-01T00:00:00Z", extra=extra, session="s")
        )  # fmt: skip
    for commit, reading in zip(commits, commit_gauges(commits, conf), strict=True):
        window = window_for_capacity(commit.extra.get("capacity") if commit else None, conf)
        # DESIGN §6: the larger of the measured prefix and the estimate scaled by the factor (1.0-2.0)
        factor = (
            min(max(commit.extra["calibration"]["anthropic:claude-x"], 1.0), 2.0)
            if commit and ("calibration" in commit.extra)
            else 1.0
        )
        estimate = math.ceil(commit.tokens * factor) if commit else 0
        measured = commit.extra.get("measured", -1) if commit else -1
        used, figure = (measured, "measured") if measured >= estimate else (estimate, "estimate")
        lv = levels(window, conf)
        fired = fired_tiers(commit, used, lv, conf)
        alone = gauge(used, window, lv, fired=fired, compaction_enabled=enabled, figure=figure)
        assert reading == alone
