"""The context gauge (DESIGN §9): how full a session's window is, in one glyph-and-number line.

It takes the same window and levels the triggers use (`accounting.thresholds`), and decides its colour
with `over_threshold`, so the gauge turns yellow exactly when micro compaction would fire and red
exactly when full compaction would. A level that is exceeded says "(fired)" only when that tier
really fired on the session's current state (`fired_tiers`): "(pending)" when it will fire at the next
append or request, "(off)" when compaction is disabled, "(over)" when the reading has no session state
(an explicit `--model`). Imports nothing heavy: it runs in a shell prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from sessionstore.accounting.calibration import FIELD as CALIBRATION_FIELD
from sessionstore.accounting.calibration import Calibration, scale
from sessionstore.accounting.settings import Settings
from sessionstore.accounting.thresholds import Levels, levels, over_threshold, window_for_capacity
from sessionstore.plumbing.commits import Commit

__all__ = [
    "GLYPHS",
    "Gauge",
    "commit_gauge",
    "commit_gauges",
    "fired_tiers",
    "format_gauge",
    "format_tokens",
    "gauge",
    "line_reading",
]

GLYPHS = ("○", "◔", "◑", "◕", "●")
"""Fill glyphs for 0, 1/4, 1/2, 3/4 and a full window: the glyph shown is the nearest quarter."""
_LAST_GLYPH = len(GLYPHS) - 1

Band = Literal["green", "yellow", "red"]

_ANSI = {"green": "\x1b[32m", "yellow": "\x1b[33m", "red": "\x1b[31m"}
_RESET = "\x1b[0m"


class Gauge(NamedTuple):
    """One reading. `used` None means unknown: glyph '?', and no percent, band or tokens_left.

    Immutable, compared field by field. A named tuple rather than a frozen dataclass: `session list`
    reads one per session (10,000 in a big store), and a tuple is built in a fraction of the time
    and defined without the dataclass machinery's start-up cost."""

    used: int | None
    window: int
    levels: Levels
    glyph: str
    percent: int | None
    band: Band | None
    next_level: Literal["micro", "full"] | None
    """The level that fires next (None once full has fired or usage is unknown)."""
    tokens_left: int | None
    """Tokens that can still be added before `next_level` fires (0 once full has fired)."""
    fired: frozenset[str] | None = None
    """The tiers ("micro", "full") that really fired on the session's current state (`fired_tiers`);
    None when the reading has no session state to ask."""
    compaction_enabled: bool = True
    figure: Literal["measured", "estimate"] | None = None
    """Which figure `used` is (DESIGN §6: the larger of the two decides): the provider-"measured"
    prefix, or the calibrated local "estimate"; None when the reading does not say."""

    def to_json(self) -> dict[str, Any]:
        return {
            "used": self.used,
            "window": self.window,
            "micro_level": self.levels.micro,
            "full_level": self.levels.full,
            "glyph": self.glyph,
            "percent": self.percent,
            "band": self.band,
            "next_level": self.next_level,
            "tokens_left": self.tokens_left,
            "figure": self.figure,
        }


def gauge(
    used: int | None,
    window: int,
    levels: Levels,
    *,
    fired: frozenset[str] | None = None,
    compaction_enabled: bool = True,
    figure: Literal["measured", "estimate"] | None = None,
) -> Gauge:
    """Read the gauge for `used` tokens of `window`: green, yellow past micro, red past full.
    `fired` (from `fired_tiers`) says which exceeded levels really fired; see the module docstring.
    `figure` names what `used` is (the measured prefix or the calibrated estimate), shown after it."""
    if window <= 0:
        raise ValueError(f"window must be a positive number of tokens, not {window!r}")
    if used is None:
        return Gauge(None, window, levels, "?", None, None, None, None, fired, compaction_enabled, figure)
    if used < 0:
        used = 0
    fill = used / window
    glyph = GLYPHS[min(_LAST_GLYPH, math.floor(fill * 4 + 0.5))]
    percent = round(fill * 100)
    if used < window and percent > 99:
        percent = 99  # 100% only when the window is really full
    micro, full = levels.micro, levels.full
    if over_threshold(used, full):
        band: Band = "red"
        next_level: Literal["micro", "full"] | None = None
        left = 0
    elif over_threshold(used, micro):
        band, next_level, left = "yellow", "full", full - used
    else:
        band, next_level, left = "green", "micro", micro - used
    return Gauge(
        used,
        window,
        levels,
        glyph,
        percent,
        band,
        next_level,
        left if left > 0 else 0,
        fired,
        compaction_enabled,
        figure,
    )


