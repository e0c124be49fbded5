"""Summary fidelity (issue 11), synthetic: do planted rules, facts, goals and corrections survive?

(Issue 11's benchmark, kept as it was when bench_fidelity.py became issue 26's product-path benchmark.
It calls the offline summarizer and the check directly, with the full `summary_max_tokens` budget;
it goes when the code it calls does.)

Seeded synthetic sessions plant typed, unguessable items (a random host, amount, version, name, code
word, date) at known positions among realistic filler (requests, chatter full of "should" and "must",
tool calls with long outputs); the session is compacted for 1..5 rounds with more turns between rounds,
the verbatim tail at 10 % and 30 % of the session. An item survives a round when the compacted context
(summary plus tail) still states it with its value; a correction survives when its latest value is
stated as current and the stale one never is (only on a "Superseded" line, or not at all; in the
summary, not on any line without the latest value, whatever comes after it).

Contenders, run in the same process on the same sessions: the new offline summarizer, the previous
one (benchmarks/extractive_before.py), keep-the-last-30 % truncation, an LLM summarizer that drops
everything (a FunctionModel answering the bare skeleton) with the check of summarizer.py in place, and
one that states every superseded value of its checklist as current (the check must correct it), the
same with the check's correction notes taken off again as its baseline.
Plus: a constraint planted mid-way through the ~100k-token real Claude Code transcript.

    .venv/bin/python benchmarks/bench_fidelity_synthetic.py [--seeds N] [--no-write]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.full import split_point, summary_message, system_parts
from sessionstore.summary.check import without_notes
from sessionstore.summary.extractive import summarize_extractive
from sessionstore.summary.skeleton import SKELETON
from sessionstore.summary.summarizer import summarize
from sessionstore.summary.text import as_text, user_text
from sessionstore.summary.values import normalize

TYPES = ("constraint", "rule+number", "fact", "goal", "preference", "correction")
BOUND = ("constraint", "rule+number", "fact", "preference", "correction")
"""The types the LLM path's check guarantees (user constraints and bound values)."""
NAMES = ("Priya Raman", "Tomasz Wolny", "Amara Okafor", "Lena Fischer", "Kenji Mori", "Sofia Reyes")


@dataclass
class Plant:
    kind: str
    text: str
    must: tuple[str, ...]
    stale: str | None = None  # a correction's superseded value


def _code(rng: random.Random) -> str:
    return "".join(rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(3)) + str(rng.randint(100, 999))


