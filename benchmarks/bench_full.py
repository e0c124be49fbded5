"""Tier-2 benchmark (issue 4): extractive full compaction of the largest real transcript, its time
against one tiktoken pass over the same text, and the tokens before and after.

Run: /work/venv/bin/python benchmarks/bench_full.py [--write]   (--write updates benchmarks/RESULTS.md)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

from bench_micro import REPO, TRANSCRIPT, history_text, interleaved, write_section

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import count_text, estimate_messages
from sessionstore.compaction.full import full_compact
from sessionstore.formats.transcripts import read_transcript

HEADING = "## Compaction tier 2, extractive (issue 4)"
WINDOWS = (32_000, 128_000, 200_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    history = [m for step in read_transcript(TRANSCRIPT).steps for m in step.messages]
    sizes = estimate_messages(history)
    text = history_text(history)
    settings = Settings()
    count_text("warm up the encoder")
    jobs = {"tiktoken": lambda: count_text(text)}
    for window in WINDOWS:
        level = int(window * 0.8)
        jobs[str(window)] = lambda lv=level: full_compact(history, sizes, settings=settings, full_level=lv)
    times = interleaved(jobs)
    rows = []
    for window in WINDOWS:
        result = full_compact(history, sizes, settings=settings, full_level=int(window * 0.8))
        rows.append(
            f"| {window:,} | {result.tokens_before:,} -> {result.tokens_after:,} "
            f"({len(history)} -> {len(result.messages)} msgs) | {count_text(result.summary):,} | "
            f"{times[str(window)] * 1000:.1f} ms ({times[str(window)] / times['tiktoken']:.2f}x) |"
        )
        print(rows[-1])
    print(f"one tiktoken pass over the transcript text: {times['tiktoken'] * 1000:.1f} ms")
    if args.write:
        section = "\n".join(
            [
                HEADING,
                "",
                f"`python benchmarks/bench_full.py --write`; machine: {platform.platform()}, "
                f"{os.cpu_count()} CPUs, Python {platform.python_version()}.",
                "",
                "| window | tokens before -> after | summary tokens | time (vs one tiktoken pass) |",
                "|---|---|---|---|",
                *rows,
                "",
                f"Input: claude_code/codemie_session-3fe1b6bc.jsonl ({len(history)} messages), sizes given",
                "(as persisted); full level 80% of the window; tail budget min(20,000, level // 2). One",
                f"tiktoken pass over its text: {times['tiktoken'] * 1000:.1f} ms. Minimum of several runs.",
                "",
            ]
        )
        write_section(REPO / "benchmarks" / "RESULTS.md", section, HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
