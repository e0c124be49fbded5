"""`## Work so far`: what happened in each user turn, built from the structured record alone.

One line per user turn: the first words of its request, the files it read and changed and the
commands it ran (record.py: tool-call arguments, never prose), each failure with the first line of
its return, and the turn's outcome: the assistant's final text, shortened. Lines are kept newest
first within the budget; a previous summary's lines come before the new ones, so the log reads in
order and the oldest turns are the ones left out ("N earlier turns not listed").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.boilerplate import Cleaned
from sessionstore.summary.record import Call, exit_code, failed, walk
from sessionstore.summary.text import as_text, cut_chars

__all__ = ["HEADING", "Log", "Turn", "changed_files", "parse", "render", "turns"]

HEADING = "## Work so far"
_NOT_LISTED = re.compile(r"^- \(([\d,]+) earlier turns? not listed\)$")
_LIST = 6
"""Files or commands named per kind and turn; the rest are counted."""


@dataclass
class Turn:
    """One user turn's record."""

    request: str = ""
    """The person's own words that opened the turn (shortened when the line is written)."""
    read: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    answer: str = ""
    """The assistant's final text in the turn (shortened when the line is written)."""

    def line(self) -> str:
        pieces = [f'"{cut_chars(self.request, 60)}"' if self.request else "(continued)"]
        for label, names in (("read", self.read), ("changed", self.changed)):
            if names:
                pieces.append(f"{label} {_names(list(dict.fromkeys(names)))}")
        if self.commands:
            pieces.append(f"ran {_names(self.commands, quote=True)}")
        other = [f"{tool} x{n}" if n > 1 else tool for tool, n in self.tools.items()]
        if other:
            more = f" (+{len(other) - _LIST})" if len(other) > _LIST else ""
            pieces.append("called " + ", ".join(other[:_LIST]) + more)
        if self.errors:
            pieces.append("failed: " + "; ".join(self.errors[-3:]))
        if self.answer:
            pieces.append(f'answered "{cut_chars(self.answer, 120)}"')
        return "- " + "; ".join(pieces)


def _short(path: str) -> str:
    """A long path as its last two components ("…/core/adapter.ts"): enough to tell files apart."""
    parts = path.rstrip("/").split("/")
    return path if len(path) <= 40 or len(parts) <= 3 else "…/" + "/".join(parts[-2:])


def _names(names: list[str], *, quote: bool = False) -> str:
    shown = [f"`{cut_chars(n, 80) if quote else _short(n)}`" for n in names[:_LIST]]
    more = f" (+{len(names) - _LIST} more)" if len(names) > _LIST else ""
    return ", ".join(shown) + more


def _first_line(text: str, limit: int = 120) -> str:
    for line in text.split("\n", 20):
        if line.strip():
            return cut_chars(line.strip(), limit)
    return ""


class Log:
    """The turns of a history, built as `record.walk` feeds it (a `record.Reader`)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._tools: dict[str, str] = {}
        self._commands: dict[str, str] = {}

    def _turn(self) -> Turn:
        if not self.turns:
            self.turns.append(Turn())  # steps before the first prompt: a turn of their own
        return self.turns[-1]

    def prompt(self, cleaned: Cleaned) -> None:
        if cleaned.own or not self.turns:
            self.turns.append(Turn(request=cleaned.own))

    def returned(self, part: ToolReturnPart) -> None:
        command = self._commands.get(part.tool_call_id)
        code = exit_code(part) if command is not None else None
        if command is not None and code:
            turn = self._turn()
            turn.commands = [f"{c} (exit {code})" if c == command else c for c in turn.commands]
        elif failed(part, command=False):
            name = self._tools.get(part.tool_call_id, part.tool_name)
            self._turn().errors.append(f"{name}: {_first_line(as_text(part.content))}")

    def retried(self, part: RetryFeedbackPart) -> None:
        self._turn().errors.append(f"retry: {_first_line(as_text(part.content))}")

    def response(self, msg: ModelResponse, calls: list[tuple[ToolCallPart, Call]]) -> None:
        turn = self._turn()
        for part in reversed(msg.parts):
            if isinstance(part, TextPart) and part.content and not part.content.isspace():  # no copy
                turn.answer = part.content
                break
        for part, call in calls:
            self._tools[part.tool_call_id] = call.tool
            turn.changed += call.changed
            if call.command is not None:
                turn.commands.append(call.command)
                self._commands[part.tool_call_id] = call.command
            elif call.read is not None:
                turn.read.append(call.read)
            elif not call.changed:
                turn.tools[call.tool] += 1


def turns(messages: Iterable[ModelMessage]) -> list[Turn]:
    """A `Turn` per user turn of `messages` (steps before the first prompt form a turn of their own)."""
    log = Log()
    walk(messages, log)
    return log.turns


def changed_files(log: Iterable[Turn]) -> list[str]:
    """Every file the turns changed, in order of first change."""
    return list(dict.fromkeys(path for turn in log for path in turn.changed))


def parse(body: str) -> tuple[list[str], int]:
    """A previous summary's log: its turn lines, and how many earlier turns it did not list."""
    lines, hidden = [], 0
    for line in body.split("\n"):
        found = _NOT_LISTED.match(line.strip())
        if found:
            hidden += int(found.group(1).replace(",", ""))
        elif line.startswith("- "):
            lines.append(line)
    return lines, hidden


def render(previous: list[str], hidden: int, new: list[Turn], budget: int) -> str:
    """The section body: `previous` lines then the new turns' lines, newest kept first within
    `budget` tokens (a line is written only when it is reached), with a count of the turns left out."""
    kept: list[str] = []
    used = 12  # the note on turns left out
    total = len(previous) + len(new)
    for n in range(total - 1, -1, -1):
        line = previous[n] if n < len(previous) else new[n - len(previous)].line()
        need = count_text(line) + 1
        if used + need > budget:
            break
        kept.append(line)
        used += need
    hidden += total - len(kept)
    note = [f"- ({hidden:,} earlier turn{'s' if hidden != 1 else ''} not listed)"] if hidden else []
    shown = note + kept[::-1]
    return "\n".join(shown) if shown else "- none"
