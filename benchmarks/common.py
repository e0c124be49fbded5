"""Shared benchmark helpers: the machine line, min-of-N timing, and goal/ratio printing.

Timing claims live here only, always as ratios against a baseline measured in the same process run.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"


def machine_line() -> str:
    """One line naming what the numbers were measured on: OS, CPU, cores, Python, filesystem."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    impl = platform.python_implementation()
    return (
        f"machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()} ({impl}), {sys.executable}"
    )


def best_of(fn: Callable[[], object], runs: int = 5, setup: Callable[[], object] | None = None) -> float:
    """The fastest of `runs` timings of `fn()` in seconds (min: the run least disturbed by noise)."""
    best = float("inf")
    for _ in range(runs):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def interleaved(fns: dict[str, Callable[[], object]], runs: int = 7) -> dict[str, float]:
    """The fastest of `runs` timings of each function, run in turns (a, b, a, b, ...).

    On a shared machine the load drifts; alternating gives every contender the same weather, so
    their ratio holds even when the absolute times move.
    """
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def ratio(label: str, value: float, base: float, goal: float | None = None, *, unit: str = "time") -> str:
    """Print and return `label: value vs base = r× (goal ≤ g×: met/MISSED)`."""
    r = value / base
    show = fmt_time if unit == "time" else (lambda b: f"{b:,.0f} B")
    verdict = "" if goal is None else f"  (goal ≤ {goal:g}×: {'met' if r <= goal else 'MISSED'})"
    line = f"{label}: {show(value)} vs {show(base)} = {r:.2f}×{verdict}"
    print(line, flush=True)
    return line


RESULTS = REPO / "benchmarks" / "RESULTS.md"


def write_section(heading: str, section: str, path: Path = RESULTS) -> None:
    """Replace (or append) only the section under `heading` in RESULTS.md; other sections belong to
    other benchmarks. `section` starts with `heading`."""
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    start = text.find(heading)
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    else:
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section.rstrip("\n") + "\n" + (text[end:] if end != -1 else "")
    path.write_text(text)
