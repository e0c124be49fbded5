"""The text a stored message shows a reader, part by part: what `session search`, `session diff`,
titles and `Session.recall` look in.

Blobs are JSONL of pydantic-ai messages, so a message is one line and `orjson` turns it into plain
dicts: no pydantic-ai import and no validation on this path. What counts, per message part:

- user prompts, assistant text, thinking and system prompts (`content`),
- tool calls: the tool's arguments as JSON text (`args`),
- tool returns and retries: their output (`content`, as JSON text when it is not a string),
- a request's `instructions` (kind `instructions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["ROLES", "PartText", "part_texts"]

ROLES = ("user", "assistant", "tool", "system", "summary")
_ROLE_OF_KIND = {
    "user-prompt": "user",
    "system-prompt": "system",
    "text": "assistant",
    "thinking": "assistant",
    "tool-call": "assistant",
    "builtin-tool-call": "assistant",
    "tool-return": "tool",
    "builtin-tool-return": "tool",
    "retry-prompt": "tool",
    "retry-feedback": "system",
    "compaction": "summary",
}


@dataclass(frozen=True)
class PartText:
    """One searchable piece of a message: who said it, the tool it concerns (if any), the text."""

    role: str
    kind: str
    tool: str | None
    text: str


def _as_text(value: Any) -> str:
    """Searchable text of a content or argument value: strings as they are (never JSON-escaped, so a
    quote or a newline matches itself), mappings as `key: value` lines, media as `[kind: url]`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("kind"), str) and "url" in value:
            return f"[{value['kind']}: {value['url']}]"  # media: its kind and where, never its bytes
        return "\n".join(f"{k}: {_as_text(v)}" for k, v in value.items())
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def part_texts(message: dict[str, Any]) -> Iterator[PartText]:
    """The searchable parts of one message as stored (a dict from the blob's JSON line).

    Part kinds are told apart by their `part_kind` string, so a kind a later pydantic-ai adds is
    searched by its content rather than failing.
    """
    instructions = message.get("instructions")
    if isinstance(instructions, str) and instructions:
        yield PartText("system", "instructions", None, instructions)
    for part in message.get("parts") or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("part_kind", "")
        role = _ROLE_OF_KIND.get(kind) or ("assistant" if message.get("kind") == "response" else "user")
        tool = part.get("tool_name") if isinstance(part.get("tool_name"), str) else None
        if kind in ("tool-call", "builtin-tool-call"):
            args = part.get("args")
            yield PartText(role, kind, tool, args if isinstance(args, str) else _as_text(args or {}))
        else:
            content = part.get("content")
            if content is not None:
                yield PartText(role, kind, tool, _as_text(content))