def plants(rng: random.Random) -> list[tuple[Plant, str | None]]:
    """One item per type (the correction as two statements), each phrasing drawn from several, with
    unguessable values (random code words, hosts, amounts, versions, names, dates)."""
    host = f"{_code(rng).lower()}-{rng.randint(1, 99)}.internal"
    code, sign = _code(rng), _code(rng)
    n = rng.randint(120, 9800)
    version = f"{rng.randint(11, 17)}.{rng.randint(1, 9)}"
    owner = rng.choice(NAMES)
    constraint = rng.choice(
        [
            (f"Never deploy to {host} on a Friday.", (host, "never")),
            (f"Don't touch the {code} table in prod.", (code, "touch")),
            (f"Use the {code} registry, not the public one.", (code, "registry")),
            (f"From now on, run every migration against {host} first.", (host, "migration")),
            (f"Deployments go through {host} only.", (host, "only")),
        ]
    )
    rule = rng.choice(
        [
            (
                f"Budget cap is ${n:,} total. Never exceed without explicit approval.",
                (f"${n:,}", "budget cap"),
            ),
            (f"Keep every response under {n} words.", (f"{n} words", "under")),
            (f"Requests to the API are limited to {n} per minute.", (f"{n} per minute", "limited")),
            (f"The p95 latency must stay below {n} ms.", (f"{n} ms", "latency")),
        ]
    )
    fact = rng.choice(
        [
            (f"The production database is Postgres {version}.", (f"postgres {version}",)),
            (f"The on-call owner is {owner}.", (owner, "on-call")),
            (f"Our staging cluster lives at {host}.", (host, "staging")),
            (f"The API key rotates every {n} days.", (f"{n} days", "rotates")),
            (f"{owner} owns the billing service.", (owner, "billing")),
        ]
    )
    goal = rng.choice(
        [
            (f"My goal is to migrate the {code} service to the new cluster.", (code,)),
            (f"What I need: a dashboard for the {code} pipeline by Friday.", (code,)),
            (f"Let's build the {code} exporter; that's the real task here.", (code,)),
            (f"I want you to port the {code} tool to Rust.", (code,)),
        ]
    )
    preference = rng.choice(
        [
            (f"The user prefers replies signed {sign}.", (sign,)),
            (f"I like short answers that end with the word {sign}.", (sign,)),
            (f"She preferred commit messages prefixed with {sign}.", (sign,)),
            (f"Answer in the {sign} style: terse bullet points.", (sign,)),
        ]
    )
    old, new = (
        f"2027-{rng.randint(1, 6):02d}-{rng.randint(10, 28)}",
        f"2027-{rng.randint(7, 12):02d}-{rng.randint(10, 28)}",
    )
    a, b = rng.randint(3, 40), rng.randint(41, 90)
    first, second, stale, latest = rng.choice(
        [
            (
                f"The release deadline is {old}.",
                f"Correction: the release deadline is {new} and does not move.",
                old,
                new,
            ),
            (f"The demo is on {old}.", f"Actually, the demo moved to {new}.", old, new),
            (
                f"The team size is {a} people.",
                f"Update: the team size is now {b} people.",
                f"{a} people",
                f"{b} people",
            ),
        ]
    )
    return [
        (Plant("goal", goal[0], goal[1]), None),
        (Plant("constraint", constraint[0], constraint[1]), None),
        (Plant("rule+number", rule[0], rule[1]), None),
        (Plant("fact", fact[0], fact[1]), None),
        (Plant("preference", preference[0], preference[1]), None),
        (Plant("correction", first, (latest,), stale=stale), "first"),
        (Plant("correction", second, (latest,), stale=stale), "second"),
    ]


_CHATTER = (
    "I should check the retry logic first. You must be careful with the cache here.",
    "Looks fine so far; the tests should pass once the fixture is in place.",
    "I will read the module and then run the suite. It must not take long.",
    "The handler looks odd but it is probably fine. Let me look at the logs.",
)


def filler_turn(rng: random.Random, n: int) -> list[ModelMessage]:
    """One realistic turn: a request, chatter, a tool call with a long output, a short answer."""
    mod = f"src/pkg/mod{rng.randint(1, 60)}.py"
    request = rng.choice(
        [
            f"look at {mod} and tidy it",
            f"why does test_{n} fail?",
            f"run the suite for {mod}",
            "continue",
            "ok",
        ]
    )
    output = "\n".join(
        f"{mod}:{i}: def f{i}(x): return x + {rng.randint(0, 99)}" for i in range(rng.randint(20, 60))
    )
    call = f"c{n}"
    return [
        ModelRequest(parts=[UserPromptPart(request)]),
        ModelResponse(
            parts=[
                TextPart(rng.choice(_CHATTER)),
                ToolCallPart("bash", {"command": f"cat {mod}"}, tool_call_id=call),
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("bash", output, tool_call_id=call)]),
        ModelResponse(parts=[TextPart(rng.choice(_CHATTER))]),
    ]


def plant_turn(plant: Plant) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(plant.text)]), ModelResponse(parts=[TextPart("Noted.")])]


def session_rounds(
    seed: int, rounds: int = 5, turns: int = 24
) -> tuple[list[Plant], list[list[ModelMessage]]]:
    """The planted items and the new messages of each round (items all planted in round 1)."""
    rng = random.Random(seed)
    items = plants(rng)
    slots = sorted(rng.sample(range(2, turns - 4), len(items)))
    first: list[ModelMessage] = []
    k = 0
    for n in range(turns):
        while k < len(items) and slots[k] == n:
            first += plant_turn(items[k][0])
            k += 1
        first += filler_turn(rng, n)
    later = [[m for n in range(turns) for m in filler_turn(rng, 1000 * r + n)] for r in range(1, rounds)]
    return [p for p, which in items if which != "first"], [first, *later]


