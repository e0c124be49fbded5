"""`session export REV --format html`: the page's structure, its escaping, and a real browser reading it.

Sessions are built through the public API (turns, a /compact, a checkout) or `session demo`; the
browser tests open the exported file in headless Chromium and assert on the DOM it built.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from helpers.browser import Tree, dom, require_chromium, screenshot
from helpers.transcript_checks import CODEMIE, insert_compaction, raw_lines
from sessionstore.cli.html_page import render_page
from sessionstore.cli.main import cli
from sessionstore.porcelain.store import SessionStore

HOSTILE = '<script>document.title="pwned"</script><b id="injected">bold?</b>'
HOSTILE_OUTPUT = (
    '</pre></details></article><img id="img-injected" src=x onerror="document.title=\'pwned\'">'
    "<style>body{display:none}</style>&amp; &lt;"
)


def _turn(i: int, prompt: str, output: str, tool: str = "read_file") -> list:
    usage = RequestUsage(input_tokens=400 + 300 * i, output_tokens=20)
    return [
        ModelRequest(parts=[UserPromptPart(prompt)]),
        ModelResponse(
            parts=[
                ThinkingPart(f"thinking about step {i}"),
                ToolCallPart(tool, {"path": f"src/{i}.py"}, f"c{i}"),
            ],
            usage=usage,
            model_name="test",
        ),
        ModelRequest(parts=[ToolReturnPart(tool, output, f"c{i}")]),
        ModelResponse(parts=[TextPart(f"answer {i}")], usage=usage, model_name="test"),
    ]


def _session(store: SessionStore, name: str = "s", turns: int = 4):
    s = store.session(name)
    for i in range(turns):
        s.append(_turn(i, f"step {i} of the task", "line\n" * (50 + i)), compact=False)
    return s


def _page(store: SessionStore, rev: str) -> str:
    commit = store.resolve(rev)
    commits, _ = store.log(commit.session).scan(since_reset=False, end=commit.end)
    from sessionstore.cli.history_cmds import messages_at

    return render_page(commit, commits, messages_at(store, commit), store.settings)


def _export(root: Path, rev: str, out: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--store", str(root), "export", rev, "--format", "html", "-o", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output + result.stderr


def test_the_page_marks_each_commit_and_collapses_every_tool_result(store: SessionStore) -> None:
    s = _session(store)
    s.compact(focus="the plan")
    s.append(_turn(9, "after the compaction", "out\n" * 7), compact=False)
    s.checkout("s@2")
    page = _page(store, "s")
    tree = Tree(page)
    log = s.log()[::-1]
    # Every commit is listed, in order, with its kind; compactions and checkouts are marked.
    items = tree.find("li", "commit")
    assert [int(li.attrs["data-seq"]) for li in items] == [c.seq for c in log]
    assert [k for li in items for k in li.classes if k.startswith("kind-")] == [f"kind-{c.kind}" for c in log]
    assert "checkpoints/s/1" in items[4].all_text() and "at-rev" in items[-1].classes
    # The transcript is the state at the head, a checkout of s@2: s@1 and s@2's turns (with their own
    # markers and times), then the checkout; 8 messages.
    markers = tree.find("div", "marker")
    assert [(m.attrs["data-seq"], [k for k in m.classes if k != "marker"]) for m in markers] == [
        ("1", ["kind-turn"]),
        ("2", ["kind-turn"]),
        ("7", ["kind-checkout"]),
    ]
    times = [[t.attrs["datetime"] for t in m.children if t.tag == "time"] for m in markers]
    assert times == [[log[0].time], [log[1].time], [log[6].time]]
    articles = tree.find("article", "msg")
    assert [int(a.attrs["data-index"]) for a in articles] == list(range(8))
    results = tree.find("details", "result")
    assert len(results) == 2 and all("open" not in d.attrs for d in results)
    assert "51 lines" in results[1].all_text() and results[1].all_text().count("line\n") == 51
    assert tree.find("pre", "thinking") and tree.find("pre", "call")
    assert tree.find("pre", "call")[1].all_text() == 'read_file(path="src/1.py")'
    # The chart: one drop per compaction, at the compaction's seq, and a rule at the checkout.
    assert [d.attrs["data-seq"] for d in tree.find("line", "drop")] == ["5"]
    assert [r.attrs["data-seq"] for r in tree.find("line", "reset-rule")] == ["7"]
    assert len(tree.find("circle", "point")) == len(log)
    # Self-contained: no script, nothing fetched.
    assert not tree.find("script") and not re.search(r"\s(src|href)=", page)
    assert "Content-Security-Policy" in page


def test_the_compaction_summary_says_what_it_replaced(store: SessionStore) -> None:
    s = _session(store)
    commit = s.compact()
    tree = Tree(_page(store, "s"))
    (marker,) = tree.find("div", "marker")
    text = marker.all_text()
    assert marker.attrs["data-seq"] == str(commit.seq) and "kind-compaction" in marker.classes
    before = commit.extra["tokens_before"]
    assert f"replaced {commit.extra['messages_before']} messages, {before:,} -> {commit.tokens:,} tok" in text
    (note,) = tree.find("p", "summary-note")
    assert f"replaces {commit.extra['messages_before']} messages" in note.all_text()
    assert tree.find("article", "role-summary")[0].attrs["data-index"] == "0"
    # An earlier revision shows its own state: no compaction yet, one marker per turn.
    earlier = Tree(_page(store, "s@2"))
    assert [m.attrs["data-seq"] for m in earlier.find("div", "marker")] == ["1", "2"]
    assert not earlier.find("line", "drop")


def test_export_refuses_an_unknown_format_and_revision(tmp_path: Path, store: SessionStore) -> None:
    _session(store)
    runner = CliRunner()
    bad = runner.invoke(cli, ["--store", str(store.root), "export", "s", "--format", "pdf"])
    assert bad.exit_code == 2 and "pdf" in bad.stderr
    bad = runner.invoke(cli, ["--store", str(store.root), "export", "nosuch", "--format", "html"])
    assert bad.exit_code == 2 and "nosuch" in bad.stderr and "Traceback" not in bad.stderr


def test_in_a_browser_nothing_hostile_executes_or_becomes_an_element(
    tmp_path: Path, store: SessionStore
) -> None:
    require_chromium()
    s = store.session("x")
    s.append(_turn(0, HOSTILE, HOSTILE_OUTPUT, tool='evil"><svg onload=alert(1)>'), compact=False)
    page = tmp_path / "x.html"
    _export(store.root, "x", page)
    built = dom(page)
    tree = Tree(built)
    assert tree.find("title")[0].all_text() == "x@1 · sessionstore"  # no script changed it
    assert not tree.find("script") and not tree.find("img") and not tree.find("b")
    assert not [e for e in tree.elements if e.attrs.get("id") in ("injected", "img-injected")]
    assert [e.tag for e in tree.find("svg")] == ["svg"]  # the chart only
    assert len(tree.find("style")) == 1
    texts = [a.all_text() for a in tree.find("article", "msg")]
    assert HOSTILE in texts[0]  # shown as the text it is
    assert HOSTILE_OUTPUT in texts[2]
    assert 'evil"><svg onload=alert(1)>(path="src/0.py")' in texts[1]


def test_in_a_browser_the_demo_page_has_its_chart_and_markers_where_the_log_says(tmp_path: Path) -> None:
    require_chromium()
    root = tmp_path / "store"
    result = CliRunner().invoke(cli, ["--store", str(root), "demo"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    page = tmp_path / "demo.html"
    _export(root, "demo", page)
    tree = Tree(dom(page))
    log = SessionStore.open(root, create=False).log("demo").scan(since_reset=False)[0]
    assert len(tree.find("svg", "chart")) == 1
    points = {p.attrs["data-seq"]: float(p.attrs["cx"]) for p in tree.find("circle", "point")}
    assert sorted(points, key=int) == [str(c.seq) for c in log]
    drops = tree.find("line", "drop")
    assert [d.attrs["data-seq"] for d in drops] == [str(c.seq) for c in log if c.kind == "compaction"]
    assert len(drops) >= 2
    for d in drops:  # each drop stands at its commit's x, falling from tokens_before to tokens
        assert float(d.attrs["x1"]) == float(d.attrs["x2"]) == points[d.attrs["data-seq"]]
        assert float(d.attrs["y1"]) < float(d.attrs["y2"])
    assert tree.find("polyline", "tokens") and tree.find("polyline", "measured")
    assert tree.find("polyline", "level-micro") and tree.find("polyline", "level-full")
    newest_reset = [c for c in log if c.is_reset][-1]
    assert tree.find("div", "marker")[0].attrs["data-seq"] == str(newest_reset.seq)
    png = screenshot(page, tmp_path / "demo.png")
    assert len(png) > 20_000  # a rendered page, not a blank one


@pytest.mark.slow
def test_in_a_browser_ten_thousand_messages_load_with_long_output_collapsed(
    tmp_path: Path, store: SessionStore
) -> None:
    require_chromium()
    s = store.session("big")
    huge = "".join(f"{n:06d} a long line of tool output\n" for n in range(20_000))
    messages: list = []
    for i in range(2_500):
        messages += _turn(i, f"prompt {i}", huge if i == 1_234 else f"result {i}\n" * 3)
    s.append(messages, compact=False)
    page = tmp_path / "big.html"
    _export(store.root, "big", page)
    built = dom(page)  # counted with regexes: a Python parse of the whole DOM would cost more than the load
    assert len(re.findall(r'<article class="msg role-\w+" data-index="\d+">', built)) == 10_000
    results = re.findall(r"<details class=\"result\"([^>]*)>", built)
    assert len(results) == 2_500 and not any(" open" in attrs for attrs in results)
    assert built.count("read_file → 20,000 lines") == 1
    assert built.count("a long line of tool output") == 20_000  # collapsed, not cut


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(["turn", "turn", "compact", "checkout"]), min_size=1, max_size=8))
def test_every_message_appears_once_under_the_commit_that_brought_it(
    tmp_path_factory, ops: list[str]
) -> None:
    store = SessionStore.open(tmp_path_factory.mktemp("h") / "store")
    s = store.session("h")
    s.append(_turn(0, "first", "x\n"), compact=False)
    for n, op in enumerate(ops, start=1):
        if op == "turn":
            s.append(_turn(n, f"turn {n}", "y\n" * n), compact=False)
        elif op == "compact" and s.persisted_count > 4:
            s.compact()
        elif op == "checkout":
            s.checkout(f"h@{1 + n % s.head.seq}")
    tree = Tree(_page(store, "h"))
    articles = tree.find("article", "msg")
    assert [int(a.attrs["data-index"]) for a in articles] == list(range(s.persisted_count))
    markers = [int(m.attrs["data-seq"]) for m in tree.find("div", "marker")]
    assert markers and markers[-1] == s.head.seq  # never the fallback: the head's commit is marked
    assert markers == sorted(markers) and len(set(markers)) == len(markers)


def test_in_a_browser_an_imported_claude_code_compaction_is_a_drop_with_its_recorded_tokens(
    tmp_path: Path,
) -> None:
    # A real Claude Code transcript with the compaction Claude Code writes (boundary + summary) after
    # its "proceed" turn (issue 28, item 3): was a slope titled "45,836 -> 45,836".
    require_chromium()
    meta = {"trigger": "auto", "preTokens": 155432, "postTokens": 15771}
    lines = insert_compaction(raw_lines(CODEMIE), 94, "Summary: a codex metrics plugin.", meta)
    source = tmp_path / "compacted.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    root = SessionStore.open(tmp_path / "store").root
    runner = CliRunner()
    done = runner.invoke(cli, ["--store", str(root), "import", str(source), "--as", "cc"])
    assert done.exit_code == 0, done.stderr
    log = SessionStore.open(root, create=False).log("cc").scan(since_reset=False)[0]
    at = next(i for i, c in enumerate(log) if c.kind == "compaction")
    compaction, parent = log[at], log[at - 1]
    assert compaction.extra["tokens_before"] == parent.tokens > compaction.tokens
    recorded = "Claude Code recorded 155,432 -> 15,771 tok, auto"
    oneline = runner.invoke(cli, ["--store", str(root), "log", "cc", "--oneline"]).stdout
    assert f"{parent.tokens:,} -> {compaction.tokens:,} tok  ({recorded})" in oneline
    page = tmp_path / "cc.html"
    _export(root, "cc", page)
    tree = Tree(dom(page))
    (drop,) = tree.find("line", "drop")
    assert drop.attrs["data-seq"] == str(compaction.seq)
    assert float(drop.attrs["x1"]) == float(drop.attrs["x2"])  # straight down, at the compaction
    assert float(drop.attrs["y1"]) < float(drop.attrs["y2"])  # from before (higher) to after
    title = drop.all_text()
    assert f"{parent.tokens:,} -> {compaction.tokens:,} tok" in title and recorded in title
    assert recorded in tree.find("p", "summary-note")[0].all_text()


def test_in_a_browser_a_long_commit_list_is_one_closed_line_above_the_transcript(
    tmp_path: Path, store: SessionStore
) -> None:
    # issue 28, item 12: a 3,000-commit session listed every commit before its transcript.
    require_chromium()
    s = store.session("long")
    with store.lock("long"):
        for i in range(300):
            s.commit_turn(_turn(i, f"step {i}", "ok\n"))
    page = tmp_path / "long.html"
    _export(store.root, "long", page)
    tree = Tree(dom(page))
    (listing,) = tree.find("details", "commits")
    assert "open" not in listing.attrs  # closed: one line
    assert "300 commits: 300 turns" in listing.children[0].all_text()
    assert len([li for li in tree.find("li") if "commit" in li.classes]) == 300  # all there, on a click
    sections = [e.attrs.get("id") for e in tree.find("section")]
    assert sections == ["chart", "log", "transcript"]
    short = store.session("short")
    short.append(_turn(0, "one", "ok\n"), compact=False)
    _export(store.root, "short", page)
    (listing,) = Tree(dom(page)).find("details", "commits")
    assert "open" in listing.attrs  # a short list is shown as it is
