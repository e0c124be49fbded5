"""OpenAI chat-completions messages -> pydantic-ai messages (pure conversion, no store).

Accepted shapes (a JSON document):
- a list of chat messages: `[{"role": "system"|"developer"|"user"|"assistant"|"tool", "content",
  "tool_calls", "tool_call_id", "name"}, ...]`, as the API's `messages` parameter takes them;
- an object holding such a list under `messages` (a request body) or `traj` (a tau-bench record);
- a list of such objects (a tau-bench results file: one conversation per record). Each becomes its
  own transcript, named `<file stem>-<task_id or index>`.

Mapping: system and developer messages become `SystemPromptPart`s, user messages `UserPromptPart`s
(text parts joined; an image part as its URL, since the bytes are not in the file), assistant content
a `TextPart` and each tool call a `ToolCallPart` (arguments kept as the JSON string the model sent),
tool messages `ToolReturnPart`s named from their call. A call id the file reuses for a later call
(tau-bench does) is made unique (`<id>~<n>`), and a tool message answers the newest call of its id,
so no result is dropped as a duplicate. Consecutive system/user messages form one
request, consecutive tool results another; a user message after tool results starts a new request
(so it starts a turn). Tool pairs are then repaired and split into turns as for every foreign format
(`build_transcript`). The file carries no times: messages are stamped with the import time.
"""

from __future__ import annotations

from itertools import chain, count
from pathlib import Path
from typing import Any

import orjson
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..errors import ImportFormatError
from .common import ImportedTranscript, as_str, build_transcript, read_text

FORMAT = "openai-chat"
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_LISTS = ("messages", "traj")


def _is_chat(item: object) -> bool:
    return isinstance(item, dict) and item.get("role") in ROLES


def _conversation(item: object) -> list[Any] | None:
    """The chat message list `item` holds (itself, or under `messages`/`traj`), else None."""
    if isinstance(item, list) and item and all(_is_chat(m) for m in item):
        return item
    if isinstance(item, dict):
        for key in _LISTS:
            value = item.get(key)
            if isinstance(value, list) and value and all(_is_chat(m) for m in value):
                return value
    return None


def conversations(data: object) -> list[tuple[str | None, list[Any]]] | None:
    """(label, chat messages) of every conversation in a parsed document, or None when it is not this
    format. The label is a record's `task_id` (or its index) when the document holds many; a task_id
    seen before gets `.<trial>` (tau-bench runs each task several times) or `.<n>`, so labels, and
    the session names made from them, are unique within the document."""
    if (single := _conversation(data)) is not None:
        return [(None, single)]
    if isinstance(data, list) and data and all(_conversation(r) is not None for r in data):
        out = []
        seen: set[str] = set()
        for i, record in enumerate(data):
            task = record.get("task_id") if isinstance(record, dict) else None
            label = str(task) if _is_id(task) else str(i)
            if label in seen:
                trial = record.get("trial") if isinstance(record, dict) else None
                tries = chain([trial] if _is_id(trial) else [], count(1))
                label = next(f"{label}.{t}" for t in tries if f"{label}.{t}" not in seen)
            seen.add(label)
            out.append((label, _conversation(record) or []))
        return out
    return None


def _is_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("image_url"), dict):
                pieces.append(f"[image: {part['image_url'].get('url', '')}]")
            elif isinstance(part, str):
                pieces.append(part)
        return "\n".join(pieces)
    return "" if content is None else orjson.dumps(content).decode()


def to_messages(chat: list[dict[str, Any]]) -> list[ModelMessage]:
    """pydantic-ai messages for one chat-completions message list (see the module docstring)."""
    out: list[ModelMessage] = []
    request: list[ModelRequestPart] = []
    names: dict[str, str] = {}  # call id (as made unique) -> tool name
    latest: dict[str, str] = {}  # call id as the file gives it -> the unique id of its newest call

    def flush() -> None:
        if request:
            out.append(ModelRequest(parts=list(request)))
            request.clear()

    for m in chat:
        role = m["role"]
        if role in ("system", "developer"):
            request.append(SystemPromptPart(_text(m.get("content"))))
        elif role == "user":
            if request and isinstance(request[-1], ToolReturnPart):
                flush()  # new user text after tool results starts a turn of its own
            request.append(UserPromptPart(_text(m.get("content"))))
        elif role in ("tool", "function"):
            if request and not isinstance(request[-1], ToolReturnPart):
                flush()
            given = as_str(m.get("tool_call_id")) or as_str(m.get("name")) or ""
            call_id = latest.get(given, given)
            name = as_str(m.get("name")) or names.get(call_id, "tool")
            request.append(ToolReturnPart(name, _text(m.get("content")), tool_call_id=call_id))
        else:  # assistant
            flush()
            parts: list[ModelResponsePart] = []
            if text := _text(m.get("content")):
                parts.append(TextPart(text))
            calls = m.get("tool_calls") or []
            if isinstance(m.get("function_call"), dict):  # the legacy single-call form
                calls = [{"id": m["function_call"].get("name"), "function": m["function_call"]}]
            for call in calls if isinstance(calls, list) else []:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                    continue
                given = as_str(call.get("id")) or function["name"]
                call_id = given if given not in latest else f"{given}~{len(names)}"  # ids reused (tau-bench)
                latest[given] = call_id
                names[call_id] = function["name"]
                args = function.get("arguments")
                parts.append(
                    ToolCallPart(function["name"], args if isinstance(args, str | dict) else None, call_id)
                )
            out.append(ModelResponse(parts=parts or [TextPart("")]))
    flush()
    return out


def read_openai_chat(path: Path, text: str | None = None) -> list[ImportedTranscript]:
    """Every conversation in the file at `path`, one transcript each; `ImportFormatError` if it is
    not OpenAI chat messages."""
    text = read_text(path) if text is None else text
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ImportFormatError(
            f"{path}: not valid JSON; OpenAI chat messages are one JSON document"
        ) from None
    found = conversations(data)
    if found is None:
        raise ImportFormatError(
            f"{path}: not OpenAI chat messages (a JSON list of {{role, content, tool_calls}} objects, or "
            "records holding one under messages/traj); check --format"
        )
    out = []
    for label, chat in found:
        transcript = build_transcript(path, FORMAT, "OpenAI chat", to_messages(chat), None)
        if label is not None:
            name = f"{transcript.suggested_name}-{label}"
            transcript = ImportedTranscript(FORMAT, transcript.steps, path, name)
        out.append(transcript)
    return out