def context_lines(messages: Sequence[ModelMessage]) -> list[str]:
    lines: list[str] = []
    for msg in messages:
        for part in msg.parts:
            if isinstance(part, UserPromptPart):
                lines += user_text(part).splitlines()
            elif isinstance(part, CompactionPart | TextPart):
                lines += (part.content or "").splitlines()
            elif isinstance(part, ToolReturnPart | ToolCallPart):
                lines += as_text(part.content if isinstance(part, ToolReturnPart) else part.args).splitlines()
    return lines


def survives(plant: Plant, lines: list[str]) -> bool:
    """All of the item's values stated; for a correction, the last statement of the value (outside
    "Superseded" lines, in reading order) is the latest one, so the stale value never reads as current."""
    current = [normalize(line) for line in lines if "superseded" not in line.lower()]
    flat = "\n".join(current)
    if not all(normalize(m) in flat for m in plant.must):
        return False
    if plant.stale is None:
        return True
    stale, new = normalize(plant.stale), normalize(plant.must[0])
    last = [line for line in current if stale in line or new in line][-1]
    return new in last and stale not in last


def summary_lines(messages: Sequence[ModelMessage]) -> list[str]:
    """The lines of the summaries in `messages` (the compacted part; the rest is the verbatim tail)."""
    return [
        line
        for msg in messages
        for part in msg.parts
        if isinstance(part, CompactionPart)
        for line in (part.content or "").splitlines()
    ]


def presents_stale(plant: Plant, summary: list[str]) -> bool:
    """Whether a summary line states a correction's stale value as current: the value, without the
    latest one, on a line with no "superseded" mark. Reading order does not excuse it (a summary
    is read as one state, not as a story), unlike in the verbatim tail."""
    if plant.stale is None:
        return False
    stale, new = normalize(plant.stale), normalize(plant.must[0])
    lines = [normalize(line) for line in summary if "superseded" not in line.lower()]
    return any(stale in line and new not in line for line in lines)


Compactor = Callable[[list[ModelMessage], float], list[ModelMessage]]


def _by_summary(summarizer: Callable[[list[ModelMessage], list[ModelMessage]], str]) -> Compactor:
    def compact(history: list[ModelMessage], tail: float) -> list[ModelMessage]:
        sizes = estimate_messages(history)
        cut = split_point(history, sizes, int(sum(sizes) * tail))
        kept = cut.messages(history)
        summarized = [m for i, m in enumerate(history[: cut.start]) if i != cut.request]
        head = summary_message(summarizer(history[: cut.start], kept), system_parts(summarized))
        return [head, *kept]

    return compact


def truncate(history: list[ModelMessage], tail: float) -> list[ModelMessage]:
    """Baseline: keep the newest 30 % of tokens (whole user turns), drop the rest."""
    sizes = estimate_messages(history)
    return split_point(history, sizes, int(sum(sizes) * 0.3)).messages(history)


def _drop_everything(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(SKELETON.replace("## Goal\n", "## Goal\n- keep going\n"))])


