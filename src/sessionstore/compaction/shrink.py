"""Hard shortening for tier 3: parts and summaries cut head+tail to a token cap, with a marker.

Only content the model reads is shortened, and always into a shape pydantic-ai still accepts: tool-call
arguments stay a dict (`{"elided_args": ...}`), tool and retry content become a string. Typed
capability parts, provider-native parts and media are left as they are; tier 3's last resort rebuilds
the final request from its text when those alone are too big.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise
from typing import Any

from pydantic_ai.messages import (
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
from sessionstore.accounting.tokens import count_text, estimate_part
from sessionstore.summary.skeleton import heading_lines
from sessionstore.summary.text import as_text, shorten_tokens, user_text

__all__ = ["shrink_message", "shrink_part", "shrink_summary"]

_TEXT_PARTS = (SystemPromptPart, TextPart, ThinkingPart)


def _with_text(part: Any, text: str) -> Any:
    """`part` with its readable payload replaced by `text`, or None when it has no shortenable payload."""
    kind = type(part)
    if kind in _TEXT_PARTS:
        return dataclasses.replace(part, content=text)
    if kind is UserPromptPart:
        return dataclasses.replace(part, content=text)
    if kind is ToolCallPart:
        return dataclasses.replace(part, args={"elided_args": text})
    if kind in (ToolReturnPart, RetryFeedbackPart):
        return dataclasses.replace(part, content=text)
    return None


def _payload(part: Any) -> str:
    if isinstance(part, UserPromptPart):
        return user_text(part)
    if isinstance(part, ToolCallPart):
        return as_text(part.args)
    return as_text(part.content)


def shrink_part(part: Any, cap: int) -> Any:
    """`part` itself when it costs at most `cap` tokens, else a head+tail shortened copy.

    The copy fits `cap` unless the part's fixed cost (overhead, tool name) alone exceeds it; parts that
    cannot be shortened safely are returned unchanged.
    """
    if not over_threshold(estimate_part(part), cap):
        return part
    text = _payload(part)
    if _with_text(part, "") is None:
        return part
    allowance = max(cap - (estimate_part(part) - count_text(text)), 0)
    while True:
        candidate = _with_text(part, shorten_tokens(text, allowance))
        if allowance == 0 or not over_threshold(estimate_part(candidate), cap):
            return candidate
        allowance //= 2


def shrink_message(msg: ModelMessage, cap: int) -> ModelMessage:
    """`msg` with every part (and a request's instructions) shortened to `cap` tokens; same object if
    nothing changed."""
    parts = [shrink_part(p, cap) for p in msg.parts]
    changed = any(new is not old for new, old in zip(parts, msg.parts, strict=True))
    instructions = msg.instructions if isinstance(msg, ModelRequest) else None
    if instructions and over_threshold(count_text(instructions), cap):
        return dataclasses.replace(msg, parts=parts, instructions=shorten_tokens(instructions, cap))
    return dataclasses.replace(msg, parts=parts) if changed else msg


def shrink_summary(text: str, max_tokens: int) -> str:
    """`text` within `max_tokens`, keeping every skeleton heading and shortening the sections between.

    Each section body gets an equal share; shares halve until the whole fits. A section left with no
    room keeps a one-character body so the Goal stays non-empty. If even the bare headings do not fit,
    the result is the first heading line alone (shortened), the smallest meaningful summary.
    """
    if not over_threshold(count_text(text), max_tokens):
        return text
    lines = text.splitlines()
    found = heading_lines(text)
    if not found:
        return shorten_tokens(text, max_tokens)
    bounds = [line for line, _ in found] + [len(lines)]
    preamble = "\n".join(lines[: bounds[0]]).strip()
    sections = [(lines[a], "\n".join(lines[a + 1 : b]).strip()) for a, b in pairwise(bounds)]
    bare = "\n".join(h for h, _ in sections)
    share = max((max_tokens - count_text(bare)) // (len(sections) + 1), 0)
    while share > 0:
        pieces = [shorten_tokens(preamble, share)] if preamble else []
        for heading, body in sections:
            pieces.append(heading + "\n" + (shorten_tokens(body, share) or "-") if body else heading)
        candidate = "\n\n".join(pieces) + "\n"
        if not over_threshold(count_text(candidate), max_tokens):
            return candidate
        share //= 2
    minimal = "\n".join(f"{h}\n-" if body else h for h, body in sections) + "\n"
    if not over_threshold(count_text(minimal), max_tokens):
        return minimal
    return shorten_tokens(sections[0][0], max_tokens)
