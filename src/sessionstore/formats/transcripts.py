"""Reading agent transcripts into pydantic-ai messages, and writing them back out.

Pure conversion: nothing here touches a store. `read_transcript` turns a file into `ImportedStep`s
(one per user turn, plus compaction steps) that `Session` persists; `export_pydantic_ai` writes a
history as the `ModelMessagesTypeAdapter` JSON list that `read_transcript` reads back unchanged.

Choices shared by every format:
- Turns. A step starts at the first message, at a `ModelRequest` holding a `CompactionPart` (a
  compaction step: the summary plus the messages up to the next turn, i.e. the full new state), and at
  a `ModelRequest` holding a `UserPromptPart` but no tool return. A request that answers tool calls
  continues its turn even if it also carries user text, so a call is never split from its return.
- Tool pairs (foreign formats only; a pydantic-ai file is taken as written). A call whose result
  never came (an interrupted session) gets pydantic-ai's own synthetic return: `outcome='interrupted'`,
  `INTERRUPTED_TOOL_RETURN_CONTENT`, metadata flag `SYNTHESIZED_TOOL_RETURN_METADATA_KEY`, exactly what
  pydantic-ai's history repair would send. A result with no earlier call, or a second result for one
  call, is dropped, as pydantic-ai does before sending (providers reject such results).
- Step usage is the sum of the `RequestUsage` of the step's responses, or None when none has any.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter, ValidationError
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
    BaseToolReturnPart,
    CompactionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from sessionstore.errors import ImportFormatError
from sessionstore.plumbing.names import is_valid_name

FORMATS = ("pydantic-ai", "claude-code", "codex")
_CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
)
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_USAGE_ADAPTER: TypeAdapter[RequestUsage] = TypeAdapter(RequestUsage)


@dataclass(frozen=True)
class ImportedStep:
    """One unit to persist: a user turn's new messages, or a compaction's full new state."""

    kind: Literal["turn", "compaction"]
    messages: list[ModelMessage]
    usage: dict | None = None


@dataclass(frozen=True)
class ImportedTranscript:
    """A whole file, converted: its format, its steps in order, and a session name to offer."""

    format: str
    steps: list[ImportedStep]
    source: Path
    suggested_name: str


def detect_format(path: Path) -> str:
    """The format of `path` ("pydantic-ai", "claude-code" or "codex"); `ImportFormatError` if none."""
    return _sniff(path, read_text(path))


def read_transcript(path: Path, format: str = "auto") -> ImportedTranscript:
    """Convert the transcript at `path` into steps; `format="auto"` detects it from the content."""
    if format != "auto" and format not in FORMATS:
        choices = ", ".join(("auto", *FORMATS))
        raise ImportFormatError(f"{path}: unknown import format {format!r}; choose one of {choices}")
    text = read_text(path)
    if format == "auto":
        return _read_as(path, text, _sniff(path, text))
    try:
        return _read_as(path, text, format)
    except ImportFormatError as err:
        try:
            guess = _sniff(path, text)
        except ImportFormatError:
            raise err from None
        if guess == format:
            raise
        raise ImportFormatError(f"{err} (it looks like {guess}: try --format {guess})") from None


def _read_as(path: Path, text: str, fmt: str) -> ImportedTranscript:
    if fmt == "pydantic-ai":
        messages = _read_pydantic_ai(path, text)
        return ImportedTranscript(fmt, split_steps(messages), path, suggest_name(path))
    # Imported here, not at module level: both readers build on the helpers of this module.
    if fmt == "claude-code":
        from sessionstore.formats.claude_code import read_claude_code

        return read_claude_code(path, text)
    from sessionstore.formats.codex import read_codex

    return read_codex(path, text)


def export_pydantic_ai(messages: Sequence[ModelMessage]) -> bytes:
    """`messages` as a `ModelMessagesTypeAdapter` JSON list (newline-terminated), re-importable as is."""
    return ModelMessagesTypeAdapter.dump_json(list(messages)) + b"\n"


# --- helpers shared by the format readers -------------------------------------------------------


def read_text(path: Path) -> str:
    """The file's text; a clear error for a missing, unreadable, binary, non-UTF-8 or empty file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImportFormatError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise ImportFormatError(f"{path}: is a directory; give a transcript file") from None
    except OSError as err:
        raise ImportFormatError(f"{path}: cannot read ({err.strerror}); check its permissions") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ImportFormatError(
            f"{path}: line {line}: not UTF-8 text (byte {err.start}); transcripts are UTF-8 JSON or JSONL"
        ) from None
    if not text.strip():
        raise ImportFormatError(f"{path}: the file is empty; nothing to import")
    return text.removeprefix("\ufeff")


