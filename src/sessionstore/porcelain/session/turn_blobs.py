"""A turn's blob on its way to disk while the rest of its commit is made (DESIGN §2, §3).

`stage_turn` starts the blob's durable write on the object store's worker thread and counts the
turn's messages meanwhile (its longest texts in the counting process, `accounting.count_process`,
when one runs); the commit line is then built while the blob may still be syncing, and
`writer.write_commit` waits for `StagedTurn.landed` before it appends the line: no line ever names a
blob that is not durable, and the CPU work of a commit hides under its blob's syncs. For every writer
of a turn's blob: `writer.Lockstep.commit_turn` and `FileConversationStore`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from sessionstore.accounting import count_process
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.plumbing import codec

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from sessionstore.plumbing.objects import ObjectStore

__all__ = ["StagedTurn", "settle", "stage_turn"]


class StagedTurn(NamedTuple):
    """A turn's blob on its way to disk (`stage_turn`): its id, its messages' sizes, `landed`,
    which waits until the blob is durable under its name (raising what the write raised), and its
    bytes (what the commit's `title` field is read from while the blob lands: `writer.write_commit`)."""

    blob: str
    sizes: list[int]
    landed: Callable[[], object]
    data: bytes


def stage_turn(
    objects: ObjectStore, messages: list[ModelMessage], sizes: Sequence[int] | None = None
) -> StagedTurn:
    """Start writing a turn's blob and count its messages meanwhile.

    The blob is encoded and staged here, then read back (decode before commit: an unreadable turn is
    refused here and nothing is stored) while the object store's thread syncs it, and tokenized
    while that thread names it and syncs its directory (`sizes`, when the caller has them, are taken
    instead). The turn's longest texts go to the counting process first, when one is ready
    (`count_process.count_ahead`): it counts them while this thread encodes and checks the blob.
    The caller builds its commit line while the blob may still be syncing and hands `landed` to
    `write_commit`, which waits for it before the line is appended: no line names a blob
    that is not durable. For every writer of a turn's blob: `Lockstep.commit_turn` and
    `FileConversationStore`."""
    ahead = count_process.count_ahead(messages) if sizes is None else None
    try:
        data = codec.encode_unchecked(messages)
        writing = objects.write_in_background(data, codec.check_decodable)
    except BaseException:
        if ahead is not None:
            ahead.finish()
        raise
    try:
        if ahead is not None:
            ahead.finish()  # this thread's share counted, the counting process's answers cached
        counted = list(sizes) if sizes is not None else estimate_messages(messages)
    except BaseException:
        settle(writing.result)
        raise
    return StagedTurn(writing.oid, counted, writing.result, data)


def settle(landed: Callable[[], object] | None) -> None:
    """Wait for a blob still landing when what was to name it failed: no write is left in flight once
    the caller lets go of the lock (the blob, if it landed, is an orphan for gc). Its own error is
    dropped: the caller's is the one to report."""
    if landed is not None:
        with contextlib.suppress(Exception):
            landed()
