"""A readable transcript of pydantic-ai messages for `session show` (DESIGN §11).

One row per part: a role column (system, user, assistant, tool, summary) and the text. Tool calls read
as `name(arg="value", ...)`, tool results and thinking are shortened unless `full`, thinking is dimmed,
compaction summaries are marked, context a harness injected (an AGENTS.md, Codex's sandbox) is one
dimmed line naming it unless `full`. Every character a terminal would act on (ESC, BEL, NUL, ...) is
shown as an escape (`output.printable`). Parts are told apart by their `part_kind` string, so a part kind
added by a later pydantic-ai still prints (as its kind) instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..formats.injected import injected
from .output import Painter, plural, printable

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

ROLE_WIDTH = 10
KEEP_LINES = 3
"""Lines of a shortened tool result or thinking block that are shown."""
KEEP_CHARS = 300
"""Characters of each shown line of a shortened block (a single huge line is shortened too)."""
ARG_CHARS = 80
"""Characters of each tool-call argument value before it is cut (unless `full`)."""


def text_of(content: Any) -> str:
    """User-prompt or tool-return content as text: strings as they are, media as `[kind]`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(text_of(item) for item in content)
    kind = getattr(content, "kind", None)
    if isinstance(kind, str) and isinstance(url := getattr(content, "url", None), str):
        return f"[{kind}: {url}]"
    if isinstance(kind, str) and hasattr(content, "media_type"):
        return f"[{kind}: {content.media_type}]"
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


def lines_of(text: str) -> list[str]:
    """The lines of `text` without the blank lines around it (at least one line)."""
    return text.strip("\n").splitlines() or [""]


def shorten(text: str, full: bool) -> tuple[list[str], str | None]:
    """The lines to print and, when shortened, the note saying so."""
    lines = lines_of(text)
    if full:
        return lines, None
    kept = [line if len(line) <= KEEP_CHARS else line[:KEEP_CHARS] + "…" for line in lines[:KEEP_LINES]]
    if len(lines) > KEEP_LINES or kept != lines[:KEEP_LINES]:
        return kept, f"({plural(len(lines), 'line')}, shortened; --full shows all)"
    return kept, None


def format_call(name: str, args: dict[str, Any], full: bool) -> str:
    """`name(arg="value", n=3)`: values as JSON, each cut to ARG_CHARS unless `full`."""
    shown = []
    for key, value in args.items():
        text = json.dumps(value, ensure_ascii=False)
        if not full and len(text) > ARG_CHARS:
            text = text[:ARG_CHARS] + "…"
        shown.append(f"{key}={text}")
    return f"{name}({', '.join(shown)})"


def call_args(part: Any) -> dict[str, Any]:
    try:
        return part.args_as_dict()
    except Exception:  # arguments a model sent as invalid JSON: show them raw, never fail the transcript
        return {"args": part.args}


def _rows(message: ModelMessage, full: bool) -> Iterator[tuple[str, list[str], dict[str, Any]]]:
    """(role, lines, style) for each part of `message`."""
    instructions = getattr(message, "instructions", None)
    if isinstance(instructions, str) and instructions:
        yield "system", shorten(instructions, full)[0], {}
    for part in message.parts:
        kind = part.part_kind
        if kind in ("system-prompt", "user-prompt"):
            role = "system" if kind == "system-prompt" else "user"
            text = text_of(part.content)
            if not full and (what := injected(text)) is not None:  # an AGENTS.md, the sandbox: one line
                yield (
                    role,
                    [f"[{what}: {plural(len(lines_of(text)), 'line')}; --full shows it]"],
                    {"dim": True},
                )
            else:
                yield role, lines_of(text), {}
        elif kind == "text":
            yield "assistant", lines_of(part.content), {}
        elif kind == "thinking":
            if not part.content:  # encrypted or redacted reasoning: only the provider can read it
                yield "assistant", ["[thinking, not readable]"], {"dim": True}
                continue
            lines, note = shorten(part.content, full)
            yield "assistant", ["[thinking]", *lines, *([note] if note else [])], {"dim": True}
        elif kind in ("tool-call", "builtin-tool-call"):
            yield "assistant", [format_call(part.tool_name, call_args(part), full)], {"fg": "cyan"}
        elif kind in ("tool-return", "builtin-tool-return"):
            yield "tool", _tool_result(part, full), {}
        elif kind == "retry-prompt":
            text = part.content if isinstance(part.content, str) else text_of(part.content)
            lines, note = shorten(text, full)
            who = f"{part.tool_name} -> retry: " if part.tool_name else "retry: "
            yield "tool", [who + lines[0], *lines[1:], *([note] if note else [])], {"fg": "yellow"}
        elif kind == "retry-feedback":
            lines, note = shorten(text_of(part.content), full)
            yield "system", ["retry: " + lines[0], *lines[1:], *([note] if note else [])], {"fg": "yellow"}
        elif kind == "compaction":
            # Shown whole: the summary is what the model now knows of everything before it.
            text = part.content if part.content is not None else "(opaque provider summary)"
            yield "summary", ["[compaction summary]", *lines_of(text)], {"fg": "magenta"}
        else:
            yield "assistant" if message.kind == "response" else "user", [f"[{kind}]"], {"dim": True}


def _tool_result(part: Any, full: bool) -> list[str]:
    content = part.content
    text = content if isinstance(content, str) else text_of(content)
    lines, note = shorten(text, full)
    outcome = getattr(part, "outcome", "success")
    marker = "" if outcome in (None, "success") else f" [{outcome}]"
    head = f"{part.tool_name}{marker} -> "
    return [head + lines[0], *lines[1:], *([note] if note else [])]


def render(messages: Sequence[ModelMessage], paint: Painter, *, full: bool = False) -> list[str]:
    """The transcript lines of `messages`, a blank line between messages."""
    out: list[str] = []
    indent = " " * ROLE_WIDTH
    for index, message in enumerate(messages):
        if index:
            out.append("")
        previous = None
        for role, lines, style in _rows(message, full):
            # The role is printed once per run of parts, as in DESIGN §11's sketch.
            label = indent if role == previous else paint(role.ljust(ROLE_WIDTH), bold=True)
            previous = role
            # A newline inside a tool name or an argument key would break the column: split again;
            # then every piece is shown literally (`printable`): message text, tool names, arguments.
            lines = [printable(piece, tabs=True) for line in lines for piece in (line.splitlines() or [""])]
            for i, line in enumerate(lines):
                text = paint(line, **style) if style else line
                out.append(f"{label if i == 0 else indent} {text}".rstrip())
    return out