def iter_jsonl(path: Path, text: str, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a clear error for a line that is not an object."""
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            last = all(not rest.strip() for rest in lines[number:])
            why = "is cut off (an unfinished write?)" if last else "is not valid JSON"
            fix = "remove that line and retry" if last else "repair the line, or check --format"
            raise ImportFormatError(f"{path}: line {number}: {fmt} line {why}; {fix}") from None
        if not isinstance(obj, dict):
            raise ImportFormatError(f"{path}: line {number}: expected a JSON object per line; check --format")
        yield number, obj


def parse_time(value: object) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime, or None when absent or unparsable."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def suggest_name(path: Path, preferred: str | None = None) -> str:
    """A valid session name from `preferred` (e.g. a session id) or else the file's stem."""
    for raw in (preferred, path.stem):
        if not raw:
            continue
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", raw)
        name = re.sub(r"\.{2,}", ".", name).lstrip("._-")[:128].rstrip(".")
        if is_valid_name(name):
            return name
    return "imported"


def starts_turn(message: ModelMessage) -> bool:
    """A request with a user prompt and no tool return: the start of a user turn."""
    parts = message.parts
    return (
        isinstance(message, ModelRequest)
        and any(isinstance(p, UserPromptPart) for p in parts)
        and not any(isinstance(p, BaseToolReturnPart) for p in parts)
    )


def _is_compaction(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(isinstance(p, CompactionPart) for p in message.parts)


def split_steps(messages: Sequence[ModelMessage]) -> list[ImportedStep]:
    """Cut a flat history into turn and compaction steps (see the module docstring for the rule)."""
    groups: list[tuple[Literal["turn", "compaction"], list[ModelMessage]]] = []
    for index, message in enumerate(messages):
        if _is_compaction(message):
            groups.append(("compaction", [message]))
        elif index == 0 or starts_turn(message):
            groups.append(("turn", [message]))
        else:
            groups[-1][1].append(message)
    return [ImportedStep(kind, msgs, step_usage(msgs)) for kind, msgs in groups]


def step_usage(messages: Sequence[ModelMessage]) -> dict | None:
    """The JSON-able sum of the responses' usage, or None when no response reports any."""
    total: RequestUsage | None = None
    for message in messages:
        if isinstance(message, ModelResponse) and message.usage.has_values():
            total = message.usage if total is None else total + message.usage
    return None if total is None else _USAGE_ADAPTER.dump_python(total, mode="json")


def repair_tool_pairs(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Give every tool call exactly one later return, and every return its call (module docstring)."""
    called: dict[str, ToolCallPart] = {}
    answerable: set[str] = set()
    answered: set[str] = set()
    kept: list[ModelMessage] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            called.update((p.tool_call_id, p) for p in calls)
            answerable.update(p.tool_call_id for p in calls)
            kept.append(message)
            continue
        if _is_compaction(message):
            # History restarts at a summary: a call before it can no longer be answered after it.
            answerable.clear()
        parts: list[ModelRequestPart] = []
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                if part.tool_call_id not in answerable or part.tool_call_id in answered:
                    continue
                answered.add(part.tool_call_id)
            parts.append(part)
        if parts:
            kept.append(replace(message, parts=parts) if len(parts) != len(message.parts) else message)
    dangling = {cid for cid in called if cid not in answered}
    if not dangling:
        return kept
    repaired: list[ModelMessage] = []
    for index, message in enumerate(kept):
        repaired.append(message)
        if not isinstance(message, ModelResponse):
            continue
        missing = [p for p in message.parts if isinstance(p, ToolCallPart) and p.tool_call_id in dangling]
        if not missing:
            continue
        synthetic = [_interrupted_return(call, message.timestamp) for call in missing]
        following = kept[index + 1] if index + 1 < len(kept) else None
        # Join the next request only when it already answers calls; a fresh prompt must stay a turn start.
        if isinstance(following, ModelRequest) and any(
            isinstance(p, ToolReturnPart) for p in following.parts
        ):
            kept[index + 1] = replace(following, parts=[*synthetic, *following.parts])
        else:
            repaired.append(ModelRequest(parts=synthetic, timestamp=message.timestamp))
    return repaired


def _interrupted_return(call: ToolCallPart, when: datetime) -> ToolReturnPart:
    return ToolReturnPart(
        tool_name=call.tool_name,
        content=INTERRUPTED_TOOL_RETURN_CONTENT,
        tool_call_id=call.tool_call_id,
        metadata={SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True},
        timestamp=when,
        outcome="interrupted",
    )


def build_transcript(
    path: Path, fmt: str, label: str, messages: list[ModelMessage], session_id: str | None
) -> ImportedTranscript:
    """The result of a foreign-format reader: tool pairs repaired, split into steps, refused if empty."""
    messages = repair_tool_pairs(messages)
    if not messages:
        raise ImportFormatError(
            f"{path}: no {label} messages found; check --format (or the file is not a transcript)"
        )
    return ImportedTranscript(fmt, split_steps(messages), path, suggest_name(path, session_id))


def as_str(value: object) -> str | None:
    """`value` if it is a string (transcript fields are loosely typed), else None."""
    return value if isinstance(value, str) else None


# --- detection and the pydantic-ai format ----------------------------------------------------------


def _not_messages(data: list[object]) -> str:
    """Why a JSON list is not pydantic-ai messages, naming its first item that is not one (a tau-bench
    trajectory file is a list of {task_id, reward, info, traj} records, for instance)."""
    index, bad = next((i, m) for i, m in enumerate(data) if not _is_message(m))
    if isinstance(bad, dict):
        what = f"kind {bad['kind']!r}" if "kind" in bad else f"an object with keys {', '.join(map(str, bad))}"
    else:
        what = f"a JSON {type(bad).__name__}"
    return (
        f"a JSON list but not pydantic-ai messages: item {index} is {what}, not kind request/response; "
        "supported: pydantic-ai JSON, Claude Code or Codex JSONL"
    )


def _is_message(item: object) -> bool:
    return isinstance(item, dict) and item.get("kind") in ("request", "response")


def _sniff(path: Path, text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            raise ImportFormatError(
                f"{path}: starts like a JSON list but is not valid JSON (truncated?); re-export the file"
            ) from None
        if isinstance(data, list) and all(_is_message(m) for m in data):
            return "pydantic-ai"
        raise ImportFormatError(f"{path}: {_not_messages(data if isinstance(data, list) else [data])}")
    for number, line in enumerate(text.split("\n")[:50], 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise ImportFormatError(
                f"{path}: line {number}: neither a JSON list nor JSON lines; expected pydantic-ai JSON, "
                "a Claude Code or a Codex JSONL transcript"
            ) from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if not isinstance(kind, str):
            continue  # a list or object "type" would be unhashable in the set lookups below
        if kind in _CODEX_TYPES and "payload" in obj:
            return "codex"
        if kind in _CLAUDE_CODE_TYPES:
            return "claude-code"
    raise ImportFormatError(
        f"{path}: not a known transcript format; give --format pydantic-ai, claude-code or codex"
    )


def _read_pydantic_ai(path: Path, text: str) -> list[ModelMessage]:
    try:
        messages = ModelMessagesTypeAdapter.validate_json(text)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        detail = f"message {where}: {first['msg']}" if where else first["msg"]
        message = f"{path}: not valid pydantic-ai messages ({detail}); check --format"
        raise ImportFormatError(message) from None
    if not messages:
        raise ImportFormatError(f"{path}: an empty message list; nothing to import")
    return messages
