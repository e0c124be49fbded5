"""The format registry: which formats exist, how a file's format is detected, and reading a transcript
in any of them into pydantic-ai messages (`read_transcript`), or writing a history out
(`export_pydantic_ai`).

Pure conversion: nothing in formats/ touches a store. Each reader turns a file into `ImportedStep`s (one
per user turn, plus compaction steps) that the store persists; the rules they share are in `common`.
Imports point one way: this registry -> the readers (`pydantic_ai`, `claude_code`, `codex`) ->
`common`. The names callers use are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from sessionstore.errors import ImportFormatError
from sessionstore.formats.claude_code import read_claude_code
from sessionstore.formats.codex import read_codex
from sessionstore.formats.common import (
    MAX_NESTING,
    ImportedStep,
    ImportedTranscript,
    json_problem,
    nesting,
    read_text,
    split_steps,
    starts_turn,
)
from sessionstore.formats.pydantic_ai import export_pydantic_ai, is_message, not_messages, read_pydantic_ai

__all__ = [
    "FORMATS",
    "ImportedStep",
    "ImportedTranscript",
    "detect_format",
    "export_pydantic_ai",
    "read_transcript",
    "split_steps",
    "starts_turn",
]

FORMATS = ("pydantic-ai", "claude-code", "codex")
_READERS = {"pydantic-ai": read_pydantic_ai, "claude-code": read_claude_code, "codex": read_codex}
_CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
)
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


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
        return _READERS[_sniff(path, text)](path, text)
    try:
        return _READERS[format](path, text)
    except ImportFormatError as err:
        try:
            guess = _sniff(path, text)
        except ImportFormatError:
            raise err from None
        if guess == format:
            raise
        raise ImportFormatError(f"{err} (it looks like {guess}: try --format {guess})") from None


def _sniff(path: Path, text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError as err:
            raise ImportFormatError(
                f"{path}: starts like a JSON list but {json_problem(err, stripped)}; repair or re-export "
                "the file"
            ) from None
        if isinstance(data, list):
            for index, item in enumerate(data):
                if nesting(item) > MAX_NESTING:
                    raise ImportFormatError(
                        f"{path}: message {index} is nested {nesting(item)} levels deep (tool arguments?); "
                        f"pydantic-ai reads messages nested up to about {MAX_NESTING}: flatten it (nothing "
                        "was imported)"
                    )
        if isinstance(data, list) and all(is_message(m) for m in data):
            return "pydantic-ai"
        raise ImportFormatError(f"{path}: {not_messages(data if isinstance(data, list) else [data])}")
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
        f"{path}: not a known transcript format; give --format pydantic-ai, claude-code, codex or openai-chat"
    )
