"""The check an LLM summary must pass: every user constraint and bound value still stated (DESIGN §7).

The same deterministic extraction that drives the offline summarizer lists what the replaced messages
bind: current user constraints and facts, with their values. An item counts as kept when the summary
states each of its values (case and markdown ignored) and most of its content words; whatever is not
kept is appended verbatim under `## Critical Context` as "kept from the transcript", so a model can
add, rephrase and reorder, but never lose a rule or a value. Superseded items are not required (a
summary should not present them as current).
"""

from __future__ import annotations

from sessionstore.compaction.extraction import Extraction, Item
from sessionstore.compaction.render import KEPT
from sessionstore.compaction.values import key_words, normalize

__all__ = ["checklist", "complete", "missing", "required"]

_WORD_COVERAGE = 0.6
_STEM = 5


def required(ex: Extraction) -> list[Item]:
    """What a summary of `ex` must keep: current constraints and value-binding facts (not the assistant's)."""
    return [
        item
        for item in ex.items
        if not item.superseded
        and item.source != "assistant"
        and (item.kind == "constraint" or (item.kind == "fact" and item.values))
    ]


def _stems(text: str) -> set[str]:
    return {w[:_STEM] for w in key_words(text)}


def states(summary: str, item: Item) -> bool:
    """Whether `summary` states `item`: every value present, and most content words (by 5-letter stem)."""
    flat = normalize(summary)
    if any(normalize(v) not in flat for v in item.values):
        return False
    if normalize(item.text) in flat:
        return True
    wanted = _stems(item.text)
    if not wanted:
        return True
    have = _stems(summary)
    return len(wanted & have) / len(wanted) >= _WORD_COVERAGE


def missing(summary: str, ex: Extraction) -> list[Item]:
    """The required items of `ex` that `summary` does not state, oldest first."""
    return [item for item in required(ex) if not states(summary, item)]


def complete(summary: str, ex: Extraction) -> str:
    """`summary` with every missing required item appended under `## Critical Context`, verbatim.

    `## Critical Context` is the skeleton's last section, so appending at the end puts the lines in it.
    """
    lost = missing(summary, ex)
    if not lost:
        return summary
    added = "\n".join(f"- {KEPT}{item.text}" for item in lost)
    return summary.rstrip() + "\n" + added + "\n"


def checklist(ex: Extraction, limit: int = 80) -> str:
    """The required items as a bullet list for the summary prompt (newest kept when over `limit`)."""
    items = required(ex)[-limit:]
    lines = [f"- {item.text}" for item in items]
    lines += [f"- (superseded, not current) {item.text}" for item in ex.superseded()[-20:]]
    return "\n".join(lines)
