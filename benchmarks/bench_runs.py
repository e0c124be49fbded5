"""Inside a run (issue 10; issue 16 item 0): what protecting EVERY request of a run costs.

    .venv/bin/python benchmarks/bench_runs.py [--messages 10000] [--calls 20] [--runs 5] [--write]

Two workloads, each timed interleaved against a bare `agent.run_sync` on the same messages with the
same instant FunctionModel, in the same process:

1. one request on a 10,000-message session (the real Claude Code turns of bench_store.py, replicated),
   compaction ON, the window large enough that no tier fires (the goal excludes the summary itself):
   `run_turn(session, agent, prompt)` vs `agent.run_sync(prompt, message_history=history)`. This is
   issue 16 item 0's figure: the request is measured from the stored sizes, never re-tokenized.
2. a 20-tool-call run on a fresh session (tiny tool outputs, so no tier fires either).

Reported per request: the whole overhead of `run_turn` over the bare run, and its two parts, timed by
wrapping the capability's methods: the protection itself (measuring and shaping what is sent, the
stale-head check) and the durable step commits (`Session.append`: blob + log line, each fsynced).
The goal (<= 5 % of a bare request) is about the protection; the commits are what "a kill -9 loses at
most the request in flight" costs, and are reported beside it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from bench_store import TRANSCRIPT, phase_timers, real_turns, replicate
from common import fmt_time, machine_line, write_section
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sessionstore import SessionStore, Settings
from sessionstore.integrations import runs
from sessionstore.integrations.runs import run_turn

HEADING = "## Inside a run (issue 10)"


def instant_agent(calls: int) -> Agent[None, str]:
    """A FunctionModel that answers at once: `calls` tool calls (one per request), then a text."""

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages[-1:] for p in m.parts if p.part_kind == "tool-return")
        state["n"] = state["n"] + 1 if done else 0
        if state["n"] < calls:
            return ModelResponse(
                parts=[ToolCallPart("look", {"i": state["n"]}, tool_call_id=f"c{state['n']}")]
            )
        return ModelResponse(parts=[TextPart("ok")])

    state = {"n": 0}
    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def look(i: int) -> str:
        return f"item {i}: fine"

    return agent


def timed(spent: dict[str, float]) -> AbstractContextManager[None]:
    """Accumulate the time spent in the capability's parts: its commits and freshness check (inside
    their threads), and the protection proper (levels, measuring and shaping what is sent)."""
    return phase_timers(
        spent,
        [
            (runs.SessionCapability, "_commit", "_commit"),
            (runs.SessionCapability, "_check_fresh", "_check_fresh"),
            (runs, "shape_request", "shape_request"),
            (runs.cascade, "session_levels", "session_levels"),
        ],
    )


def interleaved_wall_and_cpu(
    fns: dict[str, Callable[[], object]], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """`common.interleaved`, also keeping the fastest CPU time (`process_time`: every thread of this
    process, so the commits' tokenizing and encoding count). On a shared, oversubscribed machine the
    wall time carries the other processes' load; the CPU time says what this code itself costs."""
    wall = dict.fromkeys(fns, float("inf"))
    cpu = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            wall[name] = min(wall[name], time.perf_counter() - w)
            cpu[name] = min(cpu[name], time.process_time() - c)
    return wall, cpu


def measure(label: str, make_session: Callable[[], Any], calls: int, rounds: int) -> dict[str, float]:
    """Bare vs protected, interleaved; returns per-request times (s) of each part.

    `make_session()` gives the session each protected run starts from (the same big one, which grows
    by one turn per run, or a fresh one per run), and the bare run always gets the first one's history.
    """
    agent = instant_agent(calls)
    history = make_session().history
    requests = calls + 1
    spent: dict[str, float] = {}
    counted = {"protected": 0}

    def bare() -> None:
        agent.run_sync("one more question", message_history=history)

    def protected() -> None:
        counted["protected"] += 1
        run_turn(make_session(), agent, "one more question")

    bare()  # warm both paths (imports, caches) before timing
    protected()
    spent.clear()
    counted["protected"] = 0
    with timed(spent):
        best, cpu = interleaved_wall_and_cpu({"bare": bare, "protected": protected}, rounds)
    runs_done = counted["protected"]

    def part(*names: str) -> float:
        return sum(spent.get(n, 0.0) for n in names) / runs_done / requests

    per = {k: v / requests for k, v in best.items()}
    overhead = per["protected"] - per["bare"]
    result = {
        "bare": per["bare"],
        "protected": per["protected"],
        "bare_cpu": cpu["bare"] / requests,
        "protected_cpu": cpu["protected"] / requests,
        "overhead": overhead,
        "protection": part("shape_request", "session_levels", "_check_fresh"),
        "commit": part("_commit"),
        "check": part("_check_fresh"),
        "messages": len(history),
    }
    result["rest"] = overhead - result["protection"] - result["commit"]
    print(
        f"{label}: bare {fmt_time(per['bare'])}/request, run_turn {fmt_time(per['protected'])}/request; "
        f"protection {fmt_time(result['protection'])} ({100 * result['protection'] / per['bare']:.2f} %), "
        f"durable commits {fmt_time(result['commit'])} ({100 * result['commit'] / per['bare']:.1f} %), "
        f"rest {signed(result['rest'])}",
        flush=True,
    )
    return result


def signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + fmt_time(abs(seconds))


def row(label: str, r: dict[str, float]) -> str:
    pct = 100 * r["protection"] / r["bare"]
    verdict = "met" if pct <= 5 else "MISSED"
    return (
        f"| {label} | {r['messages']:,.0f} | {fmt_time(r['bare'])} | {fmt_time(r['protected'])} | "
        f"{fmt_time(r['protection'])} = {pct:.2f} % ({verdict}) | "
        f"{fmt_time(r['commit'])} = {100 * r['commit'] / r['bare']:.1f} % | {signed(r['rest'])} | "
        f"{fmt_time(r['bare_cpu'])} / {fmt_time(r['protected_cpu'])} = "
        f"{r['protected_cpu'] / r['bare_cpu']:.2f}× |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="bench-runs-") as tmp:
        work = Path(tmp)

        built: list[Any] = []

        def big_session() -> Any:
            if built:
                return built[0]
            turns = replicate(real_turns(), args.messages)
            last = turns[-1]
            while last and not (isinstance(last[-1], ModelResponse) and not last[-1].tool_calls):
                last.pop()  # end on an answer: a new prompt may not follow unanswered tool calls
            turns = [t for t in turns if t]
            build = SessionStore.open(work / "big", settings=Settings())
            s = build.session("big")
            for turn in turns:
                s.append(turn, compact=False)
            window = 10 * s.tokens + 1_000_000  # compaction on, no tier fires: the summary is excluded
            built.append(
                SessionStore.open(work / "big", settings=Settings(context_window_tokens=window)).session(
                    "big"
                )
            )
            return built[0]

        small = SessionStore.open(work / "small", settings=Settings())
        fresh = iter(range(1_000_000))

        def fresh_session() -> Any:
            return small.session(f"loop{next(fresh)}")

        big = measure(f"1 request on {args.messages:,} messages", big_session, 0, args.runs)
        loop = measure(f"{args.calls}-tool-call run", fresh_session, args.calls, args.runs)
    section = "\n".join(
        [
            HEADING,
            "",
            machine_line(),
            "",
            "`python benchmarks/bench_runs.py --write` (interleaved bare/protected, min of "
            f"{args.runs}; per request = run time / requests). Bare: `agent.run_sync` with an instant "
            "FunctionModel on the same history. Protection = the time inside the capability's levels, "
            "measuring and shaping of what is sent, and the stale-head check; durable commits = the step "
            "commits (blob + line, fsynced per step: what makes a kill -9 lose at most the request in "
            "flight) and the run's last commit; rest = the remaining difference (the threads the disk "
            "work runs in, and the noise of a shared machine); CPU = `process_time` of the same runs (all "
            "threads), which the other processes' load does not inflate. Compaction on, "
            f"no tier fires (the summary itself is excluded). History: {TRANSCRIPT.name} replicated.",
            "",
            "| workload | messages | bare / request | run_turn / request | protection (goal <= 5 %) "
            "| durable commits | rest (thread hops, noise) | CPU / request: bare / run_turn |",
            "|---|---|---|---|---|---|---|---|",
            row(f"1 request on a {args.messages:,}-message session (issue 16 item 0)", big),
            row(f"{args.calls}-tool-call run, fresh session", loop),
            "",
            f"Stale-head check before the first request: {fmt_time(big['check'] * 1)} per request at "
            f"{args.messages:,} messages (one read of the log's last line).",
            "",
            f"Reading: at {args.messages:,} messages the protection costs {fmt_time(big['protection'])} per "
            "request (issue 16 item 0 measured +3.9 s per run before: every request re-tokenized the "
            f"history); the CPU ratio {big['protected_cpu'] / big['bare_cpu']:.2f}× says the wall-time "
            "difference is the shared machine's load, not this code. On the 20-call run the protection "
            f"is {fmt_time(loop['protection'])} per request; what dominates there is the durable commit of "
            f"each step ({fmt_time(loop['commit'])}: blob and log line, each fsynced), against an instant "
            "model: against a real provider request (seconds) it is well under 1 %.",
        ]
    )
    print(section)
    if args.write:
        write_section(HEADING, section)


if __name__ == "__main__":
    main()
