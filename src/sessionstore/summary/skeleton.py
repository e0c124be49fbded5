"""The summary skeleton every tier-2 summary fills (DESIGN §7), and its validator.

The skeleton is the contract between the summarizers (LLM or extractive) and everything downstream:
tier 3 shortens summaries section by section, and a resumed session reads its Goal first. So a summary
is accepted only with every heading present, in order, and a non-empty Goal.
"""

from __future__ import annotations

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, UserPromptPart

HEADINGS: tuple[str, ...] = (
    "# Conversation summary",
    "## Goal",
    "## Constraints & Preferences",
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


def heading_lines(text: str) -> list[tuple[int, str]]:
    """(line number, heading) for each line that is exactly one of HEADINGS (trailing spaces ignored)."""
    known = set(HEADINGS)
    return [(i, line.rstrip()) for i, line in enumerate(text.splitlines()) if line.rstrip() in known]


def section_body(text: str, heading: str) -> str:
    """The text between `heading` (first occurrence) and the next skeleton heading; '' if absent."""
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
    for heading in HEADINGS:
        count = names.count(heading)
        if count == 0:
            problems.append(f"missing heading '{heading}'")
        elif count > 1:
            problems.append(f"heading '{heading}' appears {count} times; use it once")
    first_seen: list[str] = []
    for name in names:
        if name not in first_seen:
            first_seen.append(name)
    expected = [h for h in HEADINGS if h in first_seen]
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
