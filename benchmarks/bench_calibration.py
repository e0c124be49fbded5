"""Calibration benchmark (issue 27): how close the product's estimate of each request comes to what the
provider measured, on real transcripts that carry provider usage.

Run: .venv/bin/python benchmarks/bench_calibration.py [--write]   (--write updates benchmarks/RESULTS.md)

The product path, request by request: each transcript is replayed into a real session, and before each
request that a response's usage measured, `integrations.protect.measure_request` (what `run_turn` and
`SessionCapability` decide on) is asked for the request's figures; then the response is committed the
way the capability commits it (`commit_turn(..., sent_local=...)`), so its usage teaches the session's
calibration exactly as in a run. Reported per model family:

- calibrated estimate: the local (cl100k) estimate scaled by the factor the previous responses taught
  (what decides when nothing measures the history: after a compaction, a fork, a first request);
- decision: the larger of the measured prefix (plus the calibrated estimate of what followed it) and the
  calibrated estimate (DESIGN §6): it must never be below the measured count by more than 5 %;
- baselines: the uncalibrated local estimate, and the decision before this issue (the measured prefix
  plus the plain local estimate of what followed, with no floor).

The transcripts do not carry what Claude Code sends beside the messages (its system prompt and ~20 tool
definitions, 25-31k tokens): the first measured request of each transcript stands in for it (its
measured count minus the local estimate of its messages is taken as the local estimate of that part,
`outside`, as the integration estimates an agent's tool definitions), so that request itself is
reported apart. Transcripts without provider usage (the Codex rollout, tau-bench) are listed, not used.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from common import REALDATA, machine_line, write_section

from sessionstore import SessionStore, Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.formats.registry import read_transcripts
from sessionstore.integrations.protect import measure_request

HEADING = "## Calibration: estimates against provider counts (issue 27)"
SOURCES = [
    *sorted((REALDATA / "claude_code").glob("*.jsonl")),
    *sorted((REALDATA / "codex").glob("*.jsonl")),
    *sorted((REALDATA / "trajectories").glob("*.json")),
]
READING = (
    "Reading: the calibrated estimate is within 10 % of the provider's count for 98 % and 100 % of the "
    "requests (goal met; uncalibrated, 21 % of claude-sonnet-4-5's). The decision floor holds on 68 of "
    "the 69 requests; the one miss (-6.3 %; the decision before this issue: -10.1 %) is the request that "
    "first carried a 24k-token tool output, while the factor the earlier requests had taught (1.11) was "
    "still diluted by the 31k tokens of Claude Code's system prompt and tools, which the replay must count "
    "at par because their text is not in the transcript. A pydantic-ai run estimates its instructions and "
    "tool definitions like its messages, so its factor starts at the provider's ratio. Not met as stated "
    "(never below by more than 5 %): left as measured, not tuned to this one transcript."
)
WITHIN = 0.10
UNDER = 0.05


@dataclass
class Family:
    """The requests of one model family: (calibrated, decision, uncalibrated, old decision, measured)."""

    transcripts: set[str] = field(default_factory=set)
    rows: list[tuple[int, int, int, int | None, int]] = field(default_factory=list)
    factors: list[float] = field(default_factory=list)
    first: list[tuple[int, int]] = field(default_factory=list)
    """(local estimate, measured) of each transcript's first measured request (reported apart)."""


def family_of(model_name: str | None) -> str:
    """`claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`: the family a provider counts alike."""
    name = model_name or "unknown"
    parts = name.split("-")
    return "-".join(parts[:-1]) if parts[-1].isdigit() and len(parts[-1]) == 8 else name


def replay(path: Path, families: dict[str, Family], skipped: list[str]) -> None:
    transcripts = read_transcripts(path)
    for transcript in transcripts:
        messages = [m for step in transcript.steps for m in step.messages]
        measured = [i for i, m in enumerate(messages) if m.kind == "response" and m.usage.input_tokens > 0]
        if len(measured) >= 2:
            replay_one(path.name, messages, measured, families)
        elif transcript is transcripts[-1]:
            skipped.append(
                f"{path.name} ({transcript.format}, {len(transcripts)} conversation(s)): no provider usage"
            )


