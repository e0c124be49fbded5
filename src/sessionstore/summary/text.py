"""Text helpers shared by the summary and tier 3: part text, head+tail cuts that never split a value,
the transcript a model reads."""

from __future__ import annotations

import bisect
import re
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
from sessionstore.summary.values import quoted_spans

__all__ = ["as_text", "cut", "cut_chars", "render_transcript", "shorten_chars", "shorten_tokens", "user_text"]


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


_SPACE = re.compile(r"\s")


def _safe(text: str, at: int, spans: Sequence[tuple[int, int]], *, forward: bool) -> int:
    """The nearest whitespace to `at` (searching `forward` or back) where a cut may fall: inside no
    quoted span, and not between a number and the word next to it ("30 s", "Postgres 15", "March 3,
    2027"). A number, path or identifier holds no whitespace, so a cut there never splits one."""
    pos = min(max(at, 0), len(text))
    while 0 < pos < len(text):
        if forward:
            found = _SPACE.search(text, pos)
            if found is None:
                return len(text)
            pos = found.start()
        else:
            pos = max(text.rfind(" ", 0, pos + 1), text.rfind("\n", 0, pos + 1))
            if pos <= 0:
                return 0
        after = pos
        while after < len(text) and text[after].isspace():
            after += 1
        inside = bisect.bisect_right(spans, (pos, len(text) + 1)) - 1
        quoted = inside >= 0 and spans[inside][0] < pos < spans[inside][1]
        if not quoted and not text[pos - 1].isdigit() and (after == len(text) or not text[after].isdigit()):
            return pos
        pos += 1 if forward else -1
    return pos


def cut(text: str, head: int, tail: int) -> tuple[str, str] | None:
    """`text` as its first ~`head` and last ~`tail` characters, each cut at whitespace that splits no
    value (`_safe`; quoted strings from `values.quoted_spans`). None when the two would meet."""
    window = max(head, tail) + 400
    spans = (
        quoted_spans(text[: head + window])
        + [
            (a + len(text) - tail - window, b + len(text) - tail - window)
            for a, b in quoted_spans(text[max(len(text) - tail - window, 0) :])
        ]
        if len(text) > 2 * window
        else quoted_spans(text)
    )
    start = _safe(text, head, spans, forward=False)
    end = _safe(text, len(text) - tail, spans, forward=True)
    if start <= 0 or end >= len(text) or end - start < 20:
        return None
    return text[:start].rstrip(), text[end:].lstrip()


def cut_chars(text: str, limit: int) -> str:
    """`text` on one line within about `limit` characters: head and tail (`cut`) around "[...]"."""
    if len(text) > 4 * limit:  # only its ends can show: never flatten all of a long text
        text = f"{text[: 2 * limit]} {text[-2 * limit :]}"
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    pieces = cut(flat, limit * 2 // 3, limit // 3)
    return flat if pieces is None else f"{pieces[0]} [...] {pieces[1]}"


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
