"""`session export REV --format html`: one self-contained page of a session (pure rendering, no store).

The page holds inline CSS and an inline SVG chart (`html_chart`) and nothing else: no script, no
font, no image, no CDN, and a Content-Security-Policy that forbids them anyway, so it opens the same
offline, attached to a bug, or years later. Every text it shows (transcripts hold arbitrary tool
output) goes through `html.escape`.

What it shows (DESIGN §11): the gauge at REV; the chart over the commits up to REV; the commit list
with compactions, checkpoints, checkouts and forks marked (closed past `OPEN_COMMITS`, so a long
session's transcript comes right after the chart); the transcript of the state at REV, each
commit's messages under a marker with its time, the compaction summary marked as such with what it
replaced (messages and tokens before -> after). Tool results are collapsed (`<details>`) with their
size, never cut: a 10,000-message page stays light to open and scroll (`content-visibility`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any

from ..accounting.settings import Settings
from ..formats.injected import injected
from ..plumbing.commits import Commit
from ..porcelain.session.gauge import commit_gauge, commit_gauges, format_gauge
from .history_cmds import describe, recorded_note
from .html_chart import chart_svg
from .output import number, plural, short_id
from .render import call_args, format_call, text_of

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

CSP = "default-src 'none'; style-src 'unsafe-inline'"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1000px;margin:0 auto;padding:16px 20px 64px}
h1{font-size:20px;margin:8px 0 2px}h2{font-size:16px;margin:28px 0 8px}
details.commits>summary{cursor:pointer;color:#656d76;font-size:12px;margin:28px 0 8px}
details.commits>summary h2{display:inline;color:#1f2328;margin:0}
.meta,.legend,.time,.axis{color:#656d76;font-size:12px}
.gauge{font-weight:600}.band-green{color:#1a7f37}.band-yellow{color:#9a6700}.band-red{color:#cf222e}
svg.chart{background:#fff;border:1px solid #d0d7de;border-radius:6px;max-width:100%;height:auto}
.grid{stroke:#eaeef2}.axis{fill:#656d76}
polyline.tokens{stroke:#0969da;stroke-width:2}
polyline.measured{stroke:#8250df;stroke-width:1.5;stroke-dasharray:4 3}
polyline.level-micro{stroke:#bf8700;stroke-width:1}polyline.level-full{stroke:#cf222e;stroke-width:1}
line.drop{stroke:#cf222e;stroke-width:3}line.reset-rule{stroke:#57606a;stroke-dasharray:3 3}
circle.point{fill:#0969da}circle.peak{fill:#fb8500}
.key{margin-right:12px}.key::before{content:"";display:inline-block;width:14px;height:3px;margin-right:4px;
vertical-align:middle;background:#0969da}.key.measured::before{background:#8250df}
.key.level-micro::before{background:#bf8700}.key.level-full::before{background:#cf222e}
.key.drop::before{background:#cf222e;width:3px;height:12px}.key.peak::before{background:#fb8500;
width:7px;height:7px;border-radius:50%}
ol.commits{list-style:none;padding:0;margin:0;font:12px/1.6 ui-monospace,SFMono-Regular,Menlo,monospace}
ol.commits li{padding:1px 6px;border-left:3px solid transparent}
li.kind-compaction,.marker.kind-compaction{border-left-color:#cf222e;background:#fff5f5}
li.kind-checkout,li.kind-fork,.marker.kind-checkout,.marker.kind-fork{border-left-color:#57606a;background:#f3f4f6}
li.at-rev{font-weight:700}
.marker{margin:18px 0 6px;padding:4px 8px;border-left:3px solid #0969da;font-size:12px;color:#424a53;
background:#eef4ff}
article.msg{content-visibility:auto;contain-intrinsic-size:auto 80px;background:#fff;border:1px solid #d0d7de;
border-radius:6px;margin:6px 0;padding:6px 10px}
.msg header{display:flex;gap:10px;align-items:baseline}.role{font-weight:700;text-transform:lowercase}
.role-user .role{color:#0969da}.role-assistant .role{color:#1a7f37}.role-summary .role{color:#cf222e}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;
font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
.thinking{opacity:.55;font-style:italic}.call{color:#0550ae}
details.result summary{cursor:pointer;color:#424a53;font:12px ui-monospace,monospace}
.summary-note{color:#cf222e;font-weight:600;font-size:12px}
"""


