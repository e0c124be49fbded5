"""The SVG chart of `session export --format html`: a session's context over its commits (pure, inline).

One x step per commit (oldest left). Lines: the stored tokens (`tokens`, the local estimate of the
replayed history) and the measured prefix (`measured`, where a turn recorded one); the micro and full
levels as step lines, from each commit's resolved window (`porcelain.session.gauge.commit_gauges`, exactly the
gauge's); every compaction as the drop it is (a vertical segment from `tokens_before` to `tokens`),
checkouts and forks as dashed rules, and the peak of a run's requests (a commit's `peak`, when
recorded) as a dot. No script: hovering a point shows its `<title>`. Elements carry `data-seq` so a
reader (or a test) can match them to the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..accounting.thresholds import over_threshold
from ..plumbing.commits import Commit
from ..porcelain.session.gauge import Gauge, format_tokens
from .history_cmds import recorded_note

WIDTH, HEIGHT = 960, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40
LEVEL_REACH = 3
"""A level is drawn when it is at most this many times the data's peak; else the legend names it (a 1M
window's levels would flatten a 20k session into the axis)."""


def _peak(c: Commit) -> int:
    value = c.extra.get("peak")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _measured(c: Commit) -> int | None:
    value = c.extra.get("measured")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def chart_svg(commits: Sequence[Commit], gauges: Sequence[Gauge]) -> str:
    """The chart of `commits` (oldest first) with `gauges[i]` the gauge at `commits[i]`."""
    if not commits:
        return '<p class="empty">No commits yet: nothing to chart.</p>'
    data_max = max(
        max(c.tokens for c in commits),
        max(_before(commits, i) for i in range(len(commits))),
        max(_measured(c) or 0 for c in commits),
        max(_peak(c) for c in commits),
        1,
    )
    micro = [g.levels.micro for g in gauges]
    full = [g.levels.full for g in gauges]
    # A level beyond the chart's reach is named in the legend instead (the one comparison helper decides).
    reach = LEVEL_REACH * data_max
    drawn = {name: not over_threshold(max(lv), reach) for name, lv in (("micro", micro), ("full", full))}
    top = max([data_max, *(max(lv) for name, lv in (("micro", micro), ("full", full)) if drawn[name])])
    top = _nice(top * 1.05)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(commits)

    def x(i: int) -> float:
        return LEFT + (plot_w / 2 if n == 1 else plot_w * i / (n - 1))

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / top)

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="context over commits">'
    ]
    for frac in (0, 0.25, 0.5, 0.75, 1):  # the y grid, labelled in tokens
        v = top * frac
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
            f'<text class="axis" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">'
            f"{format_tokens(int(v))}</text>"
        )
    first, last = commits[0].seq, commits[-1].seq
    out.append(
        f'<text class="axis" x="{x(0):.1f}" y="{HEIGHT - 22}" text-anchor="start">@{first}</text>'
        f'<text class="axis" x="{x(n - 1):.1f}" y="{HEIGHT - 22}" text-anchor="end">@{last}</text>'
    )
    for name, values in (("micro", micro), ("full", full)):
        if drawn[name]:
            out.append(_steps(f"level level-{name}", [x(i) for i in range(n)], [y(v) for v in values]))
    for i, c in enumerate(commits):
        if c.kind in ("checkout", "fork"):
            out.append(
                f'<line class="reset-rule" data-seq="{c.seq}" x1="{x(i):.1f}" x2="{x(i):.1f}" '
                f'y1="{TOP}" y2="{TOP + plot_h}"><title>{escape(c.kind)} @{c.seq}</title></line>'
            )
    stored: list[tuple[float, float]] = []
    for i, c in enumerate(commits):
        if c.kind == "compaction":  # the line falls straight down at the compaction, as the context did
            stored.append((x(i), y(_before(commits, i))))
        stored.append((x(i), y(c.tokens)))
    out.append(_polyline("tokens", stored))
    # The measured prefix is broken where a commit has none: a reset point invalidates it (DESIGN §6).
    runs: list[list[tuple[float, float]]] = [[]]
    for i, c in enumerate(commits):
        m = _measured(c)
        if m is None:
            runs.append([])
        else:
            runs[-1].append((x(i), y(m)))
    measured = [run for run in runs if run]
    for run in measured:
        out.append(_polyline("measured", run if len(run) > 1 else [*run, (run[0][0] + 1, run[0][1])]))
    for i, c in enumerate(commits):
        if c.kind == "compaction":
            before = _before(commits, i)
            note = f"; {escape(recorded)}" if (recorded := recorded_note(c)) else ""
            out.append(
                f'<line class="drop" data-seq="{c.seq}" x1="{x(i):.1f}" x2="{x(i):.1f}" '
                f'y1="{y(before):.1f}" y2="{y(c.tokens):.1f}"><title>compaction tier {c.tier} @{c.seq}: '
                f"{before:,} -&gt; {c.tokens:,} tok{note}</title></line>"
            )
        if peak := _peak(c):
            out.append(
                f'<circle class="peak" data-seq="{c.seq}" cx="{x(i):.1f}" cy="{y(peak):.1f}" r="3">'
                f"<title>peak request of the run @{c.seq}: {peak:,} tok</title></circle>"
            )
        out.append(
            f'<circle class="point" data-seq="{c.seq}" cx="{x(i):.1f}" cy="{y(c.tokens):.1f}" r="2">'
            f"<title>@{c.seq} {escape(c.kind)}: {c.tokens:,} tok</title></circle>"
        )
    out.append("</svg>")
    out.append(_legend(gauges[-1], drawn, bool(measured), any(_peak(c) for c in commits)))
    return "".join(out)


