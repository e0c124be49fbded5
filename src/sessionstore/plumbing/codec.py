"""Blob encoding: JSONL, one pydantic-ai `ModelMessage` per line, as `ModelMessagesTypeAdapter` dumps it.

Encoding goes through the adapter once per batch; decoding turns each blob into a JSON array and
validates it in a single call, which is what keeps loading within a few percent of a bare
`ModelMessagesTypeAdapter.validate_json`. pydantic-ai is imported on first use only, so the CLI's
read-only commands never pay for it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import SessionStoreError
from .collector import paused_gc

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_ai.messages import ModelMessage


_building = threading.Lock()


@cache
def adapter() -> TypeAdapter[list[ModelMessage]]:
    """pydantic-ai's message-list adapter, built (its deferred schema) before it is returned.

    Built under a lock: pydantic builds a deferred adapter on first use without one, so a warm-up
    thread and a first write arriving together would each spend the build (60-200 ms); this way the
    second waits for the first.
    """
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    with _building:
        if not ModelMessagesTypeAdapter.pydantic_complete:
            ModelMessagesTypeAdapter.rebuild()
    return ModelMessagesTypeAdapter


def to_jsonable(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    return adapter().dump_python(list(messages), mode="json")


class UnreadableMessages(SessionStoreError, ValueError):
    """Messages whose stored form would not read back (e.g. tool arguments nested ~200 deep, past
    pydantic's JSON recursion limit): refused before anything is written, so never acknowledged."""


def encode(messages: Sequence[ModelMessage]) -> bytes:
    """The blob bytes for `messages`: one compact JSON object per line, newline-terminated.

    The bytes are decoded with the reader's own decoder before they are returned (`check_decodable`),
    so a writer never stores, and so never acknowledges, a turn that every later load would fail on:
    `UnreadableMessages` says why, and nothing has been written. It costs one validation of the new
    messages (about 100 us for a four-message turn), against the milliseconds of the fsyncs.
    """
    blob = encode_unchecked(messages)
    check_decodable(blob)
    return blob


def encode_unchecked(messages: Sequence[ModelMessage]) -> bytes:
    """`encode` without the read-back: for a writer that runs `check_decodable` itself before the
    blob is named (`turn_blobs.stage_turn` runs it while the object store's worker syncs the blob)."""
    dump = adapter().dump_json
    try:
        # One message per call, its list brackets cut off: pydantic-core writes the JSON straight to
        # bytes (compact, raw UTF-8, newlines escaped), about half the cost of building the Python
        # dicts and dumping them again; integers of any size are written as they are.
        return b"".join([dump([message])[1:-1] + b"\n" for message in messages])
    except ValueError as err:  # pydantic-core: "Maximum serialization depth exceeded"
        raise UnreadableMessages(_why(str(err))) from None


def check_decodable(blob: bytes) -> None:
    """Raise `UnreadableMessages` unless `decode([blob])` succeeds: what a writer calls before it
    commits a blob it did not get from `encode` (which checks already)."""
    from pydantic import ValidationError

    try:
        decode([blob])
    except (ValidationError, ValueError, RecursionError) as err:
        first = err.errors()[0]["msg"] if isinstance(err, ValidationError) and err.errors() else str(err)
        raise UnreadableMessages(_why(first)) from None


def unreadable_reason(blob: bytes) -> str | None:
    """Why `blob` does not decode (for fsck), or None when it does."""
    try:
        check_decodable(blob)
    except UnreadableMessages as err:
        return str(err)
    return None


def _why(detail: str) -> str:
    hint = (
        ": tool arguments or results are nested too deeply (pydantic-ai reads JSON nested up to about "
        "200 levels); flatten them"
        if "recursion" in detail or "depth" in detail
        else ""
    )
    return f"messages cannot be stored because they would not read back ({detail}){hint}; nothing was written"


def line_count(blob: bytes) -> int:
    return blob.count(b"\n")


def decode(blobs: Iterable[bytes]) -> list[ModelMessage]:
    """Messages of the blobs, in order: each blob validated in one call.

    JSON never contains a raw newline inside a value, so a blob's newlines are exactly its message
    separators and turning them into commas yields a JSON array. One array per blob rather than one
    for the whole history: the bytes stay in the CPU cache while they are translated and validated,
    which measured 1.03x a bare `validate_json` of the same messages against 1.25x for one big array
    (benchmarks/bench_store.py), and blobs can be read and verified as they are decoded.
    """
    validate = adapter().validate_json
    out: list[ModelMessage] = []
    # Validation allocates tens of thousands of containers and none of them is garbage, yet each
    # batch of allocations triggers a cyclic-GC pass over everything alive: pausing the collector
    # while decoding measured 1.31x -> 1.20x of a bare validate_json on 10,000 messages.
    with paused_gc():
        for blob in blobs:
            if not blob:
                continue
            array = bytearray(b"[")
            array += blob
            if blob.endswith(b"\n"):
                array[-1] = 0x5D  # the last message's newline closes the array instead
            else:
                array.append(0x5D)
            # bytes.replace of one byte by one byte scans with memchr: ~5x faster than translate
            out += validate(array.replace(b"\n", b","))
    return out


def messages_loaded() -> bool:
    """Whether pydantic-ai (the package and its message types) is wholly imported in this process.

    Only then may a thread warm up (`accounting.tokens.preload`) while another imports: pydantic-ai's
    modules import each other in cycles, and two threads importing them at once each find the other's
    half-made module (`ImportError: ... partially initialized module 'pydantic_ai.messages'`), which
    broke `SessionStore.open()` followed within ~50 ms by any pydantic-ai import."""
    for name in ("pydantic_ai", "pydantic_ai.messages"):
        module = sys.modules.get(name)
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            return False
    return True


def warm_up() -> None:
    """Build now what the first `encode`/`decode` would build: pydantic's serializer and validator of
    the message list (schema generation, ~60-200 ms once per process) and the imports they need.

    Runs synchronously; `accounting.tokens.preload` calls it on a daemon thread when a store opens.
    """
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    decode([encode([ModelRequest(parts=[UserPromptPart("warm up")])])])


def decode_first(blob: bytes) -> ModelMessage:
    """The first message of a blob, decoding only its first line (a checkpoint's summary request)."""
    return decode([blob.split(b"\n", 1)[0] + b"\n"])[0]
