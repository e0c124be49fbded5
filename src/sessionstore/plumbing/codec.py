"""Blob encoding: JSONL, one pydantic-ai `ModelMessage` per line, as `ModelMessagesTypeAdapter` dumps it.

Encoding goes through the adapter once per batch; decoding joins any number of blobs into one JSON
array and validates it in a single call, which is what keeps loading within a few percent of a bare
`ModelMessagesTypeAdapter.validate_json`. pydantic-ai is imported on first use only, so the CLI's
read-only commands never pay for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessage


_NEWLINE_TO_COMMA = bytes.maketrans(b"\n", b",")


@cache
def adapter() -> TypeAdapter[list[ModelMessage]]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter


def to_jsonable(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    return adapter().dump_python(list(messages), mode="json")


def encode(messages: Sequence[ModelMessage]) -> bytes:
    """The blob bytes for `messages`: one compact JSON object per line, newline-terminated."""
    return b"".join(_dumps(obj) + b"\n" for obj in to_jsonable(messages))


def _dumps(obj: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:
        # orjson refuses integers beyond 64 bits, which tool arguments and results may hold; the
        # stdlib writes the same compact JSON for them (and escapes newlines just the same).
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def line_count(blob: bytes) -> int:
    return blob.count(b"\n")


def decode(blobs: Iterable[bytes]) -> list[ModelMessage]:
    """Messages of the concatenated blobs, validated in one pass.

    JSON never contains a raw newline inside a value, so the blob's newlines are exactly its message
    separators and turning them into commas yields a JSON array. The array is built with one join and
    one `translate` (two passes over the bytes, no `replace`/concatenation copies): on a 10,000-message
    history those copies cost a third as much as the validation itself.
    """
    parts = [p if p.endswith(b"\n") else p + b"\n" for p in blobs if p]
    if not parts:
        return []
    array = bytearray().join([b"[", *parts]).translate(_NEWLINE_TO_COMMA)
    array[-1] = 0x5D  # the last message's newline became a comma: close the array instead
    return adapter().validate_json(array)
