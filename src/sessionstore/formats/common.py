"""What every format reader shares: the imported result (`ImportedStep`, `ImportedTranscript`), reading
the file and its JSON lines with errors that name the line, cutting a history into turn and compaction
steps, and repairing tool pairs the way pydantic-ai does before it sends a history.

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
- A compaction step carries what the source agent recorded about it (`recorded`: the context's tokens
  before and after, as its provider counted them, and what triggered it), when the format says.

Imports point one way: `transcripts` (the registry) -> `claude_code`, `codex`, `pydantic_ai` -> this.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
    BaseToolReturnPart,
    CompactionPart,
    ModelMessage,
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

_USAGE_ADAPTER: TypeAdapter[RequestUsage] = TypeAdapter(RequestUsage)


@dataclass(frozen=True)
class ImportedStep:
    """One unit to persist: a user turn's new messages, or a compaction's full new state."""

    kind: Literal["turn", "compaction"]
    messages: list[ModelMessage]
    usage: dict | None = None
    recorded: dict[str, Any] | None = None
    """A compaction as the source agent recorded it: `tokens_before`, `tokens_after` (ints, its
    provider's count) and `trigger`, each only when written; `by` names the agent. None if unknown."""


@dataclass(frozen=True)
class ImportedTranscript:
    """A whole file, converted: its format, its steps in order, and a session name to offer."""

    format: str
    steps: list[ImportedStep]
    source: Path
    suggested_name: str


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


MAX_NESTING = 190
"""Deepest JSON a transcript line may nest: pydantic-ai reads a stored message nested at most about 200
levels (pydantic-core's JSON recursion limit), and a message nests a few levels more than the line its
tool arguments came from. A deeper line is refused naming it, before anything is stored."""


def json_problem(err: orjson.JSONDecodeError, text: str) -> str:
    """What is wrong with JSON that orjson refused ("is not valid JSON: ..."), naming the cause and
    where it is: NaN/Infinity, nesting past 1,024, a raw control character, a lone surrogate, a cut."""
    line_text = text.split("\n")[err.lineno - 1] if 0 < err.lineno <= text.count("\n") + 1 else ""
    near = line_text[max(0, err.colno - 3) : err.colno + 9]
    where = f"at line {err.lineno}, column {err.colno}"
    if "NaN" in near or "Infinity" in near:
        why = f"it holds NaN or Infinity {where}, which JSON does not allow (write null or a string)"
    elif "depth" in err.msg or "recursion" in err.msg:
        why = f"it nests more than 1,024 levels deep {where}"
    elif "control character" in err.msg:
        char = line_text[err.colno - 1 : err.colno] if err.colno <= len(line_text) else ""
        what = "a raw NUL character" if char == "\0" else "a raw control character"
        why = f"it holds {what} inside a string {where} (JSON writes it escaped, as \\u0000)"
    elif "surrogate" in err.msg:
        why = f"it holds an unpaired UTF-16 surrogate escape (like \\ud800) {where}, which is no character"
    elif "end of data" in err.msg or "EOF" in err.msg:
        why = f"it is cut off {where} (truncated?)"
    else:
        why = f"{err.msg} {where}"
    return f"is not valid JSON: {why}"


def nesting(obj: object) -> int:
    """How deep `obj` (parsed JSON) nests: 1 for a flat object or list, 0 for a scalar."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def check_nesting(path: Path, number: int, line: str, obj: object) -> None:
    """Refuse a line nested deeper than `MAX_NESTING` (cheap: only lines with that many brackets are
    walked)."""
    if line.count("{") + line.count("[") > MAX_NESTING and (depth := nesting(obj)) > MAX_NESTING:
        raise ImportFormatError(
            f"{path}: line {number}: JSON nested {depth} levels deep (tool arguments?); pydantic-ai reads "
            f"messages nested up to about {MAX_NESTING}: flatten it or remove the line (nothing was imported)"
        )


def iter_jsonl(path: Path, text: str, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a clear error for a line that is not an object,
    is not JSON (naming the cause), or nests deeper than a stored message can."""
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            last = all(not rest.strip() for rest in lines[number:])
            if last and "end of data" in err.msg:
                why, fix = "is cut off (an unfinished write?)", "remove that line and retry"
            else:
                why = json_problem(err, line).replace(" at line 1, column", " at column")
                fix = "repair the line, or check --format"
            raise ImportFormatError(f"{path}: line {number}: {fmt} line {why}; {fix}") from None
        if not isinstance(obj, dict):
            raise ImportFormatError(f"{path}: line {number}: expected a JSON object per line; check --format")
        check_nesting(path, number, line, obj)
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


Recorded = Callable[[CompactionPart], "dict[str, Any] | None"]
"""A format's reading of what its agent recorded about a compaction (see `ImportedStep.recorded`)."""


def split_steps(messages: Sequence[ModelMessage], recorded: Recorded | None = None) -> list[ImportedStep]:
    """Cut a flat history into turn and compaction steps (see the module docstring for the rule)."""
    groups: list[tuple[Literal["turn", "compaction"], list[ModelMessage]]] = []
    for index, message in enumerate(messages):
        if _is_compaction(message):
            groups.append(("compaction", [message]))
        elif index == 0 or starts_turn(message):
            groups.append(("turn", [message]))
        else:
            groups[-1][1].append(message)

    def noted(kind: str, msgs: list[ModelMessage]) -> dict[str, Any] | None:
        if kind != "compaction" or recorded is None:
            return None
        return next((recorded(p) for p in msgs[0].parts if isinstance(p, CompactionPart)), None)

    return [ImportedStep(kind, msgs, step_usage(msgs), noted(kind, msgs)) for kind, msgs in groups]


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
    path: Path,
    fmt: str,
    label: str,
    messages: list[ModelMessage],
    session_id: str | None,
    recorded: Recorded | None = None,
) -> ImportedTranscript:
    """The result of a foreign-format reader: tool pairs repaired, split into steps (`recorded` reads a
    compaction's own record), refused if empty."""
    messages = repair_tool_pairs(messages)
    if not messages:
        raise ImportFormatError(
            f"{path}: no {label} messages found; check --format (or the file is not a transcript)"
        )
    return ImportedTranscript(fmt, split_steps(messages, recorded), path, suggest_name(path, session_id))


def as_str(value: object) -> str | None:
    """`value` if it is a string (transcript fields are loosely typed), else None."""
    return value if isinstance(value, str) else None
