"""`session list` when its heads cache must be rebuilt (after a clone or pull): per-session costs.

    .venv/bin/python benchmarks/bench_list_rebuild.py [--dir DIR] [--counts 100,1000,10000] [--reps 7]
        [--write]

Stores built as bench_perf.py's session-list step builds them (one append of the first two real
messages per session, each copy distinct by run id, syncs skipped while building), then, interleaved:
`python -c 'import click'`, `session list` with the cache, and `session list` with the cache removed
first. Medians of the repetitions with (min-max). --write puts the rows in RESULTS.md under their own
heading (not bench_perf.py's section).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_perf import cli_env, load_line, medians, no_sync, run_cli, spread
from bench_store import SESSION_BIN, copy_turn, real_turns
from common import machine_line, write_section

from sessionstore.porcelain.session.heads import HEADS_FILE
from sessionstore.porcelain.store import SessionStore

HEADING = "## session list: the heads cache rebuilt (issue 16 item 5, helper list5)"


def build(root: Path, n: int, first: list[Any] | None = None) -> Path:
    """A store of `n` one-commit sessions, as bench_perf.bench_session_list makes it (kept if built);
    each session's turn is `first` when given (bench_peer.py: a real ~60 KB turn), else the first two
    real messages."""
    if (root / "logs").is_dir() and len(list((root / "logs").iterdir())) == n:
        return root
    small = copy_turn(first if first is not None else real_turns()[0][:2], 0)
    store = SessionStore.open(root)
    with no_sync():
        for i in range(n):
            store.session(f"s{i:05d}").append(copy_turn(small, i), compact=False)
    time.sleep(2.1)  # past the heads cache's racily-clean window
    return root


def cpu(fn: Callable[[], None]) -> Callable[[], None]:
    """`fn`, recording the CPU time (user + system) its child process used in `CPU[fn]`: on a shared
    machine the wall time moves with the load, the CPU time much less."""

    def call() -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        fn()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU.setdefault(call, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

    return call


CPU: dict[Callable[[], None], list[float]] = {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--counts", default="100,1000,10000")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    ap.add_argument(
        "--before",
        default=None,
        help="a src/ directory of an earlier sessionstore: its rebuild interleaved too",
    )
    ap.add_argument(
        "--before-label", default="", help="what --before is (e.g. the commit it was archived from)"
    )
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    rows: list[str] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(args.dir) if args.dir else Path(tmp)
        env = cli_env(work)
        click = cpu(run_cli([sys.executable, "-c", "import click"], env))
        for n in counts:
            root = build(work / f"list-{n}", n)
            listing = cpu(run_cli([str(SESSION_BIN), "--store", str(root), "list"], env, cwd=work))
            cache = root / HEADS_FILE

            rebuild = cpu(run_cli([str(SESSION_BIN), "--store", str(root), "list"], env, cwd=work))

            def rebuilt(rebuild: Callable[[], None] = rebuild, cache: Path = cache) -> None:
                cache.unlink(missing_ok=True)
                rebuild()

            fns = {"click": click, "list": listing, "rebuild": rebuilt}
            if args.before:
                old_env = {**env, "PYTHONPATH": args.before}
                twin = work / f"list-{n}-before"  # its own heads cache (another format): the same logs
                if not twin.is_dir():
                    shutil.copytree(root, twin, copy_function=os.link, ignore=shutil.ignore_patterns("index"))
                program = "from sessionstore.cli import main; main()"
                old = [sys.executable, "-c", program, "--store", str(twin), "list"]
                before = cpu(run_cli(old, old_env, cwd=work))

                def rebuilt_before(
                    before: Callable[[], None] = before, cache: Path = twin / HEADS_FILE
                ) -> None:
                    cache.unlink(missing_ok=True)
                    before()

                fns["before"] = rebuilt_before
            CPU.clear()
            res = medians(fns, args.reps)
            c = statistics.median(res["click"])
            c_cpu = statistics.median(CPU[click])
            contenders = [
                ("", "list", listing),
                (", heads cache removed first (rebuilt)", "rebuild", rebuild),
            ]
            if args.before:
                contenders.append(
                    (", heads cache removed first (rebuilt), before (--before)", "before", before)
                )
            for label, key, fn in contenders:
                m = statistics.median(res[key])
                m_cpu = statistics.median(CPU[fn])
                line = (
                    f"| `session list` at {n:,} sessions{label} vs `python -c 'import click'` "
                    f"({spread(res['click'])}) | {spread(res[key])}: {m / c:.2f}× "
                    f"({(m - c) / n * 1e6:.0f} µs per session over click); CPU time {m_cpu * 1e3:.0f} ms vs "
                    f"{c_cpu * 1e3:.0f} ms = {m_cpu / c_cpu:.2f}× |"
                )
                print(line, flush=True)
                rows.append(line)
    if args.write:
        body = "\n".join(["| measure | result |", "|---|---|", *rows])
        notes = (
            "Medians of the repetitions with (min-max), contenders interleaved; CPU time is the child's "
            "user + system time (the wall time moves with the shared machine's load, the CPU time much "
            "less). Each session is one turn whose first commit holds no real request (Claude Code's "
            "`/clear` wrapper), so its title depends on lines still to come and is derived on every "
            "rebuild. `before (--before)`: " + (args.before_label or args.before or "") + ", listing a "
            "hard-linked twin of the same store. Where the time goes: docs/architecture.md, the heads cache."
        )
        write_section(
            HEADING,
            f"{HEADING}\n\n`{' '.join(sys.argv)}`; {machine_line()}; {load_line()}\n\n{body}\n\n{notes}\n",
        )


if __name__ == "__main__":
    main()
