"""A summary's parts in order within its budget, and a previous summary read back into its parts.

Every tier-2 summary is: the skeleton (written by a model, or by offline.py from the record), then the
sections built mechanically (`## Work so far` offline only, `## Rules found in files`, `## What the
user said`), then one line saying that the store keeps every message the summary replaced and how to
read them. The user's words come last so that the latest thing the user said is the last thing the
summary says, whatever a model wrote above it.

Budget (`Budget.of`): the whole summary within `max_tokens` (full compaction gives a quarter of the
full level, at most `summary_max_tokens + summary_user_tokens`); the skeleton, work log and rules
within `summary_max_tokens`, lowered to a fifth of the whole at small windows (twice that when the
user's words leave the room); the user's words get what is left, up to `summary_user_tokens`.
A re-compaction reads the previous summary (element 0 of the messages) back with `read_previous`,
so its user words, work log, rules and corrections carry forward, merged with the new ones, never
quoted as text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import CompactionPart, ModelMessage

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import count_text
from sessionstore.summary import file_rules, user_words, work_log
from sessionstore.summary.corrections import Correction
from sessionstore.summary.record import walk
from sessionstore.summary.skeleton import ADDED, CRITICAL, GOAL, is_summary_request, section_body
from sessionstore.summary.text import shorten_tokens

__all__ = ["Budget", "Record", "compose", "read_previous", "recall_line", "record"]

_RECALL = "The store keeps every message this summary replaced"
_RECALL_COUNT = re.compile(rf"^{_RECALL} \(([\d,]+) so far\)", re.M)
_EARLIER = "#### Earlier checkpoint summary"
CORRECTED = re.compile(r"^- (.+?) is superseded: the user corrected it to (.+)\.$")
CHANGED = "- Files changed: "
_MIN_USER = 64


@dataclass(frozen=True)
class Budget:
    """Tokens for the whole summary, for the skeleton with the work log and rules, for user words."""

    total: int
    rest: int
    user: int

    @classmethod
    def of(cls, settings: Settings, max_tokens: int | None) -> Budget:
        total = max_tokens or settings.summary_max_tokens + settings.summary_user_tokens
        rest = min(settings.summary_max_tokens, max(total // 5, min(total, 200)))
        return cls(total, rest, settings.summary_user_tokens)


def recall_line(messages: int, recall: str | None) -> str:
    """The summary's last line: the store keeps what it replaced, and how to read it."""
    how = (
        f"`session show {recall}` prints the conversation as it stood before this compaction"
        if recall
        else "`session show NAME@SEQ` prints the conversation as it stood before a compaction"
    )
    return f"{_RECALL} ({messages:,} so far), word for word: {how}."


@dataclass
class Record:
    """What a summary is built from: the previous summary's parts and what the new messages add."""

    messages: int = 0
    goal: str = ""
    words: user_words.UserWords = field(default_factory=user_words.UserWords)
    new_words: list[user_words.Entry] = field(default_factory=list)
    work: list[str] = field(default_factory=list)
    hidden_turns: int = 0
    turns: list[work_log.Turn] = field(default_factory=list)
    rules: list[tuple[str, str]] = field(default_factory=list)
    new_rules: list[tuple[str, str]] = field(default_factory=list)
    corrections: list[Correction] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    foreign: str = ""
    """A previous summary this package did not write (imported, or another format), kept as text."""

    def latest_request(self) -> str:
        return (
            user_words.UserWords(entries=[*self.words.entries, *self.new_words]).latest_request() or self.goal
        )


