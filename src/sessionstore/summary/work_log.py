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
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.boilerplate import clean
from sessionstore.summary.record import call_of, exit_code, failed
from sessionstore.summary.text import as_text, cut_chars, user_text

__all__ = ["HEADING", "Turn", "changed_files", "parse", "render", "turns"]

HEADING = "## Work so far"
_NOT_LISTED = re.compile(r"^- \(([\d,]+) earlier turns? not listed\)$")
_LIST = 6
"""Files or commands named per kind and turn; the rest are counted."""


@dataclass
class Turn:
    """One user turn's record."""

    request: str = ""
    read: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    answer: str = ""

    def line(self) -> str:
        pieces = [f'"{self.request}"' if self.request else "(continued)"]
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
            pieces.append(f'answered "{self.answer}"')
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


def turns(messages: Iterable[ModelMessage]) -> list[Turn]:
    """A `Turn` per user turn of `messages` (steps before the first prompt form a turn of their own)."""
    out: list[Turn] = []
    calls: dict[str, str] = {}
    commands: dict[str, str] = {}
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, UserPromptPart):
                    own = clean(user_text(part)).own
                    if own or not out:
                        out.append(Turn(request=cut_chars(own, 60)))
                elif isinstance(part, ToolReturnPart):
                    turn = out[-1] if out else _new(out)
                    name = calls.get(part.tool_call_id, part.tool_name)
                    command = commands.get(part.tool_call_id)
                    code = exit_code(part) if command is not None else None
                    if command is not None and code:
                        turn.commands = [f"{c} (exit {code})" if c == command else c for c in turn.commands]
                    elif failed(part):
                        turn.errors.append(f"{name}: {_first_line(as_text(part.content))}")
                elif isinstance(part, RetryPromptPart):
                    turn = out[-1] if out else _new(out)
                    turn.errors.append(f"retry: {_first_line(as_text(part.content))}")
        elif isinstance(msg, ModelResponse):
            turn = out[-1] if out else _new(out)
            texts = [p.content for p in msg.parts if isinstance(p, TextPart) and p.content.strip()]
            if texts:
                turn.answer = cut_chars(texts[-1], 120)
            for part in msg.parts:
                if isinstance(part, ToolCallPart):
                    _record(turn, part, calls, commands)
    return out


def _new(out: list[Turn]) -> Turn:
    out.append(Turn())
    return out[-1]


def _record(turn: Turn, part: ToolCallPart, calls: dict[str, str], commands: dict[str, str]) -> None:
    call = call_of(part)
    calls[part.tool_call_id] = call.tool
    turn.changed += call.changed
    if call.command is not None:
        shown = cut_chars(call.command, 80)
        turn.commands.append(shown)
        commands[part.tool_call_id] = shown
    elif call.read is not None:
        turn.read.append(call.read)
    elif not call.changed:
        turn.tools[call.tool] += 1


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
    `budget` tokens, with a count of the turns left out."""
    lines = [*previous, *(t.line() for t in new)]
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        need = count_text(line) + 1
        if used + need > budget - 12:
            break
        kept.append(line)
        used += need
    hidden += len(lines) - len(kept)
    note = [f"- ({hidden:,} earlier turn{'s' if hidden != 1 else ''} not listed)"] if hidden else []
    shown = note + kept[::-1]
    return "\n".join(shown) if shown else "- none"
