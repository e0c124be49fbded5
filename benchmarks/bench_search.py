"""`session search` (issue 15): regex search over stored blobs against `grep -r` over objects/.

A store is built from the real Claude Code and Codex transcripts in ../shared/realdata, copied COPIES
times as separate sessions (each copy's messages carry their own `run_id`, so every copy is its own
blobs and the bytes searched equal the bytes grep reads). Timed, interleaved, minimum of several runs:

- `search`: porcelain/history/search.py over every session's current state (raw bytes scanned, orjson
  per message line holding the pattern's literal, regex over text, tool arguments and tool output,
  sha256 of each blob with a hit), hits materialised;
- `grep -r`: GNU grep over the same objects/ directory, in a subprocess (`grep -rc PATTERN objects`),
  the floor any reader of the same files pays, plus a process start.

Goal (issue 15): search reads >= 50 MB/s of stored JSONL on this machine.

Run: python benchmarks/bench_search.py [--write]   (--write updates benchmarks/RESULTS.md)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REALDATA, interleaved, machine_line, write_section

from sessionstore import SessionStore
from sessionstore.formats.transcripts import read_transcript
from sessionstore.porcelain.history.search import Query, search

HEADING = "## CLI (issue 15)"
COPIES = 24
PATTERNS = ("error", r"def \w+\(", "pytest")
GOAL_MB_S = 50.0


def build(root: Path) -> SessionStore:
    files = sorted((REALDATA / "claude_code").glob("*.jsonl")) + sorted((REALDATA / "codex").glob("*.jsonl"))
    transcripts = [read_transcript(f) for f in files]
    store = SessionStore.open(root)
    for copy in range(COPIES):
        for t, transcript in enumerate(transcripts):
            session = store.session(f"copy{copy}-{t}")
            for step in transcript.steps:
                stamped = [dataclasses.replace(m, run_id=f"copy-{copy}") for m in step.messages]
                session.append(stamped, compact=False)
    return store


def stored_bytes(store: SessionStore) -> int:
    return sum(p.stat().st_size for p in (store.root / "objects").rglob("*") if p.is_file())


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def run(write: bool) -> str:
    if not (REALDATA / "claude_code").is_dir():
        sys.exit(f"real transcripts not found at {REALDATA}: nothing to benchmark")
    grep = shutil.which("grep")
    load_at_start = _load()
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp) / "store")
        size = stored_bytes(store)
        rows = []
        for pattern in PATTERNS:
            query = Query.compile(pattern)
            hits: list[int] = []

            def ours(query: Query = query, hits: list[int] = hits) -> None:
                hits.append(sum(1 for _ in search(store, query)))

            def theirs(pattern: str = pattern) -> None:
                subprocess.run(
                    [grep, "-rcE", pattern, str(store.root / "objects")], capture_output=True, check=False
                )

            fns = {"search": ours}
            if grep:
                fns["grep"] = theirs
            best = interleaved(fns, runs=5)
            mb_s = size / best["search"] / 1e6
            vs = (
                f"{best['search'] / best['grep']:.2f}x grep -r ({best['grep'] * 1e3:.0f} ms)"
                if grep
                else "no grep"
            )
            verdict = "met" if mb_s >= GOAL_MB_S else "MISSED"
            rows.append(
                f"| `{pattern}` | {hits[-1]:,} | {best['search'] * 1e3:.0f} ms | {mb_s:.0f} MB/s "
                f"(goal >= {GOAL_MB_S:.0f}: {verdict}) | {vs} |"
            )
            print(rows[-1], flush=True)
    section = "\n".join(
        [
            HEADING,
            "",
            f"{machine_line()}; load average {load_at_start} at the start, {_load()} at the end (1/5/15 min)",
            "",
            f"`session search` over {COPIES} copies of the real Claude Code and Codex transcripts "
            f"({size / 1e6:.1f} MB of stored JSONL in objects/, every session's current state), "
            "against `grep -rcE PATTERN objects/` (a subprocess) in the same run, interleaved, "
            "minimum of 5 runs (benchmarks/bench_search.py). search scans each blob's raw bytes for a "
            "literal every match holds, parses only the message lines holding one (orjson) and runs the "
            "regex over text, tool arguments and tool output only (not JSON keys or metadata); it "
            "verifies the sha256 of each blob a hit comes from (issue 30), not of the others.",
            "",
            "| pattern | hits | search | throughput | vs grep |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )
    if write:
        write_section(HEADING, section)
    return section


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    print(run(parser.parse_args().write))
