"""The import formats: which exist, how a file's format is detected, and which reader reads it.

`FORMATS` is the one list: the CLI's `--format` choices, detection, dispatch and every error that
names the formats read it, so a new format is one entry here plus its reader module. Importing this
module loads no reader (they import pydantic-ai): `session import` builds its options from the names
and a reader is imported when a file is read.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import orjson

from sessionstore.errors import ImportFormatError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sessionstore.formats.common import ImportedTranscript


class Format(NamedTuple):
    """One import format."""

    name: str
    """As `--format` takes it."""
    described: str
    """What an error calls a file of it."""
    reader: str
    """`module:function` in `sessionstore.formats`, taking (path, text)."""
    many: bool = False
    """The reader gives a list: one transcript per conversation the file holds."""


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("pydantic-ai", "pydantic-ai JSON", "pydantic_ai:read_pydantic_ai"),
        Format("claude-code", "Claude Code JSONL", "claude_code:read_claude_code"),
        Format("codex", "Codex JSONL", "codex:read_codex"),
        Format("openai-chat", "OpenAI chat JSON", "openai_chat:read_openai_chat", many=True),
    )
}
AUTO = "auto"
"""The `format` that detects the format from the content."""

_CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
)
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def _listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else "".join(words)


def supported() -> str:
    """The formats as an error lists them: 'pydantic-ai JSON, ... or OpenAI chat JSON'."""
    return _listed([f.described for f in FORMATS.values()])


def detect_format(path: Path) -> str:
    """The name of the format of `path`; `ImportFormatError` if it is none of them."""
    from sessionstore.formats.common import read_text

    return _sniff(path, read_text(path))


def read_transcripts(path: Path, format: str = AUTO) -> list[ImportedTranscript]:
    """Every transcript in the file at `path` (one, or one per conversation of a file holding many),
    read as `format` (`"auto"`: detected from the content). An explicit format the file is not in
    says which one it looks like."""
    from sessionstore.formats.common import read_text

    if format != AUTO and format not in FORMATS:
        choices = ", ".join((AUTO, *FORMATS))
        raise ImportFormatError(f"{path}: unknown import format {format!r}; choose one of {choices}")
    text = read_text(path)
    if format == AUTO:
        return _read(_sniff(path, text), path, text)
    try:
        return _read(format, path, text)
    except ImportFormatError as err:
        try:
            guess = _sniff(path, text)
        except ImportFormatError:
            raise err from None
        if guess == format:
            raise
        raise ImportFormatError(f"{err} (it looks like {guess}: try --format {guess})") from None


def read_transcript(path: Path, format: str = AUTO) -> ImportedTranscript:
    """The one transcript in the file at `path` (see `read_transcripts`); `ImportFormatError` when it
    holds several conversations."""
    found = read_transcripts(path, format)
    if len(found) != 1:
        raise ImportFormatError(
            f"{path}: holds {len(found)} conversations ({found[0].format}), not one transcript; "
            "read_transcripts reads them all (`session import` makes a session of each)"
        )
    return found[0]


def _read(name: str, path: Path, text: str) -> list[ImportedTranscript]:
    entry = FORMATS[name]
    module, function = entry.reader.split(":")
    read = getattr(importlib.import_module(f"sessionstore.formats.{module}"), function)
    return read(path, text) if entry.many else [read(path, text)]


_NOT_BLANK = re.compile(r"\S")


def _object_then_more(text: str) -> bool:
    """Whether `text`'s first line is a whole JSON object and something other than blank lines
    follows it: JSON lines, which no whole-document parse accepts. Copies only the first line."""
    end = text.find("\n")
    if end < 0 or not text.startswith("{") or _NOT_BLANK.search(text, end) is None:
        return False
    try:
        return isinstance(orjson.loads(text[:end]), dict)
    except orjson.JSONDecodeError:
        return False


def _first_lines(text: str, count: int) -> Iterator[str]:
    """The first `count` lines of `text` (split at "\\n"), each copied alone: never the rest."""
    start = 0
    for _ in range(count):
        end = text.find("\n", start)
        yield text[start:] if end < 0 else text[start:end]
        if end < 0:
            return
        start = end + 1


def _sniff(path: Path, text: str) -> str:
    from sessionstore.formats.common import MAX_NESTING, json_problem, nesting
    from sessionstore.formats.openai_chat import conversations
    from sessionstore.formats.pydantic_ai import is_message, not_messages

    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            # JSON lines (a first line that is a whole object, more after it) can never parse as one
            # document: skip parsing the whole text, which peaked at 13x the file's bytes in orjson
            data = None if _object_then_more(stripped) else orjson.loads(stripped)
        except orjson.JSONDecodeError as err:
            if stripped.startswith("["):
                raise ImportFormatError(
                    f"{path}: starts like a JSON list but {json_problem(err, stripped)}; repair or "
                    "re-export the file"
                ) from None
            data = None  # JSON lines, each an object: read line by line below
        if conversations(data) is not None:
            return "openai-chat"
        if stripped.startswith("["):
            if isinstance(data, list):
                for index, item in enumerate(data):
                    if nesting(item) > MAX_NESTING:
                        raise ImportFormatError(
                            f"{path}: message {index} is nested {nesting(item)} levels deep (tool "
                            f"arguments?); pydantic-ai reads messages nested up to about {MAX_NESTING}: "
                            "flatten it (nothing was imported)"
                        )
            if isinstance(data, list) and all(is_message(m) for m in data):
                return "pydantic-ai"
            listed = data if isinstance(data, list) else [data]
            raise ImportFormatError(f"{path}: {not_messages(listed)}; supported: {supported()}")
    for number, line in enumerate(_first_lines(text, 50), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise ImportFormatError(
                f"{path}: line {number}: neither a JSON list nor JSON lines; supported: {supported()}"
            ) from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if not isinstance(kind, str):
            continue  # a list or object "type" would be unhashable in the set lookups below
        if kind in _CODEX_TYPES and "payload" in obj:
            return "codex"
        if kind in _CLAUDE_CODE_TYPES:
            return "claude-code"
    raise ImportFormatError(f"{path}: not a known transcript format; give --format {_listed(list(FORMATS))}")
