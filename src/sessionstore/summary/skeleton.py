"""The summary skeleton every tier-2 summary fills (DESIGN §7), the sections added to it, its validator.

The skeleton (`HEADINGS`) is what a model writes, or the offline summarizer fills from the record:
the goal, progress, decisions, next steps and critical context. After it come the sections built
mechanically (`ADDED`): the work log (offline only), the rules found in files and the user's own
words, then one line saying how to read what the summary replaced. Tier 3 shortens summaries section
by section, a resumed session reads the Goal first, and a re-compaction parses the added sections
back: so a model's summary is accepted only with every skeleton heading present, in order, and a
non-empty Goal.
"""

from __future__ import annotations

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, UserPromptPart

HEADINGS: tuple[str, ...] = (
    "# Conversation summary",
    "## Goal",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)

SKELETON: str = "\n\n".join(HEADINGS) + "\n"
"""The bare skeleton (headings only, blank sections): what a summarizer is asked to fill."""

GOAL = "## Goal"
CRITICAL = "## Critical Context"

ADDED: tuple[str, ...] = ("## Work so far", "## Rules found in files", "## What the user said")
"""The sections built mechanically, after the skeleton, in this order (work_log.py, file_rules.py,
user_words.py own their contents)."""
SECTIONS: tuple[str, ...] = (*HEADINGS, *ADDED)


def heading_lines(text: str) -> list[tuple[int, str]]:
    """(line number, heading) for each line that is exactly one of SECTIONS (trailing spaces ignored)."""
    known = set(SECTIONS)
    return [(i, line.rstrip()) for i, line in enumerate(text.splitlines()) if line.rstrip() in known]


def section_body(text: str, heading: str) -> str:
    """The text between `heading` (first occurrence) and the next known heading; '' if absent."""
    lines = text.splitlines()
    found = heading_lines(text)
    for idx, (line_no, name) in enumerate(found):
        if name == heading:
            end = found[idx + 1][0] if idx + 1 < len(found) else len(lines)
            return "\n".join(lines[line_no + 1 : end]).strip()
    return ""


def validate_summary(text: str) -> list[str]:
    """Problems with `text` as a skeleton summary: missing, repeated or out-of-order headings, empty Goal.

    Returns [] when the summary is valid. Each problem is one sentence a model can act on, because the
    LLM summarizer's retry prompt quotes them.
    """
    if not text.strip():
        return ["the summary is empty"]
    found = heading_lines(text)
    names = [name for _, name in found]
    problems: list[str] = []
    for heading in SECTIONS:
        count = names.count(heading)
        if count == 0 and heading in HEADINGS:
            problems.append(f"missing heading '{heading}'")
        elif count > 1:
            problems.append(f"heading '{heading}' appears {count} times; use it once")
    first_seen: list[str] = []
    for name in names:
        if name not in first_seen:
            first_seen.append(name)
    expected = [h for h in SECTIONS if h in first_seen]
    if first_seen != expected:
        problems.append("headings are out of order; the order must be: " + ", ".join(HEADINGS))
    if GOAL in names and not section_body(text, GOAL):
        problems.append(f"the '{GOAL}' section is empty; state the user's goal in one or two sentences")
    return problems


def is_summary_request(msg: ModelMessage) -> bool:
    """A request carrying a compaction summary and no user prompt (what tiers 2 and 3 put first)."""
    if not isinstance(msg, ModelRequest):
        return False
    kinds = {type(p) for p in msg.parts}
    return CompactionPart in kinds and UserPromptPart not in kinds
