"""The tables and goals of bench_fidelity.py, from its tally (markdown, for RESULTS.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CONTENDERS = ("summary", "user verbatim", "truncation")
ROUNDS = (1, 5)
ROUND_GOALS = {1: 0.95, 5: 0.90}


def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.0%}"


def _kept(tally: Any, path: str, window: str, r: int, name: str, type_: str | None) -> list[bool]:
    if type_ is not None:
        return tally.kept.get((path, window, r, name, type_), [])
    return [v for k, vs in tally.kept.items() if k[:4] == (path, window, r, name) for v in vs]


def _ratio(sizes: list[tuple[int, int]]) -> str:
    if not sizes:
        return "n/a"
    summary, replaced = sum(s for s, _ in sizes), sum(r for _, r in sizes)
    return f"{summary / len(sizes):,.0f} / {replaced / len(sizes):,.0f} = {summary / max(replaced, 1):.3f}"


def budget_line(settings: Any) -> str:
    fields = [f"summary_max_tokens = {settings.summary_max_tokens:,}"]
    if hasattr(settings, "summary_user_tokens"):
        fields.append(f"summary_user_tokens = {settings.summary_user_tokens:,}")
    else:
        fields.append("no summary_user_tokens setting (before issue 26)")
    return "Settings: defaults (" + ", ".join(fields) + "), only context_window_tokens set per window."


def report(
    types: list[str],
    tally: Any,
    paths: Sequence[tuple[str, str]],
    sessions: int,
    *,
    quick: bool,
    settings: Any,
) -> str:
    out = [
        f"{'QUICK: ' if quick else ''}{sessions} sessions x 3 planted cases (in the full mode every case "
        "at an early, a middle and a late turn boundary of the real Claude Code or Codex transcript; the "
        "in-run path runs the first 25 sessions, every case once), 5 rounds with new real turns between "
        "them; % of placements kept after rounds 1 and 5. Contenders "
        "at the summary's own token count: user verbatim (every user message the context no longer "
        "holds, newest first, whole) and truncation (the newest such text that fits). "
        + budget_line(settings),
        "",
        "| path | window | placements | summary r1 | summary r5 | user verbatim r1 | r5 | truncation r1 | r5 "
        "| stale-latest corrections (s/u/t, r1+r5; in brackets: stale value also in the real turns) "
        "| false supersessions (s/u/t) "
        "| summary / summarized tokens r1 | r5 | tier-2 compactions by r5 | s |",
        "|---|---|" + "---|" * 13,
    ]
    for path, window in paths:
        cells = [
            _pct(_share(_kept(tally, path, window, r, name, None))) for name in CONTENDERS for r in ROUNDS
        ]
        stale = "/".join(
            f"{sum(tally.stale[(path, window, r, n)] for r in ROUNDS)} "
            f"({sum(tally.stale_elsewhere[(path, window, r, n)] for r in ROUNDS)})"
            for n in CONTENDERS
        )
        sup = "/".join(str(sum(tally.false_sup[(path, window, r, n)] for r in ROUNDS)) for n in CONTENDERS)
        comp = tally.compactions.get((path, window, 5), [])
        comps = f"{sum(comp) / len(comp):.1f}" if comp else "n/a"
        placed = len(_kept(tally, path, window, 1, "summary", None)) + tally.in_tail[(path, window, 1)]
        ratios = " | ".join(_ratio(tally.sizes.get((path, window, r), [])) for r in ROUNDS)
        out.append(
            f"| {path} | {window} | {placed} | " + " | ".join(cells) + f" | {stale} | {sup} | {ratios} "
            f"| {comps} | {tally.seconds[(path, window)]:.0f} |"
        )
    notes = []
    for path, window in paths:
        tail = sum(tally.in_tail[(path, window, r)] for r in ROUNDS)
        if tail:
            notes.append(f"{path} {window}: {tail} placements still verbatim in the tail, not scored")
        if tally.wraps[(path, window)]:
            notes.append(
                f"{path} {window}: the pool of new real text started over {tally.wraps[(path, window)]}x"
            )
    if notes:
        out += ["", "Notes: " + "; ".join(notes) + "."]
    for path, window in paths:
        out += ["", f"Per type, {path} at {window} (kept % after round 1 / round 5):", ""]
        out += ["| type | " + " | ".join(CONTENDERS) + " |", "|---|---|---|---|"]
        for type_ in [*types, None]:
            cells = [
                "/".join(_pct(_share(_kept(tally, path, window, r, name, type_))) for r in ROUNDS)
                for name in CONTENDERS
            ]
            out.append(f"| {type_ or '**all**'} | " + " | ".join(cells) + " |")
    out += ["", "Goals (the product summary, every path and window):", ""]
    out += goals(types, tally, paths)
    return "\n".join(out)


def goals(types: list[str], tally: Any, paths: Sequence[tuple[str, str]]) -> list[str]:
    lines = []
    for r, goal in ROUND_GOALS.items():
        misses = [
            f"{t} {_pct(share)} ({p} {w})"
            for p, w in paths
            for t in types
            if (share := _share(_kept(tally, p, w, r, "summary", t))) is not None and share < goal
        ]
        lines.append(_goal(f">= {goal:.0%} per type at round {r}", misses))
    below = [
        f"{t} r{r} {_pct(s)} < {_pct(b)} ({p} {w})"
        for p, w in paths
        for r in ROUNDS
        for t in types
        if (s := _share(_kept(tally, p, w, r, "summary", t))) is not None
        and (b := _share(_kept(tally, p, w, r, "user verbatim", t))) is not None
        and s < b
    ]
    lines.append(_goal("never below the user-verbatim baseline on any type", below))
    found = sum(tally.stale[(p, w, r, "summary")] for p, w in paths for r in ROUNDS)
    elsewhere = sum(tally.stale_elsewhere[(p, w, r, "summary")] for p, w in paths for r in ROUNDS)
    label = (
        "0 corrections whose latest mention is stale "
        f"(not counting {elsewhere} whose stale value the real turns also state)"
    )
    lines.append(_goal(label, [f"{found - elsewhere} found"] if found - elsewhere else []))
    sup = sum(tally.false_sup[(p, w, r, "summary")] for p, w in paths for r in ROUNDS)
    lines.append(_goal("0 false supersessions", [f"{sup} found"] if sup else []))
    return lines


def _goal(label: str, misses: list[str]) -> str:
    if not misses:
        return f"- {label}: met"
    shown = "; ".join(misses[:8]) + (f"; ... ({len(misses)} in all)" if len(misses) > 8 else "")
    return f"- {label}: MISSED ({shown})"
