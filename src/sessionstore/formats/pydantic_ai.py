"""The pydantic-ai format: a JSON list of messages exactly as `ModelMessagesTypeAdapter` writes it, read
and written unchanged (`session export` writes it, `session import` reads it back equal)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from sessionstore.errors import ImportFormatError
from sessionstore.formats.common import ImportedTranscript, split_steps, suggest_name


def read_pydantic_ai(path: Path, text: str) -> ImportedTranscript:
    """Convert a pydantic-ai JSON list (already read as `text`) into steps."""
    return ImportedTranscript(
        "pydantic-ai", split_steps(_read_pydantic_ai(path, text)), path, suggest_name(path)
    )


def export_pydantic_ai(messages: Sequence[ModelMessage]) -> bytes:
    """`messages` as a `ModelMessagesTypeAdapter` JSON list (newline-terminated), re-importable as is."""
    return ModelMessagesTypeAdapter.dump_json(list(messages)) + b"\n"


def is_message(item: object) -> bool:
    """True for a JSON object that claims to be a pydantic-ai message (kind request/response)."""
    return isinstance(item, dict) and item.get("kind") in ("request", "response")


def not_messages(data: list[object]) -> str:
    """Why a JSON list is not pydantic-ai messages, naming its first item that is not one (another
    tool's records, for instance)."""
    index, bad = next((i, m) for i, m in enumerate(data) if not is_message(m))
    if isinstance(bad, dict):
        what = f"kind {bad['kind']!r}" if "kind" in bad else f"an object with keys {', '.join(map(str, bad))}"
    else:
        what = f"a JSON {type(bad).__name__}"
    return f"a JSON list but not pydantic-ai messages: item {index} is {what}, not kind request/response"


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
