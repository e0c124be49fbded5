"""What the one path helper (plumbing/storedir.py, issue 29.1) costs on the product paths, against
the code before it.

    .venv/bin/python benchmarks/bench_store_paths.py --before DIR [--reps 5] [--turns 60] [--dir D]

DIR is the `src/` of the code before (`git archive main src | tar -x -C /tmp/main-src`). Each
contender runs in its own child process (PYTHONPATH = this tree's src, or DIR), the two interleaved,
and times inside itself, so interpreter start-up is out of the figures:

- append: `Session.append` of `--turns` real Claude Code turns (copies with distinct blobs, syncs on:
  the product path) into a fresh store, per append;
- resume: `SessionStore.open` and `store.session(name)` (replay) of a session of those turns, 20 times;
- list: `HeadsCache.infos` (what `session list` reads) over 1,000 sessions, the cache warm, 20 times.

Reported: medians over the repetitions of the child's CPU time (user + system: the wall time of a
shared machine moves with its load) and wall time, per operation, and their ratio to the before.
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
else:
    from sessionstore.porcelain.session.heads import infos
    store = SessionStore.open(root, create=False, warm=False)
    infos(store)
    c0, w0 = clock()
    for _ in range(n):
        infos(store)
    count = n
c1, w1 = clock()
print((c1 - c0) / count, (w1 - w0) / count)
"""


def child(src: Path, mode: str, root: Path, n: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "BENCH_DIR": str(REPO / "benchmarks")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(root), str(n)], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    cpu, wall = out.stdout.split()
    return float(cpu), float(wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, type=Path, help="src/ of the code before")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    here = REPO / "src"
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        child(here, "append", work / "resume", args.turns)  # the session resume replays
        build(work / "list", 1000)  # as bench_list_rebuild.py builds it: one-turn sessions, settled
        for rep in range(args.reps):
            for label, src in (("after", here), ("before", args.before)):
                results.setdefault(("append", label), []).append(
                    child(src, "append", work / f"append-{label}-{rep}", args.turns)
                )
                results.setdefault(("resume", label), []).append(child(src, "resume", work / "resume", 20))
                results.setdefault(("list", label), []).append(child(src, "list", work / "list", 20))
    print(machine_line())
    print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| operation | CPU after | CPU before | ratio | wall after | wall before | ratio |")
    print("|---|---|---|---|---|---|---|")
    for op, what in (
        ("append", f"`Session.append` of a real turn (syncs on), per append, {args.turns - 1} appends"),
        ("resume", f"open + `store.session` replay of {args.turns} turns"),
        ("list", "`HeadsCache.infos` over 1,000 sessions, cache warm"),
    ):
        a_cpu, a_wall = (statistics.median(x[i] for x in results[(op, "after")]) for i in (0, 1))
        b_cpu, b_wall = (statistics.median(x[i] for x in results[(op, "before")]) for i in (0, 1))
        print(
            f"| {what} | {a_cpu * 1e3:.3f} ms | {b_cpu * 1e3:.3f} ms | {a_cpu / b_cpu:.2f}x | "
            f"{a_wall * 1e3:.3f} ms | {b_wall * 1e3:.3f} ms | {a_wall / b_wall:.2f}x |"
        )


if __name__ == "__main__":
    main()
