"""Summary fidelity through the product path (issue 26): do the user's own words survive compaction?

The held-out cases of fidelity_cases.json (committed before the summarizer they judge; never
re-phrased) are planted in real Claude Code and Codex transcripts at early, middle and late turn
boundaries (fidelity_data.py), three cases per session, every case at every position once. Each
session is stored in a temp dir (`SessionStore.open(path, settings=Settings(context_window_tokens=W))`,
turns appended with `compact=False` as an import does, then new real turns worth the verbatim tail's
budget) and compacted 5 rounds, with new real turns (new text) between rounds, along one path:

- `compact`: `Session.compact()` (the manual /compact);
- `cascade`: `Session.append` of new turns until the cascade fires tier 2;
- `in-run`: `run_turn` with a FunctionModel agent whose `read_file` returns (real tool output) grow
  the context past the full level mid-run, so the session checkpoints inside the run.

After rounds 1 and 5 the summary (the CompactionPart of `history[0]`) is scored (fidelity_probe.py)
next to two contenders at the summary's own token count: every user message the context no longer
holds verbatim, newest first, whole (user verbatim); and the newest such text that fits
(truncation). Windows 16k, 128k, 1M; the summary budget is whatever the product gives.

    .venv/bin/python benchmarks/bench_fidelity.py [--quick] [--no-write] [--paths compact,cascade]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity_data import Base, Pool, RealData, Turn, part_text, planted
from fidelity_probe import Case, holds, load_cases, newest_text, norm, user_verbatim, verdict
from fidelity_report import report
from pydantic_ai import Agent
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from sessionstore import Session, SessionStore, Settings
from sessionstore.accounting.tokens import count_text
from sessionstore.integrations.runs import RunReport, run_turn

WINDOWS = {"16k": 16_384, "128k": 131_072, "1M": 1_048_576}
ROUNDS = 5
SCORED = (1, 5)
FULL: list[tuple[str, str]] = [
    ("compact", "16k"), ("compact", "128k"), ("compact", "1M"),
    ("cascade", "16k"), ("cascade", "128k"),
    ("in-run", "16k"), ("in-run", "128k"),
]  # fmt: skip
"""The cascade and an in-run crossing at 1M need ~840k tokens of new real text per round; the real
data holds ~700k in all, so at 1M only `Session.compact()` runs."""
QUICK_PATHS: list[tuple[str, str]] = [
    ("compact", "16k"),
    ("compact", "128k"),
    ("cascade", "16k"),
    ("in-run", "16k"),
]
QUICK_SESSIONS = (0, 6, 13, 18, 45)
"""Five sessions planting 15 cases of all 12 types (corr-02, the README's budget example, among them)."""
OFFSETS = (25, 50)
"""Session s plants case s early, case s+25 middle and case s+50 late (mod the number of cases)."""
READ_SHARE = 20
"""An in-run `read_file` returns the pool's next real tool outputs, whole, until a 20th of the full
level (a read of a few files at once: 655 tokens at 16k, 5.2k at 128k), so a run crosses the full
level in ~20 requests rather than ~800 (pydantic-ai prepares every request in ~0.3 s at 80k tokens)."""
IN_RUN_SESSIONS = 25
"""The in-run path runs sessions 0-24 in the full mode: they plant every case once (case s early,
s+25 middle, s+50 late), in a third of the time."""
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
"""The temp stores live in memory where the OS offers it: this measures what a summary keeps, not
fsync (bench_store.py and bench_perf.py time the disk)."""
MAX_APPENDS = 2_000
"""A guard: appends (or tool calls of one run) without a tier-2 compaction before a round gives up."""


@cache
def count(text: str) -> int:
    return count_text(text)


@dataclass
class Piece:
    text: str
    tokens: int
    user: bool


@dataclass
class Given:
    """Everything the session was given, in order, as text pieces (the contenders' input)."""

    pieces: list[Piece] = field(default_factory=list)

    def add(self, messages: Sequence[ModelMessage]) -> int:
        added = 0
        for piece in pieces_of(messages):
            self.pieces.append(piece)
            added += piece.tokens
        return added

    def replaced(self, tail: Sequence[ModelMessage]) -> list[Piece]:
        """The pieces the context no longer holds verbatim: all but those the tail holds (matched
        newest first; a tail that opens with a long turn's request finds it further back)."""
        gone = [True] * len(self.pieces)
        at = len(self.pieces)
        for piece in reversed(pieces_of(tail)):
            for i in range(at - 1, -1, -1):
                if self.pieces[i].text == piece.text:
                    gone[i], at = False, i
                    break
        return [p for p, g in zip(self.pieces, gone, strict=True) if g]


def pieces_of(messages: Sequence[ModelMessage]) -> list[Piece]:
    return [
        Piece(text, count(text), isinstance(part, UserPromptPart))
        for msg in messages
        for part in msg.parts
        if not isinstance(part, CompactionPart) and (text := part_text(part))
    ]


@dataclass
class Tally:
    """Results over sessions, keyed by (path, window, round, ...)."""

    kept: dict[tuple, list[bool]] = field(default_factory=lambda: defaultdict(list))
    stale: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    stale_elsewhere: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    """Stale-latest corrections whose stale value the real turns also state ("$500" in a tau-bench
    price): no probe can tell whose value the last line names, so the goal leaves them out."""
    false_sup: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    sizes: dict[tuple, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    in_tail: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    compactions: dict[tuple, list[int]] = field(default_factory=lambda: defaultdict(list))
    wraps: dict[tuple, int] = field(default_factory=lambda: defaultdict(int))
    seconds: dict[tuple, float] = field(default_factory=lambda: defaultdict(float))


def placements(cases: list[Case], s: int) -> list[tuple[Case, str]]:
    n = len(cases)
    return [
        (cases[s % n], "early"),
        (cases[(s + OFFSETS[0]) % n], "middle"),
        (cases[(s + OFFSETS[1]) % n], "late"),
    ]


def run_session(
    data: RealData,
    s: int,
    cases: list[Case],
    path: str,
    window: str,
    tally: Tally,
    *,
    rounds: int = ROUNDS,
    scored: Sequence[int] = SCORED,
) -> None:
    """One session along `path` at `window`: plant, compact `rounds` times, score rounds in `scored`."""
    base: Base = data.bases[s % len(data.bases)]
    plants = placements(cases, s)
    settings = Settings(context_window_tokens=WINDOWS[window])
    full = int(round(WINDOWS[window] * (1 - settings.full_reserve_fraction), 6))
    lead = min(settings.keep_recent_tokens, full // 2)  # the verbatim tail's budget: new text after it
    pool = Pool.for_session(data, base, offset=211 * s)
    given = Given()
    tiers: list[int] = []
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        session = SessionStore.open(Path(tmp) / "store", settings=settings).session("bench")
        session.subscribe(lambda event: tiers.append(event.tier))

        def add(turn: Turn, compact: bool) -> int:
            session.append(turn, compact=compact)
            return given.add(turn)

        def feed(tokens: int) -> None:
            while tokens > 0:
                tokens -= add(pool.turn(), False)

        for turn in planted(base, plants):
            add(turn, False)
        for r in range(1, rounds + 1):
            start = time.perf_counter()
            if path == "compact":
                feed(lead)
                session.compact()
            elif path == "cascade":
                if r == 1:
                    feed(lead)
                before = tiers.count(2)
                for _ in range(MAX_APPENDS):
                    add(pool.turn(), True)
                    if tiers.count(2) > before:
                        break
            else:
                given.add(in_run(session, pool, full // READ_SHARE))
            key = (path, window, r)
            tally.seconds[(path, window)] += time.perf_counter() - start
            if r in scored:
                score(session.history, given, plants, tally, key)
                tally.compactions[key].append(tiers.count(2))
        tally.wraps[(path, window)] += pool.wraps


def in_run(session: Session, pool: Pool, read_tokens: int) -> list[ModelMessage]:
    """One `run_turn` whose tool returns grow the context until the session checkpoints mid-run
    (at a request after the first), then one more tool call and a final answer; its new messages."""
    report = RunReport()
    calls = [0]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        crossed = [i for i, rec in enumerate(report.requests) if i > 0 and rec.tier == 2]
        if (crossed and len(report.requests) - 1 > crossed[0]) or calls[0] >= MAX_APPENDS:
            return ModelResponse(parts=[TextPart(pool.reply())])
        calls[0] += 1
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"notes/{calls[0]}.md"})])

    def read_file(path: str) -> str:
        """Read files of the project (real tool output, whole, at least READ_TOKENS of it)."""
        out = [pool.tool_return()]
        while sum(count(t) for t in out) < read_tokens:
            out.append(pool.tool_return())
        return "\n\n".join(out)

    agent = Agent(FunctionModel(model), tools=[read_file])
    limits = UsageLimits(request_limit=None)
    return run_turn(session, agent, pool.prompt(), report=report, usage_limits=limits).new_messages()


def score(
    history: list[ModelMessage], given: Given, plants: list[tuple[Case, str]], tally: Tally, key: tuple
) -> None:
    summary = "\n".join(
        p.content
        for p in (history[0].parts if history else ())
        if isinstance(p, CompactionPart) and p.content
    )
    tail = history[1:]
    replaced = given.replaced(tail)
    budget = count(summary)
    texts = {
        "summary": summary,
        "user verbatim": user_verbatim([p.text for p in replaced if p.user], budget, count),
        "truncation": newest_text([p.text for p in replaced], budget, count),
    }
    tally.sizes[key].append((budget, sum(p.tokens for p in replaced)))
    held = norm("\n".join(part_text(p) for m in tail for p in m.parts))
    ours = {t for case, _ in plants for t in case.texts}
    real = "\n".join(p.text for p in given.pieces if p.text not in ours)
    for case, _ in plants:
        if any(norm(t) in held for t in case.texts):
            tally.in_tail[key] += 1  # still verbatim in the context: not the summary's to keep
            continue
        for name, text in texts.items():
            v = verdict(case, text)
            tally.kept[(*key, name, case.type)].append(v.kept)
            tally.stale[(*key, name)] += v.stale_latest
            if v.stale_latest and holds(real, case.stale or ""):
                tally.stale_elsewhere[(*key, name)] += 1
            tally.false_sup[(*key, name)] += v.false_supersessions


def run(
    data: RealData,
    paths: Sequence[tuple[str, str]],
    sessions: Sequence[int],
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[list[str], Tally]:
    types, cases = load_cases()
    tally = Tally()
    for path, window in paths:
        chosen = (
            sessions if path != "in-run" or len(sessions) <= IN_RUN_SESSIONS else sessions[:IN_RUN_SESSIONS]
        )
        for n, s in enumerate(chosen, 1):
            run_session(data, s, cases, path, window, tally)
            progress(f"{path} {window}: session {n}/{len(chosen)} ({tally.seconds[(path, window)]:.0f} s)")
    return types, tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 sessions, 4 paths (under ~2 minutes)")
    parser.add_argument("--paths", help="comma-separated path:window pairs, e.g. compact:16k,in-run:128k")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--label", default="before", help="RESULTS.md section: before or after the rewrite")
    args = parser.parse_args()
    from common import REALDATA, machine_line, write_section
    from fidelity_data import load

    warnings.filterwarnings("ignore", message="unknown model")  # the transcripts' bare model ids
    if not REALDATA.is_dir():
        sys.exit(f"real data not found at {REALDATA}: the benchmark plants its cases in real transcripts")
    paths = QUICK_PATHS if args.quick else FULL
    if args.paths:
        paths = [tuple(p.split(":", 1)) for p in args.paths.split(",")]  # type: ignore[misc]
    _, cases = load_cases()
    sessions = list(QUICK_SESSIONS if args.quick else range(len(cases)))
    start = time.perf_counter()
    types, tally = run(load(REALDATA), paths, sessions, progress=lambda line: print(line, file=sys.stderr))
    body = report(types, tally, paths, len(sessions), quick=args.quick, settings=Settings())
    print(body)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if not args.no_write and not args.quick:
        heading = f"## Summaries built on the user's own words (issue 26): {args.label}"
        write_section(heading, f"{heading}\n\n{machine_line()}\n\n{body}\n")


if __name__ == "__main__":
    main()
