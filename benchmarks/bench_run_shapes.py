"""Run shapes x usage modes (issue 27): the largest request each run shape sent on a 16k window, counted
with the tokenizer on what the model received, with exact usage, FunctionModel's default usage (a word
count; 50 input tokens when streaming) and no usage at all.

Run: .venv/bin/python benchmarks/bench_run_shapes.py [--write]   (--write updates benchmarks/RESULTS.md)

Each cell is one turn of `tests/helpers/run_shapes.py` (the scripted coder reads three files of ~2,500
tokens into a session already holding ~8,000), through the public API as a user writes it, the
session protected by `SessionCapability`; then a second turn. The issue measured this setting before:
requests of 19-98k tokens on the 16k window with FunctionModel's default usage, in 12 of 13 patterns.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

from common import REPO, machine_line, write_section

sys.path.insert(0, str(REPO / "tests"))

from helpers.run_shapes import SHAPES, USAGE_MODES, Coder, UsageMode, run_shape
from integrations.test_run_shapes import PROMPT, WINDOW, seeded
from sessionstore.integrations.runs import RunReport, run_turn

HEADING = "## Run shapes and usage modes on a 16k window (issue 27)"


def cell(shape: str, mode: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        s = seeded(Path(tmp))
        coder, report = Coder(), RunReport()
        run_shape(shape, s, coder, mode, PROMPT, report)
        coder.rounds = 1
        run_turn(s, coder.agent(), "and the tests?", report=report, capabilities=[UsageMode(mode, coder)])
        fits = "fits" if max(coder.received) <= WINDOW else "OVER"
        return (
            f"{max(coder.received):,} {fits}; peak {report.peak:,} {report.peak_figure}; "
            f"{report.checkpoints} checkpoint(s)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    lines = [
        "`python benchmarks/bench_run_shapes.py --write`; " + machine_line(),
        "",
        "| shape | " + " | ".join(f"usage: {m}" for m in USAGE_MODES) + " |",
        "|---|" + "---|" * len(USAGE_MODES),
    ]
    for shape in SHAPES:
        lines.append(f"| {shape} | " + " | ".join(cell(shape, m) for m in USAGE_MODES) + " |")
    lines += [
        "",
        "Each cell: the largest request the model received over the run and the next turn (tokens, counted "
        "on what it received: messages and tool definitions), against the 16,000-token window; the "
        "`RunReport` peak and which figure it is (the larger of the measured prefix and the calibrated "
        "estimate, DESIGN §6); mid-run checkpoints. With FunctionModel's default or no usage the estimate "
        "decides, so nothing goes over the window whatever the usage says.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section(HEADING, "\n".join([HEADING, "", *lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