def replay_one(name: str, messages: list, measured: list[int], families: dict[str, Family]) -> None:
    sizes = estimate_messages(messages)
    first = measured[0]
    outside = messages[first].usage.input_tokens - sum(sizes[:first])
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore.open(Path(tmp), settings=Settings(compaction_enabled=False))
        s = store.session("replay")
        fam = families[family_of(messages[first].model_name)]
        fam.transcripts.add(name)
        s.model = f"anthropic:{messages[first].model_name}"
        done = 0
        for i in measured:
            pending = messages[done:i]
            r = measure_request(s, sizes[done:i], outside)
            truth = messages[i].usage.input_tokens
            estimate = r.tokens - r.excess
            if i == first:
                fam.first.append((sum(sizes[:i]), truth))
            else:
                m = s.measurement
                old = (
                    None
                    if m.anchor is None
                    else m.anchor_tokens + sum(s.message_sizes[m.anchor + 1 :]) + sum(sizes[done:i])
                )
                fam.rows.append((estimate, r.tokens, r.local + outside, old, truth))
            with s.store.lock(s.name):
                s.commit_turn(
                    [*pending, messages[i]], sizes=sizes[done : i + 1], sent_local=r.local + outside
                )
                s.measure_after_turn()
            factor = s.calibration.factor(s.model_key)
            if factor is not None:
                fam.factors.append(factor)
            done = i + 1


def pct(n: int, total: int) -> str:
    return f"{n}/{total} = {100 * n / total:.0f} %" if total else "-"


def table(families: dict[str, Family]) -> list[str]:
    head = " | ".join([
        "| model family", "transcripts", "requests", "factor: median (range)",
        "calibrated within 10 % (goal >= 90 %)", "uncalibrated within 10 %", "decision > 5 % below (goal 0)",
        "decision worst", "old decision > 5 % below", "old decision worst |",
    ])  # fmt: skip
    lines = [head, "|" + "---|" * 10]
    for name, fam in sorted(families.items()):
        rows = fam.rows
        n = len(rows)
        cal = sum(abs(c - t) <= WITHIN * t for c, _, _, _, t in rows)
        raw = sum(abs(u - t) <= WITHIN * t for _, _, u, _, t in rows)
        under = sum(d < (1 - UNDER) * t for _, d, _, _, t in rows)
        worst = min((d - t) / t for _, d, _, _, t in rows)
        old_rows = [(o, t) for _, _, _, o, t in rows if o is not None]
        old_under = sum(o < (1 - UNDER) * t for o, t in old_rows)
        old_worst = min(((o - t) / t for o, t in old_rows), default=0.0)
        f = fam.factors
        factor = f"{statistics.median(f):.3f} ({min(f):.3f}-{max(f):.3f})"
        old = [pct(old_under, len(old_rows)), f"{100 * old_worst:+.1f} %"]
        cells = [
            name,
            len(fam.transcripts),
            n,
            factor,
            pct(cal, n),
            pct(raw, n),
            under,
            f"{100 * worst:+.1f} %",
            *old,
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    if not REALDATA.is_dir():
        print(f"real data not found at {REALDATA}: nothing to measure", file=sys.stderr)
        return 1
    families: dict[str, Family] = defaultdict(Family)
    skipped: list[str] = []
    for path in SOURCES:
        replay(path, families, skipped)
    firsts = [
        f"{local:,} local vs {truth:,} measured" for fam in families.values() for local, truth in fam.first
    ]
    lines = [
        "`python benchmarks/bench_calibration.py --write`; " + machine_line(),
        "",
        *table(families),
        "",
        "Each row: every request a response's usage measured, after the first of each transcript, replayed "
        "through `measure_request` on a real session whose calibration the earlier responses taught "
        "(`commit_turn(..., sent_local=...)`, as `SessionCapability` commits). Calibrated = the local "
        "estimate scaled by the newest factor; decision = the larger of it and the measured prefix plus "
        "the calibrated estimate of what followed (DESIGN §6); old decision = the measured prefix plus the "
        "plain estimate, no floor (before issue 27).",
        "",
        f"First requests, reported apart (what the transcript does not carry, Claude Code's system prompt "
        f"and tool definitions, is in the measured count): {'; '.join(firsts)}.",
        f"Not used (no provider usage): {'; '.join(skipped) or 'none'}.",
        "",
        READING,
    ]
    print("\n".join(lines))
    if args.write:
        write_section(HEADING, "\n".join([HEADING, "", *lines]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
