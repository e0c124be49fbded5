"""Does the file store get slower with a change (issue 32's backend interfaces, issue 29's one path
helper)? The product paths of a store directory, each version of the code in its own child process,
interleaved, in one run.

    git archive e222d3f^ src | tar -x -C /tmp/before       # the code before the backend indirection
    git archive e222d3f src | tar -x -C /tmp/indirection   # the indirection alone
    .venv/bin/python benchmarks/bench_file_backend.py --code before=/tmp/before/src \
        --code indirection=/tmp/indirection/src [--reps 5] [--turns 60] [--dir D]

This tree's `src/` is always a contender ("now"). Each child imports the contender's sessionstore
(PYTHONPATH; it prints the path it imported, checked here) and times inside itself, so interpreter
start-up is out of the figures:

- append: `Session.append` of `--turns` real Claude Code turns (copies with distinct blobs, syncs on:
  the product path) into a fresh store, per append;
- resume: `SessionStore.open` and `store.session(name)` (replay) of a session of those turns, 20 times;
- list: `heads.infos` (what `session list` reads) over 1,000 sessions, the cache warm, 20 times.

- table: the rows of a coloured `session list` (`cli.listing.table`: `HeadsCache.listing` and the
  columns) over the same 1,000 sessions, the cache warm, 20 times.

Reported: medians (and min-max) over the repetitions of the child's CPU time (user + system: the
wall time of a shared machine moves with its load) and wall time, per operation, and each
contender's ratio to the first `--code` (the baseline).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_list_rebuild import build
from common import REPO, machine_line

CHILD = r"""
import os, resource, sys, time
sys.path.insert(0, os.environ["BENCH_DIR"])
mode, root, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
from bench_store import copy_turn, real_turns
import sessionstore
from sessionstore.porcelain.store import SessionStore
def clock():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, time.perf_counter()
if mode == "append":
    turns = [copy_turn(t, i) for i, t in enumerate((real_turns() * 10)[:n])]
    session = SessionStore.open(root, warm=False).session("s")
    session.append(turns[0], compact=False)  # imports and first writes out of the timing
    c0, w0 = clock()
    for turn in turns[1:]:
        session.append(turn, compact=False)
    count = n - 1
elif mode == "resume":
    SessionStore.open(root, create=False, warm=False).session("s", create=False)
    c0, w0 = clock()
    for _ in range(n):
        SessionStore.open(root, create=False, warm=False).session("s", create=False)
    count = n
elif mode == "table":
    from sessionstore.cli.listing import table
    from sessionstore.cli.output import Painter
    store, paint = SessionStore.open(root, create=False, warm=False), Painter(True)
    table(store, paint)
    c0, w0 = clock()
    for _ in range(n):
        table(store, paint)
    count = n
else:
    from sessionstore.porcelain.session.heads import infos
    store = SessionStore.open(root, create=False, warm=False)
    infos(store)
    c0, w0 = clock()
    for _ in range(n):
        infos(store)
    count = n
c1, w1 = clock()
print(sessionstore.__file__, (c1 - c0) / count, (w1 - w0) / count)
"""

OPERATIONS = ("append", "resume", "list", "table")


def child(src: Path, mode: str, root: Path, n: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "BENCH_DIR": str(REPO / "benchmarks")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(root), str(n)], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    imported, cpu, wall = out.stdout.split()
    if not Path(imported).resolve().is_relative_to(src.resolve()):
        raise SystemExit(f"the child imported {imported}, not the code under {src}")
    return float(cpu), float(wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", action="append", default=[], help="LABEL=SRC: a version's src/ (repeatable)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    codes = [(label, Path(src)) for label, src in (c.split("=", 1) for c in args.code)]
    codes.append(("now", REPO / "src"))
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        child(REPO / "src", "append", work / "resume", args.turns)  # the session resume replays
        build(work / "list", 1000)  # as bench_list_rebuild.py builds it: one-turn sessions, settled
        for rep in range(args.reps):
            for label, src in codes if rep % 2 == 0 else codes[::-1]:  # alternate who goes first
                for op, root, n in (
                    ("append", work / f"append-{label}-{rep}", args.turns),
                    ("resume", work / "resume", 20),
                    ("list", work / "list", 20),
                    ("table", work / "list", 20),
                ):
                    results.setdefault((op, label), []).append(child(src, op, root, n))
    print(machine_line())
    loads = (" / ".join(f"{x:.1f}" for x in at) for at in (load, os.getloadavg()))
    print(f"load average at start {next(loads)}, at end {next(loads)}, {args.reps} repetitions")
    base = codes[0][0]
    header = " | ".join(f"CPU {label} | wall {label}" for label, _ in codes)
    print(f"| operation | {header} |")
    print("|---|" + "---|" * (2 * len(codes)))
    for op, what in zip(
        OPERATIONS,
        (
            f"`Session.append` of a real turn (syncs on), per append, {args.turns - 1} appends",
            f"open + `store.session` replay of {args.turns} turns",
            "`heads.infos` over 1,000 sessions, cache warm",
            "coloured `session list` rows (`cli.listing.table`) over 1,000 sessions, cache warm",
        ),
        strict=True,
    ):
        cells = []
        b_cpu, b_wall = (statistics.median(x[i] for x in results[(op, base)]) for i in (0, 1))
        for label, _ in codes:
            runs = results[(op, label)]
            figures = []
            for i, b in ((0, b_cpu), (1, b_wall)):
                value, low, high = (
                    statistics.median(x[i] for x in runs),
                    min(x[i] for x in runs),
                    max(x[i] for x in runs),
                )
                ratio = "" if label == base else f" ({value / b:.2f}x)"
                figures.append(f"{value * 1e3:.3f} ms{ratio} ({low * 1e3:.3f}-{high * 1e3:.3f})")
            cells.append(" | ".join(figures))
        print(f"| {what} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