def read_previous(text: str) -> Record:
    """A previous summary as a Record (no new messages yet)."""
    text = text.split(f"\n{_EARLIER}", 1)[0]  # tier 3 quotes earlier checkpoints after the newest
    rec = Record()
    count = _RECALL_COUNT.search(text)
    rec.messages = int(count.group(1).replace(",", "")) if count else 0
    if not any(f"\n{h}\n" in f"\n{text}\n" for h in ADDED):
        rec.foreign = text.strip()
        rec.messages = max(rec.messages, 1)
        return rec
    rec.goal = section_body(text, GOAL).split("\n", 1)[0].strip()
    rec.work, rec.hidden_turns = work_log.parse(section_body(text, work_log.HEADING))
    rec.rules = file_rules.parse(section_body(text, file_rules.HEADING))
    said = section_body(text, user_words.HEADING)
    said = said.split(f"\n{_RECALL}", 1)[0] if not said.startswith(_RECALL) else ""
    rec.words = user_words.parse(said)
    for line in section_body(text, CRITICAL).split("\n"):
        if found := CORRECTED.match(line.strip()):
            rec.corrections.append(Correction(found.group(1), found.group(2)))
        elif line.startswith(CHANGED):
            rec.changed += [p.strip("` ") for p in line[len(CHANGED) :].split(", ") if p.strip("` ")]
        elif line.startswith("> "):
            rec.foreign += line[2:] + "\n"
    return rec


def record(messages: Sequence[ModelMessage]) -> Record:
    """The Record of `messages`: a leading summary read back (`read_previous`), then the rest."""
    body = list(messages)
    rec = Record()
    if body and is_summary_request(body[0]):
        text = "\n".join(p.content for p in body[0].parts if isinstance(p, CompactionPart) and p.content)
        rec = read_previous(text) if text.strip() else rec
        body = body[1:]
    rec.messages += len(body)
    prompts, log, scanner = user_words.Prompts(), work_log.Log(), file_rules.Scanner()
    walk(body, prompts, log, scanner)  # one pass over the history for every section
    rec.new_words, rec.turns, rec.new_rules = prompts.entries, log.turns, scanner.found()
    rec.corrections += [c for e in rec.new_words for c in e.corrections]
    rec.changed = list(dict.fromkeys([*rec.changed, *work_log.changed_files(rec.turns)]))
    return rec


def foreign_lines(rec: Record, max_tokens: int) -> list[str]:
    """A foreign previous summary as quoted lines for Critical Context, within `max_tokens`."""
    if not rec.foreign.strip():
        return []
    kept = shorten_tokens(rec.foreign.strip(), max_tokens)
    return [f"> {line}" if line.strip() else ">" for line in kept.split("\n")]


def compose(skeleton: str, rec: Record, budget: Budget, *, recall: str | None, work: bool) -> str:
    """`skeleton` followed by the added sections and the last line, within `budget`.

    The rules found in files and the work log share what the skeleton leaves of `budget.rest`, plus,
    up to another `budget.rest`, what the user's words do not need of theirs (their whole cost, up to
    `budget.user`); the rules take half and the log the rest. The user's words then get what is left
    of the whole, up to `budget.user`: they are shortened and dropped (user_words.fit) only when that
    is less than they need."""
    last = recall_line(rec.messages, recall)
    used = count_text(skeleton) + count_text(last) + 30  # the added headings and blank lines
    words_need = min(rec.words.cost() + sum(e.cost for e in rec.new_words), budget.user)
    spare = min(max(budget.total - budget.rest - words_need, 0), budget.rest)
    room = max(budget.rest - used, 0) + spare
    rules = file_rules.render(rec.rules, rec.new_rules, room // 2 if work else room)
    used += count_text(rules)
    sections = [skeleton.rstrip()]
    if work:
        log = work_log.render(rec.work, rec.hidden_turns, rec.turns, max(room - count_text(rules), 0))
        used += count_text(log)
        sections.append(f"{work_log.HEADING}\n{log}")
    sections.append(f"{file_rules.HEADING}\n{rules}")
    words = max(min(budget.user, budget.total - used), _MIN_USER)
    said = user_words.fit(rec.words, rec.new_words, words).render() or "- none"
    sections.append(f"{user_words.HEADING}\n{said}")
    sections.append(last)
    return "\n\n".join(sections) + "\n"
