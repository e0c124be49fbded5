"""Text helpers shared by the summarizers and tier 3: part text, head+tail shortening, transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.thresholds import over_threshold
from sessionstore.accounting.tokens import count_text

__all__ = [
    "as_text",
    "dedupe",
    "render_transcript",
    "shorten_chars",
    "shorten_keeping",
    "shorten_line",
    "shorten_tokens",
    "user_text",
]


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


def as_text(value: Any) -> str:
    """A string as-is, None as '', anything else as compact JSON (how structured data reaches a model)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return repr(value)


def user_text(part: UserPromptPart) -> str:
    """The text of a user prompt; media items become a short placeholder."""
    if isinstance(part.content, str):
        return part.content
    pieces: list[str] = []
    for item in part.content:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(getattr(item, "content", None), str):
            pieces.append(item.content)
        else:
            pieces.append(f"[{getattr(item, 'kind', type(item).__name__)}]")
    return "\n".join(pieces)


def shorten_chars(text: str, limit: int, *, inline: bool = False) -> str:
    """Head and tail of `text` within about `limit` characters, with a marker saying how much went.

    `inline` puts the marker on the same line (for one-line bullets); otherwise it stands on its own.
    """
    if len(text) <= limit or (inline and len(text) - limit < 40):  # eliding a few chars only adds noise
        return text
    head = max(limit * 2 // 3, 0)
    tail = max(limit - head, 0)
    cut = len(text) - head - tail
    sep = " " if inline else "\n"
    end = text[len(text) - tail :] if tail else ""
    return f"{text[:head]}{sep}[... {cut} chars elided ...]{sep}{end}"


_SLACK = 40
"""`shorten_chars(inline=True)` leaves a text this far over its limit as it is."""


def shorten_line(text: str, found: Sequence[str], limit: int) -> str:
    """`text` (one line) within about `limit` characters: its head and tail with the middle elided,
    cut only between words and never inside one of its values `found` (a cut mid-value,
    "0.internal:1124" of "amber-100.internal:1124", would read as a value nobody gave), and a tail
    that starts at a value keeps the "not" before it (the old value of "X, not Y" must not read as
    current). For verbatim texts (requests, pasted blocks, tool arguments), where `shorten_keeping`
    would drop the words between values."""
    if len(text) <= limit or len(text) - limit < _SLACK:  # eliding a few chars only adds noise
        return text
    spans = []
    for value in found:
        at = text.find(value)
        while at >= 0:
            spans.append((at, at + len(value)))
            at = text.find(value, at + 1)
    cut = limit * 2 // 3
    head = text.rfind(" ", 0, cut + 1)
    head = head if head > 0 else cut
    for a, b in spans:
        head = a if a < head < b else head
    tail = text.find(" ", len(text) - (limit - cut))
    tail = tail + 1 if 0 <= tail < len(text) - 1 else len(text) - (limit - cut)
    for a, b in spans:
        tail = a if a < tail < b else tail
    if text[:tail].rstrip().rsplit(" ", 1)[-1].lower() == "not":
        tail = text.rfind(" ", 0, tail - 1) + 1
    if tail <= head:
        return text
    return f"{text[:head].rstrip()} [... {tail - head} chars elided ...] {text[tail:]}"


def shorten_keeping(text: str, found: Sequence[str], limit: int) -> str:
    """`text` on one line within about `limit` characters, never cutting through one of its values
    `found`: head, tail and the words around each value are kept, the rest elided. The one way a
    summary line is shortened (a rule as it is extracted, any item to its section's length); a text
    with no values is `shorten_chars`'s head and tail."""
    text = " ".join(text.split())
    if len(text) <= limit + _SLACK:
        return text
    if not found:
        return shorten_chars(text, limit, inline=True)
    spans: list[tuple[int, int]] = []
    start = 0
    for value in found:
        at = text.find(value, start)
        if at < 0:
            at = text.find(value)
        if at >= 0:
            spans.append((at, at + len(value)))
            start = at + len(value)
    for around in (40, 0):
        head, tail = (limit // 4, limit // 6) if around else (limit // 6, limit // 10)
        keep = [(0, head), (len(text) - tail, len(text))] + [(a - around, b + around) for a, b in spans]
        merged: list[list[int]] = []
        for a, b in sorted((max(a, 0), min(b, len(text))) for a, b in keep):
            a = text.rfind(" ", 0, a) + 1 if a > 0 else 0  # whole words at the window edges
            b = len(text) if b >= len(text) or text.find(" ", b) < 0 else text.find(" ", b)
            for va, vb in spans:  # a window edge never falls inside a value
                a = va if va < a < vb else a
                b = vb if va < b < vb else b
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        pieces = [text[merged[0][0] : merged[0][1]].strip()]
        for a, b in merged[1:]:
            pieces.append(f"[...] {text[a:b].strip()}")  # no count: a number here would read as a value
        out = " ".join(pieces)
        if len(out) <= limit + _SLACK:
            break
    return out


def shorten_tokens(text: str, max_tokens: int) -> str:
    """Head and tail of `text` within `max_tokens` (cl100k), with a marker; `text` if it already fits.

    Starts from a 3-chars-per-token guess and shrinks by a quarter until it fits, so dense text (code,
    CJK, emoji) converges too. With a budget below the marker's own cost the result is ''.
    """
    if not over_threshold(count_text(text), max_tokens):
        return text
    limit = min(len(text), max(max_tokens * 3, 1))
    while limit > 0:
        candidate = shorten_chars(text, limit)
        if not over_threshold(count_text(candidate), max_tokens):
            return candidate
        limit = limit * 3 // 4
    return ""


def render_transcript(messages: Sequence[ModelMessage], *, max_part_chars: int = 4000) -> str:
    """A plain-text transcript for a summarizer: one labelled block per part, long parts shortened.

    The closing `</transcript>` tag is neutralized inside content so a transcript cannot end its own
    data block and smuggle instructions into the prompt around it.
    """
    lines: list[str] = []
    for msg in messages:
        request = isinstance(msg, ModelRequest)
        for part in msg.parts:
            label, body = _label(part, request)
            if label is None:
                continue
            body = shorten_chars(body, max_part_chars).replace("</transcript>", "</ transcript>")
            lines.append(f"[{label}] {body}")
    return "\n".join(lines)


def _label(part: Any, request: bool) -> tuple[str | None, str]:
    if isinstance(part, UserPromptPart):
        return "user", user_text(part)
    if isinstance(part, SystemPromptPart):
        return "system", part.content
    if isinstance(part, CompactionPart):
        return ("earlier summary" if request else "provider summary"), part.content or ""
    if isinstance(part, TextPart):
        return "assistant", part.content
    if isinstance(part, ThinkingPart):
        return "assistant thinking", part.content
    if isinstance(part, ToolCallPart):
        return f"tool call {part.tool_name} id={part.tool_call_id}", as_text(part.args)
    if isinstance(part, ToolReturnPart):
        return f"tool result {part.tool_name} id={part.tool_call_id} {part.outcome}", as_text(part.content)
    if isinstance(part, RetryFeedbackPart):
        return "retry feedback", as_text(part.content)
    kind = getattr(part, "part_kind", "")
    if "tool" in kind and hasattr(part, "tool_name"):
        payload = getattr(part, "args", None) if "call" in kind else getattr(part, "content", None)
        return f"{kind} {part.tool_name}", as_text(payload)
    return None, ""


def dedupe(items: Sequence[str]) -> list[str]:
    """`items` without blanks and repeats, first occurrence kept, order kept."""
    out: dict[str, None] = {}
    for item in items:
        if item.strip():
            out.setdefault(item.strip(), None)
    return list(out)