def render_page(
    commit: Commit, commits: Sequence[Commit], messages: Sequence[ModelMessage], settings: Settings
) -> str:
    """The page of `commit`'s state: `commits` is its session's log up to it (oldest first) and
    `messages` the replayed history after it."""
    rev = f"{commit.session}@{commit.seq}"
    g = commit_gauge(commit, settings)
    exported = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(rev)} · sessionstore</title><style>{CSS}</style></head><body><main>",
        f"<h1>session {escape(commit.session)} "
        f'<span class="meta">@{commit.seq} {short_id(commit.id)}</span></h1>',
        f'<p class="meta">{plural(commit.count, "message")} · {number(commit.tokens)} tok · '
        f"{plural(len(commits), 'commit')} · committed {escape(_when(commit.time))} · "
        f"exported {exported}</p>",
        f'<p class="gauge band-{g.band or "none"}">{escape(format_gauge(g, color=False))}</p>',
        '<section id="chart"><h2>Context over the commits</h2>',
        chart_svg(commits, commit_gauges(commits, settings)),
        "</section>",
    ]
    body = [*head, *_commit_list(commits, commit), '<section id="transcript"><h2>Transcript</h2>']
    body.extend(_transcript(commits, messages))
    body.append("</section></main></body></html>\n")
    return "\n".join(body)


