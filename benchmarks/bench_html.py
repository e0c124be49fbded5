"""`session export --format html` on a 10,000-message session (issue 14): what the page costs to render.

A session of 2,500 agent turns (user prompt, thinking + tool call, tool result, answer; every 100th
tool result 2,000 lines long) is written once, untimed. Timed, interleaved in the same process: the
page (`render_page` of the replayed history and the whole log) against the baseline, the same
messages exported as pydantic-ai JSON (`export_pydantic_ai`, what `session export` writes by default).
Both start from the messages in memory; the minimum of several runs.

Run: python benchmarks/bench_html.py [--write]   (--write updates benchmarks/RESULTS.md)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import interleaved, machine_line, write_section
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

from sessionstore import SessionStore
from sessionstore.cli.history_cmds import messages_at
from sessionstore.cli.html_page import render_page
from sessionstore.formats.transcripts import export_pydantic_ai

HEADING = "## HTML export of a 10,000-message session (issue 14)"
TURNS = 2_500


def turn(i: int) -> list:
    usage = RequestUsage(input_tokens=1_000 + 40 * i, output_tokens=30)
    output = "".join(f"{n:05d} def handler_{n}(request): return respond(request)\n" for n in range(2_000))
    return [
        ModelRequest(parts=[UserPromptPart(f"step {i}: look at module {i % 40} and fix what is broken")]),
        ModelResponse(
            parts=[
                ThinkingPart(f"module {i % 40} first"),
                ToolCallPart("read_file", {"path": f"m{i % 40}.py"}, f"c{i}"),
            ],
            usage=usage,
            model_name="bench",
        ),
        ModelRequest(
            parts=[ToolReturnPart("read_file", output if i % 100 == 0 else f"ok {i}\n" * 5, f"c{i}")]
        ),
        ModelResponse(parts=[TextPart(f"Fixed module {i % 40}.")], usage=usage, model_name="bench"),
    ]


def run(write: bool) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore.open(Path(tmp) / "store")
        session = store.session("big")
        for start in range(0, TURNS, 25):  # 100 commits of 25 turns
            session.append([m for i in range(start, start + 25) for m in turn(i)], compact=False)
        commit = store.resolve("big")
        commits, _ = store.log("big").scan(since_reset=False)
        messages = messages_at(store, commit)
        page = render_page(commit, commits, messages, store.settings).encode()
        data = export_pydantic_ai(messages)
        best = interleaved(
            {
                "html": lambda: render_page(commit, commits, messages, store.settings),
                "json": lambda: export_pydantic_ai(messages),
            },
            runs=5,
        )
    r = best["html"] / best["json"]
    section = "\n".join(
        [
            HEADING,
            "",
            f"`python benchmarks/bench_html.py --write`; {machine_line()}.",
            "",
            "| measure | result |",
            "|---|---|",
            f"| render the page ({len(messages):,} messages, {len(commits)} commits) | "
            f"{best['html'] * 1e3:,.0f} ms, {r:.2f}x the pydantic-ai JSON export of the same messages "
            f"({best['json'] * 1e3:,.0f} ms) |",
            f"| page size | {len(page) / 1e6:.2f} MB, {len(page) / len(data):.2f}x the JSON "
            f"({len(data) / 1e6:.2f} MB) |",
            "",
            "Both from the messages in memory (loading them is the same for both). Every tool result is in",
            "the page, collapsed; the size ratio is the markup and escaping around the same text.",
            "",
        ]
    )
    print(section)
    if write:
        write_section(HEADING, section)
    return section


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    run(parser.parse_args().write)
