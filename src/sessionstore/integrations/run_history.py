"""How a run's messages line up with the session's: the history it was given, and the ends pydantic-ai
leaves open.

- `extension_of`: a run must start from the session's history, or from that history plus messages the
  session has not seen yet (what a caller kept from an earlier run, a repair pydantic-ai made at the
  start of this one). Equal means equal in content, not the same objects: a history deserialized
  from the app's own database is the session's history. Content is the stored JSON of a message,
  its timestamps aside (never sent to a model, and a copy made elsewhere carries its own).
- `close_streamed_final`: `run_stream` ends at the first final result and adds the returns of that
  response's tool calls only to the caller's result, not to the run's own history that a capability
  sees; this builds the same request pydantic-ai builds there, so the session never keeps a tool call
  without its return (the next `run` would refuse it: "unprocessed tool calls").
- `close_dangling`: a run stopped early (`iter` left at a tool call, a cancelled stream) leaves calls
  no tool will answer; pydantic-ai's own `repair_messages` closes them as interrupted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)

from ..plumbing import codec
from ..porcelain.importing.reimport import fingerprints

__all__ = [
    "FINAL_RESULT_PROCESSED",
    "OUTPUT_SKIPPED",
    "TOOL_SKIPPED",
    "close_dangling",
    "close_streamed_final",
    "extension_of",
    "open_calls",
    "same_content",
    "subtract_usage",
    "usage_fields",
]

FINAL_RESULT_PROCESSED = "Final result processed."
OUTPUT_SKIPPED = "Output tool not used - a final result was already processed."
TOOL_SKIPPED = "Tool not executed - a final result was already processed."
"""The status returns pydantic-ai 2.68 writes for the calls of a streamed final response (its
`_tool_execution` constants, which it does not export; tests/integrations/test_run_shapes.py compares
what is stored with what `run_stream` returns, so a change in pydantic-ai shows there)."""


def same_content(a: ModelMessage, b: ModelMessage) -> bool:
    """True when `a` and `b` are the same message: the same object, the same parts (pydantic-ai
    re-creates a request around the stored parts when it resumes), or the same hash of their stored
    JSON with timestamps aside (`reimport.fingerprints`, as a re-import compares)."""
    if a is b or (a.kind == b.kind and a.parts is b.parts):
        return True
    if a.kind != b.kind or len(a.parts) != len(b.parts):
        return False
    ours, theirs = fingerprints(codec.encode_unchecked([a, b]))  # the import's comparison (reimport)
    return ours == theirs


def _same_parts(ours: list[Any], theirs: list[Any]) -> bool:
    if len(ours) != len(theirs):
        return False
    return all(
        p is q or same_content(ModelRequest(parts=[p]), ModelRequest(parts=[q]))
        for p, q in zip(ours, theirs, strict=True)
    )


def _groups(messages: Sequence[ModelMessage]) -> list[tuple[ModelMessage, list[Any], int]]:
    """(first message, parts, start index) of each response and of each run of adjacent requests:
    pydantic-ai merges adjacent requests of a history it is given (a summary request and the user
    request after it become one), so requests are compared by the parts of such a run."""
    out: list[tuple[ModelMessage, list[Any], int]] = []
    for i, msg in enumerate(messages):
        if isinstance(msg, ModelRequest) and out and isinstance(out[-1][0], ModelRequest):
            out[-1][1].extend(msg.parts)
        else:
            out.append((msg, list(msg.parts), i))
    return out


def extension_of(stored: Sequence[ModelMessage], given: Sequence[ModelMessage]) -> int | None:
    """Where the session's history ends in `given` (the index of the first message it does not
    hold) when `given` starts with it, equal in content (`same_content`, adjacent requests compared
    by their parts); None when it does not. Cheap when `given` is the session's own list: identical
    objects are never serialized."""
    if len(given) >= len(stored) and all(a is b for a, b in zip(stored, given, strict=False)):
        return len(stored)
    if not stored:
        return 0
    ours, theirs = _groups(stored), _groups(given)
    if len(theirs) < len(ours):
        return None
    for (a, a_parts, _), (b, b_parts, _) in zip(ours[:-1], theirs, strict=False):
        if isinstance(a, ModelRequest) != isinstance(b, ModelRequest):
            return None
        if not (_same_parts(a_parts, b_parts) if isinstance(a, ModelRequest) else same_content(a, b)):
            return None
    (a, a_parts, _), (b, b_parts, start) = ours[-1], theirs[len(ours) - 1]
    if not isinstance(a, ModelRequest):
        return start + 1 if not isinstance(b, ModelRequest) and same_content(a, b) else None
    # The session's last requests may be followed, in `given`, by more requests of the same run:
    # the session's history ends where their parts do, at a message boundary.
    if not isinstance(b, ModelRequest) or not _same_parts(a_parts, b_parts[: len(a_parts)]):
        return None
    end, seen = start, 0
    while seen < len(a_parts):
        seen += len(given[end].parts)
        end += 1
    return end if seen == len(a_parts) else None


def first_difference(stored: Sequence[ModelMessage], given: Sequence[ModelMessage]) -> str:
    """Where `given` stops following `stored`, in words, for the refusal."""
    if len(given) < len(stored):
        return f"it has {len(given)} messages, the session {len(stored)}"
    for i, (ours, theirs) in enumerate(zip(stored, given, strict=False)):
        if not same_content(ours, theirs):
            return f"message {i} differs from the session's"
    return "it differs from the session's"


def open_calls(messages: Sequence[ModelMessage]) -> list[ToolCallPart]:
    """The tool calls of the newest response that no later message answers (oldest first)."""
    for index in range(len(messages) - 1, -1, -1):
        response = messages[index]
        if isinstance(response, ModelResponse):
            answered = {
                p.tool_call_id
                for m in messages[index + 1 :]
                for p in m.parts
                if getattr(p, "tool_call_id", None) and p.part_kind != "tool-call"
            }
            return [c for c in response.tool_calls if c.tool_call_id not in answered]
    return []


def close_streamed_final(
    response: ModelResponse,
    *,
    output_tools: frozenset[str],
    allow_text: bool,
    executed: Mapping[str, tuple[Any, str | None]],
) -> ModelRequest | None:
    """The request `run_stream` appends to the caller's messages after a streamed final response.

    The final result is the response's first text part (when text is an output) or first output-tool
    call, as pydantic-ai's stream picks it. Its call (if a tool) returns `FINAL_RESULT_PROCESSED`,
    other output calls `OUTPUT_SKIPPED`; function tools the run executed after the stream
    (`executed`: call id -> (result, tool kind), seen by the capability's tool hook) return their
    result as pydantic-ai renders a plain or `ToolReturn` result, in the order the model made the
    calls; the others return `TOOL_SKIPPED`, after the rest (the `'early'` end strategy). None when
    the response has no tool call."""
    calls = response.tool_calls
    if not calls:
        return None
    winner = None
    for part in response.parts:
        if (isinstance(part, TextPart) and allow_text) or (
            isinstance(part, ToolCallPart) and part.tool_name in output_tools
        ):
            winner = part
            break
    done: list[ModelRequestPart] = []
    skipped: list[ModelRequestPart] = []
    extra: list[ModelRequestPart] = []
    for call in calls:
        if call.tool_name in output_tools:
            status = FINAL_RESULT_PROCESSED if call is winner else OUTPUT_SKIPPED
            done.append(ToolReturnPart(call.tool_name, status, tool_call_id=call.tool_call_id))
        elif call.tool_call_id in executed:
            result, kind = executed[call.tool_call_id]
            ret = result if isinstance(result, ToolReturn) else ToolReturn(return_value=result)
            done.append(
                ToolReturnPart(
                    call.tool_name,
                    ret.return_value,
                    tool_call_id=call.tool_call_id,
                    metadata=ret.metadata,
                    tool_kind=kind,
                )
            )
            if ret.content:
                extra.append(UserPromptPart(ret.content))
        else:
            skipped.append(ToolReturnPart(call.tool_name, TOOL_SKIPPED, tool_call_id=call.tool_call_id))
    return ModelRequest(
        [*done, *skipped, *extra], run_id=response.run_id, conversation_id=response.conversation_id
    )


def close_dangling(context: Sequence[ModelMessage], tail: Sequence[ModelMessage]) -> list[ModelMessage]:
    """`tail` (messages after `context`) with every tool call left open closed the way pydantic-ai's
    `repair_messages` closes it (a return marked interrupted). `context` ends with the newest stored
    response, whose calls the tail may still owe; it is never changed."""
    start = next((i for i in range(len(context) - 1, -1, -1) if isinstance(context[i], ModelResponse)), None)
    head = list(context[start:]) if start is not None else []
    repaired = repair_messages([*head, *tail])
    if head and repaired[: len(head)] != head:  # the stored part moved: keep the tail as it was
        return list(tail)
    return repaired[len(head) :]


def usage_fields(usage: Any) -> dict[str, Any]:
    """A pydantic-ai usage object (or mapping) as a plain dict."""
    if usage is None:
        return {}
    if dataclasses.is_dataclass(usage) and not isinstance(usage, type):
        return dataclasses.asdict(usage)
    return dict(usage)


def subtract_usage(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """`now - before` field by field (nested `details` too), keeping only what is non-zero."""
    out: dict[str, Any] = {}
    for key, value in now.items():
        prior = before.get(key)
        if isinstance(value, dict):
            inner = subtract_usage(value, prior if isinstance(prior, dict) else {})
            if inner:
                out[key] = inner
        elif isinstance(value, int | float) and not isinstance(value, bool):
            diff = value - (prior if isinstance(prior, int | float) else 0)
            if diff:
                out[key] = diff
    return out
