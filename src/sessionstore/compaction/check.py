"""The check an LLM summary must pass: every user constraint and bound value still stated (DESIGN §7).

The same deterministic extraction that drives the offline summarizer lists what the replaced messages
bind: current user constraints and facts, with their values. An item counts as kept when the summary
states it verbatim, or each of its values whole (case and markdown ignored; "$5000" does not state
"$500") and most of its content words; whatever is not kept is appended verbatim under
`## Critical Context` as "kept from the transcript", so a model can add, rephrase and reorder, but
never lose a rule or a value. Superseded items are not required (a
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


def _holds(flat: str, value: str) -> bool:
    """Whether normalized `flat` holds `value` whole, not inside a longer word or number: "$5000",
    "$500,000" and "$500.50" do not state "$500", nor "130 s" "30 s", nor "host:54321" "host:5432"."""
    v = normalize(value)
    if not v:
        return True
    at = flat.find(v)
    while at >= 0:
        end = at + len(v)
        joined_before = v[0].isalnum() and at > 0 and flat[at - 1].isalnum()
        nxt = flat[end : end + 2]
        joined_after = v[-1].isalnum() and (
            nxt[:1].isalnum() or (v[-1].isdigit() and nxt[:1] in (".", ",") and nxt[1:2].isdigit())
        )
        if not joined_before and not joined_after:
            return True
        at = flat.find(v, at + 1)
    return False


def states(summary: str, item: Item) -> bool:
    """Whether `summary` states `item`: every value present (whole), and most content words (by
    5-letter stem)."""
    flat = normalize(summary)
    core = item.text.rstrip(" .,;:!?")  # its closing stop is no part of a value ("$500." in "$500.50")
    if core and _holds(flat, core):  # verbatim (a line `complete` added): stated, values and all
        return True
    if not all(_holds(flat, v) for v in item.values):
        return False
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