def _when(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return stamp


OPEN_COMMITS = 20
"""A commit list this long or shorter is shown open; a longer one is one closed line (`<details>`), so a
3,000-commit session shows its transcript right under the chart."""


def _commit_list(commits: Sequence[Commit], at: Commit) -> list[str]:
    kinds: dict[str, int] = {}
    for c in commits:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    counted = ", ".join(plural(n, kind) for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    shown = " open" if len(commits) <= OPEN_COMMITS else ""
    out = [
        f'<section id="log"><details class="commits"{shown}><summary><h2>Commits</h2> '
        f"{plural(len(commits), 'commit')}: {escape(counted)}</summary>",
        '<ol class="commits" reversed>',
    ]
    previous: Commit | None = None
    for c in commits:
        cls = f"commit kind-{escape(c.kind)}" + (" at-rev" if c.id == at.id else "")
        text = " ".join(describe(c, previous.tokens if previous else None).split())
        out.append(
            f'<li class="{cls}" id="commit-{c.seq}" data-seq="{c.seq}">{short_id(c.id)} @{c.seq} '
            f'{escape(text)} <span class="time">{escape(_when(c.time))}</span></li>'
        )
        previous = c
    out.append("</ol></details></section>")
    return out


Group = tuple[Commit | None, int, int]


def _groups(commits: Sequence[Commit], count: int) -> list[Group]:
    """(commit, start, end): which messages of the replayed history each commit brought, oldest first.

    From the newest reset point on; a checkout of an earlier commit of the same log is followed back, so
    the state it restored keeps its own turns (and their times), and the checkout itself is an empty group
    after them. A log that does not add up (it always should) gives one group: nothing is hidden."""
    groups: list[Group] = []
    upto = len(commits)
    while True:
        start = max((i for i in range(upto) if commits[i].is_reset), default=None)
        segment: list[Group] = []
        before = 0
        for c in commits[start or 0 : upto]:
            segment.append((c, 0 if c.is_reset else before, c.count))
            before = c.count
        reset = commits[start] if start is not None else None
        target = _restored(commits[:start], reset) if reset is not None and start is not None else None
        if reset is not None and target is not None:
            segment[0] = (reset, reset.count, reset.count)
            groups = segment + groups
            upto = target + 1
            continue
        groups = segment + groups
        break
    ends = [0, *(hi for _, _, hi in groups)]
    if not groups or ends[-1] != count or any(lo != ends[i] for i, (_, lo, _) in enumerate(groups)):
        return [(None, 0, count)]
    return groups


def _restored(earlier: Sequence[Commit], reset: Commit) -> int | None:
    """The index in `earlier` of the commit a checkout restored (same log, same count), else None."""
    if reset.kind != "checkout":
        return None
    index = next((i for i, c in enumerate(earlier) if c.id == reset.target), None)
    return index if index is not None and earlier[index].count == reset.count else None


def _marker(c: Commit, previous_tokens: int | None) -> str:
    when = escape(_when(c.time))
    if c.kind == "compaction":
        k = c.extra.get("checkpoint", "?")
        replaced = c.extra.get("messages_before")
        what = "replaced the history"
        if isinstance(replaced, int):
            what = f"replaced {plural(replaced, 'message')}"
        before = c.extra.get("tokens_before", previous_tokens)
        tokens = f"{number(before)} -> " if isinstance(before, int) else ""
        focus = f" · focus {escape(str(c.extra['focus']))}" if c.extra.get("focus") else ""
        focus += f" · {escape(recorded)}" if (recorded := recorded_note(c)) else ""
        ref = f"checkpoints/{escape(c.session)}/{k}"
        text = f"checkpoint {ref} · compaction tier {c.tier} · {what}, {tokens}{number(c.tokens)} tok{focus}"
    elif c.kind in ("checkout", "fork"):
        origin = f" from {escape(str(c.extra['from']))}" if c.kind == "fork" and "from" in c.extra else ""
        state = f"{plural(c.count, 'message')} · {number(c.tokens)} tok"
        text = f"{c.kind} of {short_id(c.target)}{origin} · {state}"
    else:
        text = f"{escape(c.kind)} · +{plural(len(c.sizes), 'message')} · {number(c.tokens)} tok"
    return (
        f'<div class="marker kind-{escape(c.kind)}" data-seq="{c.seq}">@{c.seq} {short_id(c.id)} · {text} · '
        f'<time datetime="{escape(c.time)}">{when}</time></div>'
    )


def _transcript(commits: Sequence[Commit], messages: Sequence[ModelMessage]) -> Iterator[str]:
    by_seq = {c.seq: c for c in commits}
    state = {"instructions": None}
    for c, lo, hi in _groups(commits, len(messages)):
        if c is not None:
            parent = by_seq.get(c.seq - 1)
            yield _marker(c, parent.tokens if parent else None)
        for index in range(lo, hi):
            yield _message(
                index, messages[index], state, c if c is not None and c.kind == "compaction" else None
            )


def _message(index: int, message: Any, state: dict[str, Any], reset: Commit | None) -> str:
    rows: list[str] = []
    instructions = getattr(message, "instructions", None)
    if isinstance(instructions, str) and instructions and instructions != state["instructions"]:
        state["instructions"] = instructions  # shown when they change, not on every request
        rows.append(_collapsed("instructions", instructions, "system"))
    role = "assistant" if message.kind == "response" else "user"
    for part in message.parts:
        kind = part.part_kind
        if kind == "compaction":
            role = "summary"
            rows.append(_summary(part, reset))
        elif kind in ("system-prompt", "user-prompt") and (what := injected(text := text_of(part.content))):
            rows.append(_collapsed(f"[{what}]", text, "injected"))  # an AGENTS.md, the sandbox: closed
        elif kind == "system-prompt":
            rows.append(f'<pre class="text system">{escape(part.content)}</pre>')
        elif kind == "user-prompt":
            rows.append(f'<pre class="text">{escape(text_of(part.content))}</pre>')
        elif kind == "text":
            rows.append(f'<pre class="text">{escape(part.content)}</pre>')
        elif kind == "thinking":
            rows.append(f'<pre class="thinking">{escape(part.content or "[thinking, not readable]")}</pre>')
        elif kind in ("tool-call", "builtin-tool-call"):
            rows.append(
                f'<pre class="call">{escape(format_call(part.tool_name, call_args(part), True))}</pre>'
            )
        elif kind in ("tool-return", "builtin-tool-return"):
            role = "tool" if role == "user" else role
            outcome = getattr(part, "outcome", "success")
            mark = "" if outcome in (None, "success") else f" [{outcome}]"
            rows.append(_collapsed(f"{part.tool_name}{mark} →", text_of(part.content), "result"))
        elif kind == "retry-prompt":
            content = part.content if isinstance(part.content, str) else text_of(part.content)
            rows.append(_collapsed(f"{part.tool_name or 'output'} → retry:", content, "result retry"))
        elif kind == "retry-feedback":
            rows.append(_collapsed("retry feedback:", text_of(part.content), "result retry"))
        else:
            rows.append(f'<pre class="text other">[{escape(kind)}]</pre>')
    stamp = getattr(message, "timestamp", None) or next(
        (p.timestamp for p in message.parts if getattr(p, "timestamp", None)), None
    )
    when = f'<time class="time" datetime="{stamp.isoformat()}">{stamp:%H:%M:%S}</time>' if stamp else ""
    return (
        f'<article class="msg role-{role}" data-index="{index}"><header><span class="role">{role}</span>'
        f"{when}</header>{''.join(rows)}</article>"
    )


def _collapsed(label: str, text: str, cls: str) -> str:
    """A block shown by its size and opened on a click: the whole text is there, never cut."""
    lines = len(text.splitlines())
    size = len(text.encode())
    amount = f"{plural(lines, 'line')}, {_bytes(size)}"
    return (
        f'<details class="{cls}"><summary>{escape(label)} {amount}</summary>'
        f"<pre>{escape(text)}</pre></details>"
    )


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def _summary(part: Any, reset: Commit | None) -> str:
    text = part.content if part.content is not None else "(opaque provider summary)"
    if reset is not None:
        replaced = reset.extra.get("messages_before")
        before = reset.extra.get("tokens_before")
        what = [f"compaction summary (tier {reset.tier})"]
        if isinstance(replaced, int):
            what.append(f"replaces {plural(replaced, 'message')}")
        if isinstance(before, int):
            what.append(f"{number(before)} -> {number(reset.tokens)} tok")
        if recorded := recorded_note(reset):
            what.append(recorded)
        note = " · ".join(what)
    else:
        note = "compaction summary"
    return f'<p class="summary-note">{escape(note)}</p><pre class="text summary">{escape(text)}</pre>'
