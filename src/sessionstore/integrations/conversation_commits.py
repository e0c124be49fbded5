"""The commit a `FileConversationStore.write_record` makes: a `turn` or a reset point (see
`conversation_store` for the format).

`turn_commit` appends new entries after the current head: their blob is staged at once and lands
while the caller builds the line (`write_commit` waits for `landed` before the line is appended).
`reset_commit` is a `checkout` (a branch, a rewritten history) or, for a conversation's first
commit, a `fork`: its `blobs` concatenate to the whole new history, whole stored blobs reused, a
history cut inside a blob given a new blob of that blob's leading lines (a byte slice: nothing is
re-encoded). Both only write blobs (content-addressed, so a commit that is then refused leaves at
most an orphan for gc) and return the line's fields; the caller writes the line under the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..accounting.tokens import estimate_messages
from ..plumbing import codec
from ..porcelain.session.turn_blobs import stage_turn
from .conversation_records import AFTER, COUNTS, IDS, ConversationLog, segments

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

    from ..plumbing.objects import ObjectStore

__all__ = ["Planned", "reset_commit", "turn_commit"]


class Planned(NamedTuple):
    """What `write_commit` is given for one conversation commit: its kind, its new blob (or None),
    the line's fields, the history's message count and tokens after it, the blob's landing to
    wait for before the line is appended (None when nothing is in flight), and the new blob's bytes
    (for its `title` field: a landing blob is never read back)."""

    kind: str
    blob: str | None
    fields: dict[str, Any]
    count: int
    tokens: int
    landed: Callable[[], object] | None = None
    data: bytes | None = None


def turn_commit(
    objects: ObjectStore, view: ConversationLog, new: list[ConversationEntry], previous: str | None
) -> Planned:
    """A `turn` commit appending `new` after the current head (`previous` is its entry id): one blob
    of the new messages (none when `new` is empty: a save that adds no message), their sizes, their
    entry ids line for line, and `after`, the entry the first one follows."""
    count, tokens = (view.head.count, view.head.tokens) if view.head else (0, 0)
    if not new:
        return Planned("turn", None, {"sizes": []}, count, tokens)
    staged = stage_turn(objects, [entry.message for entry in new])
    fields = {"sizes": staged.sizes, IDS: [entry.id for entry in new], AFTER: previous}
    return Planned(
        "turn", staged.blob, fields, count + len(new), tokens + sum(staged.sizes), staged.landed, staged.data
    )


def reset_commit(
    objects: ObjectStore,
    view: ConversationLog,
    record: ConversationRecord,
    new: list[ConversationEntry],
    find: Callable[[str], ConversationLog],
    forked_from: str | None,
) -> Planned:
    """A reset point (`checkout`, or `fork` for a first commit) whose blobs make `record`'s history:
    the stored entries up to the first of `new` that `record.head_id` reaches, then those new ones.
    The stored part may come from another log (a fork's source): `find(entry_id)` returns a fresh
    view that indexes it, or raises `KeyError` when no stored conversation reaches it. A fork's
    `from` names `forked_from` (the session of `record.forked_from`), else the source's session."""
    by_id = {entry.id: entry for entry in new}
    added: list[ConversationEntry] = []
    entry_id = record.head_id
    while entry_id in by_id:
        added.append(by_id[entry_id])
        entry_id = by_id[entry_id].parent_id
    added.reverse()
    source = view if entry_id is None or entry_id in view.entries else find(entry_id)
    kept = source.chain(entry_id)
    blobs, counts = [], []
    for blob, start, stop in segments(kept):
        if start or stop != source.blob_lines[blob]:
            lines = objects.read(blob).split(b"\n")[start:stop]
            blob = objects.write(b"".join(line + b"\n" for line in lines))
        blobs.append(blob)
        counts.append(stop - start)
    sizes = [loc.size for _, loc in kept]
    new_blob = data = None
    if added:
        messages = [entry.message for entry in added]
        sizes += estimate_messages(messages)
        data = codec.encode(messages)
        new_blob = objects.write(data)
        blobs.append(new_blob)
        counts.append(len(added))
    fields: dict[str, Any] = {
        "blobs": blobs, "sizes": sizes, COUNTS: counts,
        IDS: [eid for eid, _ in kept] + [entry.id for entry in added],
    }  # fmt: skip
    if view.head is not None:
        kind, target = "checkout", view.head.id
    else:
        kind, target = "fork", source.head.id if source.head and source is not view else None
        fields["from"] = forked_from or source.name
    fields["target"] = target
    return Planned(kind, new_blob, fields, len(sizes), sum(sizes), data=data)