def _restate_stale(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """An LLM that gets corrections wrong: it states every superseded value of its checklist as current."""
    prompt = "\n".join(user_text(p) for m in messages for p in m.parts if isinstance(p, UserPromptPart))
    marker = "- (superseded, not current) "
    old = [line[len(marker) :] for line in prompt.splitlines() if line.startswith(marker)]
    body = "\n".join(f"- {line}" for line in old) or "- none"
    text = SKELETON.replace("## Goal\n", "## Goal\n- keep going\n").rstrip() + "\n" + body + "\n"
    return ModelResponse(parts=[TextPart(text)])


def contenders() -> dict[str, Compactor]:
    import extractive_before

    llm = Settings(model="test")
    return {
        "new extractive": _by_summary(lambda m, tail: summarize_extractive(m, later=tail)),
        "previous extractive": _by_summary(lambda m, tail: extractive_before.summarize_extractive(m)),
        "truncate to last 30%": truncate,
        "LLM drops all + check": _by_summary(
            lambda m, tail: summarize(m, settings=llm, model=FunctionModel(_drop_everything), later=tail)
        ),
        "LLM states stale + check": _by_summary(
            lambda m, tail: summarize(m, settings=llm, model=FunctionModel(_restate_stale), later=tail)
        ),
        "LLM states stale + check without notes": _by_summary(
            lambda m, tail: without_notes(
                summarize(m, settings=llm, model=FunctionModel(_restate_stale), later=tail)
            )
        ),
    }


def run(seeds: Sequence[int], tails: Sequence[float] = (0.1, 0.3), rounds: int = 5) -> dict:
    """survival[(contender, tail, round, type)] = fraction of seeds whose item survived."""
    table: dict[tuple[str, float, int, str], list[bool]] = {}
    for name, compact in contenders().items():
        for tail in tails:
            for seed in seeds:
                items, new = session_rounds(seed, rounds)
                history: list[ModelMessage] = []
                for r in range(rounds):
                    history = compact([*history, *new[r]], tail)
                    lines, summary = context_lines(history), summary_lines(history)
                    for plant in items:
                        ok = survives(plant, lines) and not presents_stale(plant, summary)
                        table.setdefault((name, tail, r + 1, plant.kind), []).append(ok)
    return {k: sum(v) / len(v) for k, v in table.items()}


def _real_steps(realdata: Path, name: str) -> list:
    from sessionstore.formats.transcripts import read_transcript

    return read_transcript(realdata / name).steps


CLAUDE_CODE = "claude_code/codemie_session-3fe1b6bc.jsonl"
CODEX_ROLLOUT = "codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"


def real_constraint(trials: int, realdata: Path) -> dict[str, float]:
    """A constraint planted mid-way through the ~100k-token real transcript, one compaction, 10 % tail."""
    steps = _real_steps(realdata, CLAUDE_CODE)
    result: dict[str, list[bool]] = {}
    for trial in range(trials):
        rng = random.Random(trial)
        host = f"{_code(rng).lower()}.internal"
        plant = Plant("constraint", f"Never run migrations against {host} without a backup.", (host, "never"))
        at = rng.randint(len(steps) // 3, 2 * len(steps) // 3)
        history = [m for s in steps[:at] for m in s.messages] + plant_turn(plant)
        history += [m for s in steps[at:] for m in s.messages]
        for name, compact in contenders().items():
            result.setdefault(name, []).append(survives(plant, context_lines(compact(history, 0.1))))
    return {k: sum(v) / len(v) for k, v in result.items()}


def real_planted(trials: int, realdata: Path) -> dict[tuple[str, str], float]:
    """Every type planted at random turn boundaries of the real Codex rollout (~124k tokens); two
    compactions (the second after the rest of the rollout), tail 10 %."""
    steps = _real_steps(realdata, CODEX_ROLLOUT)
    result: dict[tuple[str, str], list[bool]] = {}
    for trial in range(trials):
        rng = random.Random(1000 + trial)
        items = plants(rng)
        cut = len(steps) // 2
        slots = sorted(rng.randint(0, cut - 1) for _ in items)
        first: list[ModelMessage] = []
        k = 0
        for n, step in enumerate(steps[:cut]):
            while k < len(items) and slots[k] == n:
                first += plant_turn(items[k][0])
                k += 1
            first += step.messages
        rest = [m for s in steps[cut:] for m in s.messages]
        for name, compact in contenders().items():
            history = compact(compact(first, 0.1) + rest, 0.1)
            lines, summary = context_lines(history), summary_lines(history)
            for plant, which in items:
                if which != "first":
                    ok = survives(plant, lines) and not presents_stale(plant, summary)
                    result.setdefault((name, plant.kind), []).append(ok)
    return {k: sum(v) / len(v) for k, v in result.items()}


def report(survival: dict, real: dict[str, float] | None, seeds: int, planted: dict | None = None) -> str:
    names = list(dict.fromkeys(k[0] for k in survival))
    out = [
        f"{seeds} seeded sessions, 7 planted statements each (6 types), compacted 5 rounds; "
        "% of seeds whose item survived. A correction fails when a summary line states its stale value "
        "without the latest one, whatever follows (the verbatim tail is read in order). "
        '"LLM states stale" answers every superseded value of its checklist as current; '
        '"without notes" is the same summary with the check\'s correction notes (check.py) taken off.'
    ]
    for tail in sorted({k[1] for k in survival}):
        for r in (1, 5):
            out += [
                "",
                f"tail {tail:.0%}, after round {r}:",
                "",
                "| contender | " + " | ".join(TYPES) + " |",
                "|---|" + "---|" * len(TYPES),
            ]
            for name in names:
                cells = [f"{survival[(name, tail, r, t)]:.0%}" for t in TYPES]
                out.append(f"| {name} | " + " | ".join(cells) + " |")
    if real is not None:
        out += [
            "",
            "constraint mid-way through the ~100k-token real Claude Code transcript "
            "(tail 10 %, one compaction):",
            "",
        ]
        out += [f"- {name}: {share:.0%}" for name, share in real.items()]
    if planted:
        out += [
            "",
            "every type planted in the first half of the real Codex rollout (~124k tokens), compacted "
            "twice (tail 10 %):",
            "",
            "| contender | " + " | ".join(TYPES) + " |",
            "|---|" + "---|" * len(TYPES),
        ]
        for name in dict.fromkeys(k[0] for k in planted):
            out.append(f"| {name} | " + " | ".join(f"{planted[(name, t)]:.0%}" for t in TYPES) + " |")
    return "\n".join(out)


def goals(survival: dict, real: dict[str, float] | None) -> list[str]:
    """Each goal of issue 11 with met / MISSED."""
    new = "new extractive"
    checks = [
        (
            "offline >= 90% per type after round 1 (tail 10%)",
            all(survival[(new, 0.1, 1, t)] >= 0.9 for t in TYPES),
        ),
        (
            "offline >= 80% per type after round 5 (tail 10%)",
            all(survival[(new, 0.1, 5, t)] >= 0.8 for t in TYPES),
        ),
        (
            "corrections: latest value, never stale, 100%",
            all(survival[(new, tl, r, "correction")] == 1.0 for tl in (0.1, 0.3) for r in range(1, 6)),
        ),
        (
            "LLM stating superseded values as current, with check: corrections 100%",
            all(
                survival[("LLM states stale + check", tl, r, "correction")] == 1.0
                for tl in (0.1, 0.3)
                for r in range(1, 6)
            ),
        ),
        (
            "LLM that drops all, with check = offline on bound types",
            all(
                survival[("LLM drops all + check", 0.1, r, t)] >= survival[(new, 0.1, r, t)]
                for r in range(1, 6)
                for t in BOUND
            ),
        ),
    ]
    if real is not None:
        checks.append(("constraint mid-way in 100k real transcript >= 90%", real[new] >= 0.9))
    return [f"- {label}: {'met' if ok else 'MISSED'}" for label, ok in checks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from common import REALDATA, machine_line, write_section

    survival = run(range(args.seeds))
    real = real_constraint(args.trials, REALDATA) if REALDATA.is_dir() else None
    planted = real_planted(args.trials, REALDATA) if REALDATA.is_dir() else None
    body = report(survival, real, args.seeds, planted)
    lines = goals(survival, real)
    print(body + "\n\n" + "\n".join(lines))
    if not args.no_write:
        heading = "## Summary fidelity (issue 11)"
        write_section(
            heading, f"{heading}\n\n{machine_line()}\n\n{body}\n\nGoals:\n\n" + "\n".join(lines) + "\n"
        )


if __name__ == "__main__":
    main()
