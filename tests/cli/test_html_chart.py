"""The SVG chart over a session's commits: for any log, every point and drop is where the log says, inside
the chart, and the levels are the gauge's (hypothesis over commit sequences)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.browser import Tree
from sessionstore.accounting.settings import Settings
from sessionstore.cli.html_chart import HEIGHT, WIDTH, chart_svg
from sessionstore.plumbing.commits import Commit
from sessionstore.porcelain.session.gauge import commit_gauges

SETTINGS = Settings()
KINDS = st.sampled_from(["turn", "turn", "turn", "compaction", "checkout", "fork", "import"])


@st.composite
def logs(draw: st.DrawFn) -> list[Commit]:
    commits: list[Commit] = []
    tokens = 0
    for seq in range(1, draw(st.integers(1, 40)) + 1):
        kind = draw(KINDS) if seq > 1 else "turn"
        extra: dict = {"capacity": draw(st.sampled_from([None, 16_000, 200_000]))}
        if kind == "compaction":
            extra.update(tier=draw(st.sampled_from([2, 3])), tokens_before=tokens, blobs=[], checkpoint=seq)
            tokens = draw(st.integers(0, max(tokens, 0)))
        elif kind in ("checkout", "fork"):
            extra.update(blobs=[], target="ab" * 32)
            tokens = draw(st.integers(0, 50_000))
        else:
            tokens += draw(st.integers(0, 30_000))
            if draw(st.booleans()):
                extra["measured"] = tokens + draw(st.integers(0, 500))
            if draw(st.booleans()):
                extra["peak"] = tokens + draw(st.integers(1, 5_000))  # a request is never 0 tokens
        commits.append(
            Commit(f"{seq:064x}", None, seq, kind, None, seq, tokens, None, "2026-01-01T00:00:00Z", extra)
        )
    return commits


@settings(max_examples=60, deadline=None)
@given(logs())
def test_points_and_drops_are_where_the_log_says_and_inside_the_chart(commits: list[Commit]) -> None:
    svg = chart_svg(commits, commit_gauges(commits, SETTINGS))
    tree = Tree(svg)
    points = tree.find("circle", "point")
    assert [int(p.attrs["data-seq"]) for p in points] == [c.seq for c in commits]
    xs = [float(p.attrs["cx"]) for p in points]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)  # one step per commit, oldest left
    compactions = [c for c in commits if c.kind == "compaction"]
    drops = tree.find("line", "drop")
    assert [int(d.attrs["data-seq"]) for d in drops] == [c.seq for c in compactions]
    by_seq = dict(zip([c.seq for c in commits], xs, strict=True))
    for d, c in zip(drops, compactions, strict=True):
        assert float(d.attrs["x1"]) == float(d.attrs["x2"]) == by_seq[c.seq]
        assert float(d.attrs["y1"]) <= float(d.attrs["y2"])  # a drop: from tokens_before down to tokens
    assert len(tree.find("line", "reset-rule")) == sum(c.kind in ("checkout", "fork") for c in commits)
    assert len(tree.find("circle", "peak")) == sum("peak" in c.extra for c in commits)
    for el in tree.elements:  # nothing drawn outside the view box
        for key in ("cx", "x1", "x2"):
            if key in el.attrs:
                assert 0 <= float(el.attrs[key]) <= WIDTH
        for key in ("cy", "y1", "y2"):
            if key in el.attrs:
                assert 0 <= float(el.attrs[key]) <= HEIGHT
    for line in tree.find("polyline"):
        for pair in line.attrs["points"].split():
            px, py = map(float, pair.split(","))
            assert 0 <= px <= WIDTH + 1 and 0 <= py <= HEIGHT


def test_levels_come_from_the_gauge_and_far_levels_are_named_not_drawn() -> None:
    small = Commit(
        "a" * 64, None, 1, "turn", None, 2, 9_000, None, "t", {"capacity": 16_000, "measured": 9_100}
    )
    svg = chart_svg([small], commit_gauges([small], SETTINGS))
    assert 'class="level level-micro"' in svg and 'class="level level-full"' in svg
    assert "micro level 9.6k" in svg and "full level 12.8k" in svg and "window 16k" in svg
    tiny = Commit("b" * 64, None, 1, "turn", None, 2, 300, None, "t", {})  # 1M configured window
    svg = chart_svg([tiny], commit_gauges([tiny], SETTINGS))
    assert "level-micro" in svg and 'class="level level-micro"' not in svg
    assert "(above the chart)" in svg
    assert chart_svg([], []).startswith('<p class="empty">')
