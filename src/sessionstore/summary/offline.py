"""The offline summarizer (`model = "extractive"`, the default): the skeleton filled from the record.

No model reads the conversation, so nothing is interpreted: the Goal is the latest user request by
content (the newest prompt with three words or more of the person's own, never injected boilerplate),
Done is the outcome of the last turns (the assistant's final text, shortened), In Progress the
latest request when its turn has no answer yet, Blocked the failures of the latest turn, and Critical
Context the values the user corrected explicitly ("$500 is superseded: the user corrected it to
$700."), the files changed so far and a requested focus. The user's own words, the work log and the
rules found in files follow (compose.py); the second line says the summary was made offline.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage

from sessionstore.accounting.settings import Settings
from sessionstore.plumbing.collector import paused_gc
from sessionstore.summary.compose import (
    CHANGED,
    Budget,
    Record,
    compose,
    foreign_lines,
    record,
)
from sessionstore.summary.text import cut_chars

__all__ = ["MARKER", "skeleton", "summarize_offline"]

MARKER = "> offline summary (no model configured):"
_FILES = 20


def _or_none(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "- none"


def skeleton(rec: Record, *, focus: str | None, budget: Budget) -> str:
    """The skeleton of `rec`, its fields shortened to the budget's scale."""
    scale = max(min(budget.rest // 4, 600), 80)  # characters per field
    goal = cut_chars(rec.latest_request(), scale) or "(no user request in the summarized part)"
    answered = [t for t in rec.turns if t.answer][-3:]
    done = [f"- {cut_chars(t.answer, scale // 2)}" for t in answered]
    last = rec.turns[-1] if rec.turns else None
    doing = (
        [f"- {cut_chars(last.request, scale)}"]
        if last is not None and not last.answer and last.request
        else []
    )
    blocked = [f"- {cut_chars(e, scale // 2)}" for e in (last.errors[-3:] if last is not None else [])]
    critical = [f"- Focus requested: {cut_chars(focus, scale)}"] if focus else []
    seen: set[tuple[str, str]] = set()
    for c in rec.corrections:
        if (c.old, c.new) not in seen:
            seen.add((c.old, c.new))
            critical.append(f"- {c.old} is superseded: the user corrected it to {c.new}.")
    if rec.changed:
        critical.append(CHANGED + ", ".join(f"`{cut_chars(p, 100)}`" for p in rec.changed[-_FILES:]))
    critical += foreign_lines(rec, max(budget.rest // 4, 40))
    header = (
        f"{MARKER} nothing below is a model's reading; the user's words are quoted verbatim under "
        '"What the user said", the rest is taken from the record.'
    )
    return "\n\n".join(
        [
            f"# Conversation summary\n{header}",
            f"## Goal\n{goal}",
            "## Progress",
            f"### Done\n{_or_none(done)}",
            f"### In Progress\n{_or_none(doing)}",
            f"### Blocked\n{_or_none(blocked)}",
            "## Key Decisions\n- none recorded (offline: no model read the conversation)",
            "## Next Steps\n- none recorded (offline: continue from the latest request, quoted last below)",
            f"## Critical Context\n{_or_none(critical)}",
        ]
    )


def summarize_offline(
    messages: Sequence[ModelMessage],
    *,
    settings: Settings,
    focus: str | None = None,
    max_tokens: int | None = None,
    recall: str | None = None,
) -> str:
    """The offline summary of `messages` within `max_tokens` (default: the settings' two budgets).
    `settings` are the store's (DESIGN §10): its budgets decide what the summary holds."""
    budget = Budget.of(settings, max_tokens)
    with paused_gc():  # its objects are acyclic: a full collection over a long history costs more
        rec = record(messages)
        return compose(skeleton(rec, focus=focus, budget=budget), rec, budget, recall=recall, work=True)
