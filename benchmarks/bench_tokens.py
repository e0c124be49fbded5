"""Token accounting benchmark (issue 3): tiktoken throughput on real transcripts, the cost of
the writer's cost after one new turn of a 10,000-message history, and the sizes' memory.

Run: /work/venv/bin/python benchmarks/bench_tokens.py [--write]   (--write updates benchmarks/RESULTS.md)
Timings are printed as ratios against a baseline measured in the same process.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from common import write_section
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.tokens import count_text, estimate_messages

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
TRANSCRIPTS = [
    *sorted((REALDATA / "claude_code").glob("*.jsonl")),
    *sorted((REALDATA / "codex").glob("*.jsonl")),
    *sorted((REALDATA / "trajectories").glob("*.json")),
]
HEADING = "## Token accounting (issue 3)"
MESSAGES = 10_000
TURN = 4  # messages per turn: prompt, call, return, answer


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value: the text a transcript carries (prompts, outputs, arguments)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def parse(files: list[tuple[str, bytes]]) -> list[Any]:
    parsed: list[Any] = []
    for suffix, data in files:
        if suffix == ".jsonl":
            parsed.extend(orjson.loads(line) for line in data.splitlines() if line.strip())
        else:
            parsed.append(orjson.loads(data))
    return parsed


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def make_turn(texts: Iterator[str]) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(next(texts))]),
        ModelResponse(
            parts=[ThinkingPart(next(texts)), ToolCallPart("read_file", {"path": next(texts)[:120]})]
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", next(texts))]),
        ModelResponse(parts=[TextPart(next(texts))]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()

    count_text("warm up")  # load the encoding outside every measurement
    files = [(path.suffix, path.read_bytes()) for path in TRANSCRIPTS]
    documents = parse(files)
    texts = [s for s in strings(documents) if len(s) >= 20]
    text_bytes = sum(len(s.encode()) for s in texts)

    # 1. throughput, against parsing the same transcripts with orjson
    tokens = sum(count_text(s) for s in texts)
    t_tok = best_of(lambda: [count_text(s) for s in texts], repeat=3)
    t_json = best_of(lambda: parse(files), repeat=3)

    # 2. a 10,000-message history built from the real texts, stored as one blob per turn
    cycle = itertools.cycle(texts)
    blobs = [(f"blob{i}", make_turn(cycle)) for i in range(MESSAGES // TURN)]
    new_turns = [make_turn(cycle) for _ in range(15)]

    def cold() -> int:
        return sum(sum(estimate_messages(messages)) for _, messages in blobs)

    t_cold = best_of(cold, repeat=3)
    # What the writer does after one new turn (porcelain/session/writer.py): estimate the turn's
    # messages once, persist them as the line's `sizes`, and carry the history's total forward from
    # the parent line.
    base_total = cold()
    sizes: list[int] = [n for _, messages in blobs for n in estimate_messages(messages)]
    alone, appended = [], []
    running = base_total
    for turn in new_turns:
        alone.append(best_of(lambda turn=turn: estimate_messages(turn), 3))  # best of 3: conservative
        start = time.perf_counter()
        added = estimate_messages(turn)
        sizes.extend(added)
        running += sum(added)
        appended.append(time.perf_counter() - start)
    assert running == sum(sizes)
    t_alone = statistics.median(alone)
    append_ratio = statistics.median(r / a for r, a in zip(appended, alone, strict=True))

    # 3. memory of the per-message sizes a session keeps for 10,000 messages
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [n for _, messages in blobs for n in estimate_messages(messages)]
    cache_bytes = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(kept) == MESSAGES

    machine = (
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()} "
        f"({platform.python_implementation()})"
    )
    throughput = (
        f"{tokens / t_tok:,.0f} tokens/s, {text_bytes / t_tok / 1e6:.1f} MB/s "
        f"({len(texts):,} strings, {text_bytes / 1e6:.1f} MB, {tokens:,} tokens)"
    )
    append = f"{append_ratio:.2f}x the new turn alone (goal <= 2x; one turn: {t_alone * 1e6:.0f} µs)"
    rows = [
        ("tiktoken cl100k (encode_ordinary) on real transcripts", throughput),
        ("tokenizing vs orjson-parsing the same transcripts", f"{t_tok / t_json:.1f}x the parse time"),
        (
            f"{MESSAGES:,}-message history, cold",
            f"{t_cold * 1e3:.0f} ms ({MESSAGES / t_cold:,.0f} messages/s)",
        ),
        ("after one new turn: the writer's estimate + running total", append),
        (
            f"per-message sizes kept for {MESSAGES:,} messages",
            f"{cache_bytes / 1024:.0f} KiB ({cache_bytes / MESSAGES:.0f} B/msg)",
        ),
    ]
    print(machine)
    for name, value in rows:
        print(f"{name}: {value}")

    if args.write:
        section = "\n".join(
            [
                HEADING,
                "",
                f"`python benchmarks/bench_tokens.py --write`; {machine}.",
                "",
                "| measure | result |",
                "|---|---|",
                *(f"| {name} | {value} |" for name, value in rows),
                "",
                "A new turn alone = `estimate_messages` of its 4 messages of real text; ratios are medians",
                "over 15 turns, each turn timed alone and as the writer does it (estimate once, extend the",
                "sizes, carry the total from the parent line) in the same loop. The history is 2,500 turns",
                "of 4 messages. Stored messages are never re-estimated: each commit persists its `sizes`.",
                "",
            ]
        )
        write_section(HEADING, section)


if __name__ == "__main__":
    sys.exit(main())
