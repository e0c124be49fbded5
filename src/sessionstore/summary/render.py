"""The offline summary's text: typed items into the skeleton within a token budget, and back again.

`render` fills the DESIGN §7 skeleton, most important first: the goal, every current user constraint,
the facts binding values to names, open work (In Progress, Blocked, open questions), corrections
(superseded values, marked as no longer current), decisions and conclusions, next steps, completed
calls, then files / commands / identifiers. Items are chosen in that order until `max_tokens` (the
project's estimator, accounting/tokens.py) is reached, and shown chronologically inside each section,
so a small budget loses the least important lines first, never a value from inside a kept line (a
line shortened to its section's length keeps each value whole: `text.shorten_keeping`).

`parse_summary` reads a previous summary (this one's or an LLM's) back into an `Extraction`, so a
re-compaction merges every section: counts summed, In Progress kept, superseded items dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.items import Extraction, Item
from sessionstore.summary.skeleton import HEADINGS, section_body
from sessionstore.summary.text import dedupe, shorten_keeping, shorten_line
from sessionstore.summary.values import retired_paths, values

__all__ = ["EXTRACTIVE_MARKER", "KEPT", "SUPERSEDED", "parse_summary", "render"]

EXTRACTIVE_MARKER = "> extractive summary (offline, no model):"
KEPT = "kept from the transcript: "
SUPERSEDED = "Superseded (no longer current): "
_EARLIER_GOAL = "Earlier goal: "
_QUESTION = "Open question: "
_CONCLUDED = "Concluded: "
_PASTED = "Pasted instructions (not the goal): "
_FOCUS = "Focus requested: "
_RETIRED = "files "
_LISTS = (("Files: ", ", "), ("Commands: ", "; "), ("Identifiers: ", ", "))
_COUNT = re.compile(r"extracted from (\d+) messages")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$|^\s*\d+[.)]\s+(.*)$")
_NONE = frozenset({"(none recorded)", "none", "- none", "n/a", "_none_", "(none)"})
_HEADING = re.compile(r"#{1,6}(?:\s|$)")  # a markdown heading; "#4521 fails" or "#ops only" is text


@dataclass
class _Line:
    section: str
    text: str
    priority: int
    order: int


def _bullets(body: str) -> list[str]:
    out: list[str] = []
    for line in body.splitlines():
        match = _BULLET.match(line)
        text = (match.group(1) or match.group(2)) if match else line.strip()
        text = (text or "").strip()
        if text and text.lower() not in _NONE and not _HEADING.match(text):
            out.append(text)
    return out


def parse_summary(summary: str) -> Extraction:
    """A previous summary as an Extraction; its items come before anything extracted later.

    A markdown heading inside a section (an LLM's own `#### Notes`) is structure and skipped; a line
    that merely starts with `#` ("#4521 times out", "#ops must approve") is an item like any other."""
    ex = Extraction()
    count = _COUNT.search(summary.split("\n## Goal", 1)[0])
    ex.messages = int(count.group(1)) if count else 0
    goal = [g for g in _bullets(section_body(summary, "## Goal"))]
    for line in goal:
        if line.startswith(_EARLIER_GOAL):
            ex.earlier_goals.append(line[len(_EARLIER_GOAL) :])
        elif not ex.goal:
            ex.goal = line
    for text in _bullets(section_body(summary, "## Constraints & Preferences")):
        ex.add("constraint", text, "summary")
    for text in _bullets(section_body(summary, "### Done")):
        ex.add("done", text, "summary")
    ex.in_progress += _bullets(section_body(summary, "### In Progress"))
    for text in _bullets(section_body(summary, "### Blocked")):
        if text.startswith(_QUESTION):
            ex.add("question", text[len(_QUESTION) :], "summary")
        else:
            ex.add("blocked", text, "summary")
    for text in _bullets(section_body(summary, "## Key Decisions")):
        if text.startswith(_CONCLUDED):
            ex.add("conclusion", text[len(_CONCLUDED) :], "summary")
        else:
            ex.add("decision", text, "summary")
    ex.next_steps += _bullets(section_body(summary, "## Next Steps"))
    for text in _bullets(section_body(summary, "## Critical Context")):
        listed = next(((label, sep) for label, sep in _LISTS if text.startswith(label)), None)
        if listed:
            label, sep = listed
            target = {"Files: ": ex.files, "Commands: ": ex.commands, "Identifiers: ": ex.identifiers}[label]
            target += [v.strip("` ") for v in text[len(label) :].split(sep) if v.strip("` ")]
        elif text.startswith(_PASTED):
            ex.pasted.append(text[len(_PASTED) :])
        elif text.startswith((SUPERSEDED, _FOCUS)):
            continue  # superseded values are dropped on re-compaction; a focus applies once
        elif text.startswith(KEPT):
            ex.add("constraint", text[len(KEPT) :], "summary")
        else:
            ex.add("fact", text, "summary")
    return ex


def _shown(text: str, limit: int) -> str:
    """A verbatim text (a request, a pasted block) on one line, shortened without cutting a value."""
    flat = " ".join(text.split())
    return shorten_line(flat, values(flat), limit)


def _scrubber(ex: Extraction):
    """A function removing superseded sentences from verbatim requests (Goal, In Progress, Next Steps),
    so a stale value is never presented as current there either."""
    stale = [i.text for i in ex.superseded() if len(i.text) >= 8]

    def scrub(text: str) -> str:
        for old in stale:
            text = text.replace(old, "[superseded: see Critical Context]")
        return text

    return scrub


_NOTED = re.compile(r"\s\((?:now [^)\s]+|no longer current)\)")


def _mark(text: str, path: str, mark: str) -> str:
    """`text` with `mark` after each whole occurrence of `path` (after its closing backtick or quote),
    unless a note already follows it."""
    whole = re.compile(rf"(?<![\w/.~@+-]){re.escape(path)}(?![\w/@+-]|\.\w)[`'\"]?")
    out, last = [], 0
    for m in whole.finditer(text):
        out.append(text[last : m.end()] + ("" if _NOTED.match(text, m.end()) else mark))
        last = m.end()
    return "".join(out) + text[last:]


def _noter(ex: Extraction):
    """A function putting "(now NEW)" after each path in a verbatim text that the user later renamed,
    moved or replaced (`Extraction.replacement`), "(no longer current)" after one retired with nothing
    in its place ("stop touching"): the user's words stay as written, and the next agent is not sent
    to a file that is gone. A text that retires the path itself ("I renamed a.py to b.py") and an
    occurrence already noted are left alone."""
    gone = {p: ex.replacement(p) for p in {*ex.retired, *ex.retired_files()}}

    def note(text: str) -> str:
        named = [p for p in values(text) if p in gone]
        if not named:
            return text
        named = [p for p in named if p not in retired_paths(text)]
        for path in sorted(named, key=len, reverse=True):
            new = gone[path]
            text = _mark(text, path, f" (now {new})" if new else " (no longer current)")
        return text

    return note


def _candidates(ex: Extraction, focus: str | None) -> list[_Line]:
    lines: list[_Line] = []
    scrub = _scrubber(ex)
    note = _noter(ex)

    def put(section: str, items: list[Item], priority: int, prefix: str = "", limit: int = 600) -> None:
        for i in items:
            text = note(shorten_keeping(i.text, i.values, limit))
            lines.append(_Line(section, prefix + text, priority, i.order))

    def put_texts(section: str, texts: list[str], priority: int, start: int, limit: int = 300) -> None:
        lines.extend(_Line(section, note(_shown(t, limit)), priority, start + n) for n, t in enumerate(texts))

    put("## Constraints & Preferences", ex.current("constraint"), 1)
    user_facts = [i for i in ex.current("fact") if i.source != "assistant"]
    put("## Critical Context", user_facts, 2)
    recent = [scrub(r) for r in dedupe(ex.requests)[-3:]]
    new_work = recent if recent else []
    put_texts("### In Progress", dedupe([scrub(t) for t in [*ex.in_progress, *new_work]])[-6:], 3, 0)
    put("### Blocked", ex.current("question")[-5:], 4, _QUESTION, 300)
    put("### Blocked", ex.current("blocked")[-8:], 4, "", 300)
    put("## Critical Context", ex.superseded(), 4, SUPERSEDED, 300)
    put("## Key Decisions", ex.current("decision")[-10:], 5, "", 400)
    put("## Key Decisions", ex.current("conclusion")[-6:], 6, _CONCLUDED, 400)
    put("## Critical Context", [i for i in ex.current("fact") if i.source == "assistant"][-10:], 7, "", 300)
    steps = (
        [f"Continue from the latest request: {recent[-1]}"]
        if recent
        else [scrub(t) for t in ex.next_steps[-3:]]
    )
    put_texts("## Next Steps", steps, 5, 10_000)
    put("### Done", ex.current("done")[-30:], 8, "", 160)
    if focus:
        lines.append(_Line("## Critical Context", _FOCUS + _shown(focus, 200), 1, -1))
    lines.extend(_Line("## Critical Context", _PASTED + p, 9, -2) for p in dedupe(ex.pasted)[-3:])
    retired = ex.retired_files()
    for n, (label, sep) in enumerate(_LISTS):
        values = {"Files: ": ex.files, "Commands: ": ex.commands, "Identifiers: ": ex.identifiers}[label]
        current = [v for v in dedupe(values) if label == "Commands: " or v not in retired]
        kept = [_shown(v, 100) for v in current[-(20 if n != 1 else 8) :]]
        if kept:
            lines.append(_Line("## Critical Context", label + sep.join(f"`{v}`" for v in kept), 9, 10**9 + n))
    if retired:  # listed, so a path is never both gone from Files and unexplained
        old = ", ".join(f"`{_shown(v, 100)}`" for v in retired[-20:])
        lines.append(_Line("## Critical Context", f"{SUPERSEDED}{_RETIRED}{old}", 9, 10**9 + len(_LISTS)))
    return lines


def _compose(ex: Extraction, goal: str, chosen: list[_Line]) -> str:
    header = (
        f"{EXTRACTIVE_MARKER} extracted from {ex.messages} messages without an LLM; "
        "every item below is quoted or derived from the transcript."
    )
    bodies: dict[str, list[str]] = {h: [] for h in HEADINGS}
    for line in sorted(chosen, key=lambda c: c.order):
        bodies[line.section].append(f"- {line.text}")
    sections = {h: "\n".join(b) if b else "- (none recorded)" for h, b in bodies.items()}
    sections["# Conversation summary"] = header
    sections["## Goal"] = goal
    sections["## Progress"] = ""
    return "\n\n".join(f"{h}\n{sections[h]}".rstrip() for h in HEADINGS) + "\n"


def render(ex: Extraction, *, max_tokens: int, focus: str | None = None) -> str:
    """The skeleton summary of `ex`, most important items first, within `max_tokens` when possible.

    Below the cost of the bare skeleton and a shortened goal nothing more can go; the result is then
    that minimum (still a valid skeleton).
    """
    scrub, note = _scrubber(ex), _noter(ex)
    goal_text = scrub(ex.goal)
    if goal_text.strip(" .;") == "[superseded: see Critical Context]":
        goal_text = next((r for r in reversed([scrub(r) for r in ex.requests]) if "[superseded" not in r), "")
    goal_text = goal_text or "(no user request in the summarized part)"
    earlier = [
        f"- {_EARLIER_GOAL}{note(_shown(scrub(g), 200))}"
        for g in dedupe(ex.earlier_goals)[-2:]
        if g != ex.goal
    ]
    goal = "\n".join([note(_shown(goal_text, 600)), *earlier])
    base = _compose(ex, goal, [])
    limit = len(goal)
    while count_text(base) > max_tokens and limit > 40:  # the limit, not len(goal), always shrinks
        limit = max(limit // 2, 40)
        goal = note(_shown(goal_text, limit))
        base = _compose(ex, goal, [])
    budget = max_tokens - count_text(base)
    chosen: list[_Line] = []
    for line in sorted(_candidates(ex, focus), key=lambda c: (c.priority, -c.order)):
        cost = count_text(line.text) + 2
        if cost <= budget:
            chosen.append(line)
            budget -= cost
    text = _compose(ex, goal, chosen)
    while chosen and count_text(text) > max_tokens:  # token merges across lines: trim the least important
        chosen.sort(key=lambda c: (c.priority, -c.order))
        chosen.pop()
        text = _compose(ex, goal, chosen)
    return text