def format_tokens(count: int) -> str:
    """Compact size for a window: 200k, 128k, 1.05M."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.3g}M"
    if count >= 1_000:
        return f"{count / 1_000:.4g}k"
    return str(count)


def _level_text(g: Gauge, name: Literal["micro", "full"], level: int) -> str:
    at = f"{name} at {round(level * 100 / g.window)}%"
    if g.used is None:
        return at
    if over_threshold(g.used, level):
        if g.fired is None:
            return f"{at} (over)"
        if name in g.fired:
            return f"{at} (fired)"
        return f"{at} ({'pending' if g.compaction_enabled else 'off'})"
    if g.next_level == name:
        return f"{name} in {g.tokens_left:,} tok"
    return at


def format_gauge(g: Gauge, *, color: bool) -> str:
    """One line, e.g. `◕ 71% of 200k measured · micro at 60% (fired) · full in 18,400 tok`: the
    figure (`measured` or `estimate`) follows the window when the reading names it."""
    head = "?" if g.used is None else f"{g.glyph} {g.percent}%"
    if color and g.band is not None:
        head = f"{_ANSI[g.band]}{head}{_RESET}"
    figure = f" {g.figure}" if g.figure and g.used is not None else ""
    return " · ".join(
        [
            f"{head} of {format_tokens(g.window)}{figure}",
            _level_text(g, "micro", g.levels.micro),
            _level_text(g, "full", g.levels.full),
        ]
    )


def fired_tiers(commit: Commit | None, used: int, levels: Levels, settings: Settings) -> frozenset[str]:
    """The tiers that really fired on the state at `commit` (`used` tokens against `levels`).

    Micro: compaction is on and `used` is over the micro level, so every view of this state is the
    micro view (tier 1 is applied when the view is built, never persisted). Full: `commit` is a
    compaction, i.e. the state IS the result of tier 2 (or 3). A turn over the full level is not
    "fired": its compaction is still to come (mid-run steps commit first and compact at the next
    request), failed, or is switched off.
    """
    if not settings.compaction_enabled:
        return _FIRED[False, False]
    return _FIRED[over_threshold(used, levels.micro), commit is not None and commit.kind == "compaction"]


_FIRED = {
    (micro, full): frozenset(("micro",) * micro + ("full",) * full)
    for micro in (False, True)
    for full in (False, True)
}
"""`fired_tiers`' four possible answers, made once (a listing asks once per session)."""


def line_reading(commit: Commit) -> tuple[int, Literal["measured", "estimate"]]:
    """What the triggers would decide on at `commit`, from its line alone (DESIGN §6): the larger of
    the measured prefix the line records and its local estimate scaled by the model's calibration,
    and which of the two that is."""
    extra = commit.extra
    used = commit.tokens
    if extra.get(CALIBRATION_FIELD):
        model = extra.get("model")
        used = scale(
            used, Calibration.of_line(extra).decision_factor(model if isinstance(model, str) else None)
        )
    measured = extra.get("measured")
    if isinstance(measured, int) and measured >= used:
        return measured, "measured"
    return used, "estimate"


def commit_gauge(commit: Commit | None, settings: Settings) -> Gauge:
    """The gauge of a session at `commit`, from its log line alone (no messages, no pydantic-ai).

    Turns record the model's known `capacity`, the `measured` prefix and the model's `calibration`;
    the window is that capacity capped by `context_window_tokens`, exactly as the triggers resolve
    it, and the reading is the larger of the measured prefix and the calibrated local estimate, as
    the triggers decide (DESIGN §6), named by `figure`. After a reset point (no measurement yet) the
    calibrated local estimate stands in, as it does for the triggers.
    """
    return commit_gauges([commit], settings)[0]


def commit_gauges(commits: Sequence[Commit | None], settings: Settings) -> list[Gauge]:
    """`commit_gauge` of many heads (`session list`), resolving the levels once per distinct window
    and the reading once per distinct (window, used, compaction or not): sessions at the same state
    share one immutable `Gauge`."""
    by_window: dict[int, Levels] = {}
    readings: dict[tuple[int, int, bool, str], Gauge] = {}
    enabled = settings.compaction_enabled
    out = []
    for commit in commits:
        if commit is None:
            window, used, figure, compacted = window_for_capacity(None, settings), 0, "estimate", False
        else:
            window = window_for_capacity(commit.extra.get("capacity"), settings)
            used, figure = line_reading(commit)
            compacted = commit.kind == "compaction"
        known = readings.get((window, used, compacted, figure))
        if known is None:
            lv = by_window.get(window)
            if lv is None:
                lv = by_window[window] = levels(window, settings)
            fired = fired_tiers(commit, used, lv, settings)
            known = readings[window, used, compacted, figure] = gauge(
                used, window, lv, fired=fired, compaction_enabled=enabled, figure=figure
            )
        out.append(known)
    return out