def _before(commits: Sequence[Commit], i: int) -> int:
    """The local estimate a commit started from: a compaction's own `tokens_before`, else its parent's
    tokens (an import written before imports recorded it), else its own."""
    c = commits[i]
    recorded = c.extra.get("tokens_before") if c.kind == "compaction" else None
    if isinstance(recorded, int):
        return recorded
    return commits[i - 1].tokens if i > 0 and c.kind == "compaction" else c.tokens


def _nice(value: float) -> int:
    """The smallest 1, 2, 2.5 or 5 x 10^k at or above `value` with quarters that read as round numbers."""
    scale = 1
    while True:
        for step in (1, 2, 2.5, 5):
            if step * scale * 4 >= value:
                return max(4, int(step * scale * 4))
        scale *= 10


def _polyline(cls: str, points: list[tuple[float, float]]) -> str:
    coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
    return f'<polyline class="{cls}" fill="none" points="{coords}"/>'


def _steps(cls: str, xs: list[float], ys: list[float]) -> str:
    """A level as a step line: it changes only where a commit's window did."""
    points = [(xs[0], ys[0])]
    for i in range(1, len(xs)):
        if ys[i] != ys[i - 1]:
            points.append((xs[i], ys[i - 1]))
        points.append((xs[i], ys[i]))
    if len(points) == 1:
        points.append((xs[0] + 1, ys[0]))
    return _polyline(cls, points)


def _legend(last: Gauge, drawn: dict[str, bool], measured: bool, peaks: bool) -> str:
    items = ['<span class="key tokens">stored tokens</span>']
    if measured:
        items.append('<span class="key measured">measured prefix</span>')
    for name, level in (("micro", last.levels.micro), ("full", last.levels.full)):
        where = "" if drawn[name] else " (above the chart)"
        items.append(f'<span class="key level-{name}">{name} level {format_tokens(level)}{where}</span>')
    items.append('<span class="key drop">compaction</span>')
    if peaks:
        items.append('<span class="key peak">peak request in a run</span>')
    items.append(f'<span class="window">window {format_tokens(last.window)} (resolved, as the gauge)</span>')
    return f'<p class="legend">{" ".join(items)}</p>'
