"""The on-disk form of `FileConversationStore` conversations, read back as a cached entry index.

A conversation's log is an ordinary session log (see `conversation_store` for the format). This
module reads it: `ConversationLog` keeps, per log, the latest `ConversationRecord`, the head commit,
and an index `entry id -> (blob, line, parent, size)` of every entry the log introduced or inherited.
It is refreshed incrementally: only the bytes appended since the last read are parsed, after checking
with one `pread` that the line it last saw is still there (a deleted and recreated log is re-read). On
object storage only the commits after the one it last saw are listed and read (`ObjectLog.since`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import orjson
from pydantic_ai.exceptions import UserError

from ..accounting.tokens import preload
from ..errors import CorruptLogError, InvalidSessionName, SessionStoreError
from ..plumbing.commits import Commit, parse_line
from ..plumbing.logs import Log

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_ai.conversation_store import ConversationRecord

    from ..plumbing.object_logs import ObjectLog

RECORD = "conversation"
"""Commit field holding the record as JSON; its presence on the first commit marks a conversation log."""
IDS = "ids"
"""Entry ids, aligned with the lines of `blob` (turn) or of the concatenated `blobs` (reset point)."""
AFTER = "after"
"""The parent entry of the first of a turn's `ids` (the previous head)."""
COUNTS = "counts"
"""Lines per blob of a reset point's `blobs`, so its `ids` can be placed without reading them."""


class ConversationNameTaken(InvalidSessionName, UserError):
    """A conversation id names a session that holds something else (a plain session, another conversation).

    A pydantic-ai `UserError` too, so an app (or pydantic-ai's UI adapters) reports the message as the
    caller's mistake rather than as a failure to retry: retrying with the same id can never succeed.
    """

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)


class UnstorableText(SessionStoreError, UserError):
    """A conversation holds text UTF-8 cannot store (a lone surrogate such as `"\\ud800"`): nothing saved."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)


class DeleteNotSupported(SessionStoreError, UserError):
    """`delete` of a conversation on object storage: refused, nothing changed (see its message)."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)


def unstorable(cid: str, where: str, err: Exception) -> UnstorableText:
    return UnstorableText(
        f"conversation {cid!r} cannot be saved: {where} holds a lone surrogate, which UTF-8 cannot store "
        f"({err}); nothing was saved: replace it first, e.g. "
        "text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')"
    )


def storable(cid: str, record_json: dict[str, Any]) -> dict[str, Any]:
    """`record_json`, after checking it encodes (a lone surrogate in an id or scope cannot)."""
    try:
        orjson.dumps(record_json)
    except orjson.JSONEncodeError as err:
        raise unstorable(cid, "its record (id, scope or metadata)", err) from None
    return record_json


def warm_up() -> None:
    """Load, on daemon threads and once per process, what the first save would otherwise wait for.

    The tokenizer's table and pydantic's message serializers (`accounting.tokens.preload`, shared
    with `SessionStore.open`), then the record serializer and the modules a save imports lazily. A
    save that arrives meanwhile simply does the rest itself.
    """
    preload(_warm_records)


def _warm_records() -> None:
    import concurrent.futures  # noqa: F401  (the blob writer's pool)

    from pydantic_ai.conversation_store import ConversationRecord

    from ..plumbing import locks  # noqa: F401  (the session lock)

    record_to_json(ConversationRecord(conversation_id="warm-up", head_id=None))


@cache
def record_adapter() -> TypeAdapter[ConversationRecord]:
    from pydantic import TypeAdapter
    from pydantic_ai.conversation_store import ConversationRecord

    return TypeAdapter(ConversationRecord)


def record_to_json(record: ConversationRecord) -> dict[str, Any]:
    return record_adapter().dump_python(record, mode="json")


def record_from_json(data: dict[str, Any]) -> ConversationRecord:
    return record_adapter().validate_python(data)


def commit_time(moment: datetime) -> str:
    """A record's `updated_at` in the commit `time` format (UTC, microseconds, `Z`)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Located:
    """Where an entry's message is stored, and what the entry points at."""

    blob: str
    line: int
    parent: str | None
    size: int


class ConversationLog:
    """A cached view of one log: the current record, its head commit and its entry index."""

    def __init__(self, log: Log | ObjectLog) -> None:
        self.log: Any = log
        """A log file, or a commit chain on object storage (`ObjectLog`: read with `since`)."""
        self._reset()

    def _reset(self) -> None:
        self.ino: int | None = None
        self.end = 0
        self.head: Commit | None = None
        self._head_line = b""
        self.record_json: dict[str, Any] | None = None
        self.is_conversation: bool | None = None  # None until a first commit is seen
        self.entries: dict[str, Located] = {}
        self.blob_lines: dict[str, int] = {}
        self.written: ConversationRecord | None = None
        """The record this process last wrote here (`FileConversationStore.save` reads it back from
        memory); forgotten with everything else when the file is found replaced or removed."""

    @property
    def name(self) -> str:
        return self.log.session

    @property
    def exists(self) -> bool:
        return self.head is not None

    def record(self) -> ConversationRecord | None:
        """A fresh copy of the current record (callers may mutate it)."""
        return record_from_json(self.record_json) if self.record_json is not None else None

    def owned_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record of `conversation_id`, after checking this log holds that conversation."""
        return self.record() if self.owned_revision(conversation_id) is not None else None

    def owned_revision(self, conversation_id: str) -> tuple[str, str | None] | None:
        """(revision, head id) of `conversation_id`'s record, checked as `owned_record` checks it but
        without building the record: what a save compares, at a fraction of a validation."""
        if self.head is None:
            return None
        if not self.is_conversation or self.record_json is None:
            raise ConversationNameTaken(
                f"conversation id {conversation_id!r} is taken: this store has a plain session named "
                f"{self.name!r} (not a conversation), so the conversation cannot be stored under that name; "
                "choose another conversation_id (or rename the session with `session fork` and delete it)"
            )
        if self.record_json["conversation_id"] != conversation_id:
            raise ConversationNameTaken(
                f"conversation id {conversation_id!r} is taken: session {self.name!r} holds conversation "
                f"{self.record_json['conversation_id']!r}; choose another conversation_id"
            )
        revision, head_id = self.record_json.get("revision"), self.record_json.get("head_id")
        if isinstance(revision, str) and (head_id is None or isinstance(head_id, str)):
            return revision, head_id
        record = self.record()  # not a record this version wrote: validating it says what is wrong
        return (record.revision, record.head_id) if record is not None else None

    # -- reading ------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the view up to date with the file: parse only what was appended since the last read."""
        if not isinstance(self.log, Log):
            self._refresh_chain()
            return
        try:
            fd = os.open(self.log.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            self._reset()
            return
        try:
            st = os.fstat(fd)
            if self.head is not None and (
                st.st_ino != self.ino
                or st.st_size < self.end
                or os.pread(fd, len(self._head_line), self.head.offset) != self._head_line
            ):
                self._reset()  # deleted and recreated (or rewritten): read it again from the start
            self.ino = st.st_ino
            if self.is_conversation is None and st.st_size > self.end:
                self._consume(_first_line(fd, st.st_size))  # a plain session is never read past it
            if self.is_conversation and st.st_size > self.end:
                self._consume(os.pread(fd, st.st_size - self.end, self.end))
        finally:
            os.close(fd)

    def _refresh_chain(self) -> None:
        """`refresh` on object storage (`ObjectLog.since`): one listing, and one read per new commit."""
        if self.is_conversation is False:
            return  # a plain session's first commit decided it (sessions are not removed there)
        fresh = self.log.since(self.head)
        if fresh is None:  # the commit we held is gone: read the chain again from the start
            self._reset()
            fresh = self.log.since(None) or []
        for commit, line in fresh:
            self.apply(commit, line)
            if self.is_conversation is False:
                return

    def _consume(self, data: bytes) -> None:
        """Index the whole lines of `data` (read at `self.end`); a torn or unverifiable last line waits."""
        pos = 0
        while (stop := data.find(b"\n", pos)) != -1:
            line = data[pos:stop]
            commit = parse_line(line, self.name, self.end)
            if commit is None:
                if not data[stop + 1 :]:
                    return  # the last line is a torn tail: not data, the next writer cuts it
                raise CorruptLogError(
                    f"log of session {self.name!r} is damaged at byte {self.end}: run `session fsck`"
                )
            self.apply(commit, line + b"\n")
            if self.is_conversation is False:
                return
            pos = stop + 1

    def apply(self, commit: Commit, line: bytes) -> None:
        """Index one commit that follows the current head (read back, or just appended by us)."""
        head = self.head
        if commit.parent != (head.id if head else None) or commit.seq != (head.seq + 1 if head else 1):
            raise CorruptLogError(
                f"log of session {self.name!r} breaks its hash chain at seq {commit.seq}: run `session fsck`"
            )
        self.head, self._head_line, self.end = commit, line, commit.offset + len(line)
        record = commit.extra.get(RECORD)
        if self.is_conversation is None:
            self.is_conversation = record is not None
        if not self.is_conversation:
            return
        if record is None:
            raise InvalidSessionName(
                f"session {self.name!r} holds a conversation but commit {commit.seq} was not written by "
                "FileConversationStore: check it out with `session checkout` to a conversation commit"
            )
        self.record_json = record
        ids: list[str] = commit.extra.get(IDS, [])
        sizes = commit.sizes
        if commit.is_reset:
            placed = [
                (blob, line)
                for blob, n in zip(commit.blobs, commit.extra[COUNTS], strict=True)
                for line in range(n)
            ]
            first = None
        else:
            placed = [(commit.blob or "", line) for line in range(len(ids))]
            first = commit.extra.get(AFTER)
        parents = [first, *ids[:-1]] if ids else []
        for entry_id, (blob, line), parent, size in zip(ids, placed, parents, sizes, strict=True):
            self.entries[entry_id] = Located(blob, line, parent, size)
            if line >= self.blob_lines.get(blob, 0):
                self.blob_lines[blob] = line + 1

    def chain(self, head_id: str | None, limit: int | None = None) -> list[tuple[str, Located]]:
        """The entries up to `head_id`, oldest first (the last `limit` only); `KeyError` if one is unknown."""
        out: list[tuple[str, Located]] = []
        entry_id = head_id
        while entry_id is not None and (limit is None or len(out) < limit):
            located = self.entries[entry_id]
            out.append((entry_id, located))
            entry_id = located.parent
        out.reverse()
        return out


def _first_line(fd: int, size: int) -> bytes:
    """The bytes of the file's first line, newline included (all of them if it has none)."""
    data, chunk = b"", 4096  # a commit line is usually far shorter; a long one doubles the reads
    while len(data) < size and b"\n" not in data:
        more = os.pread(fd, chunk, len(data))
        if not more:
            break  # the file shrank meanwhile
        data, chunk = data + more, chunk * 2
    cut = data.find(b"\n")
    return data if cut == -1 else data[: cut + 1]


def segments(chain: list[tuple[str, Located]]) -> list[tuple[str, int, int]]:
    """`chain` as runs of consecutive lines of one blob: (blob, start line, stop line)."""
    runs: list[tuple[str, int, int]] = []
    for _, loc in chain:
        if runs and runs[-1][0] == loc.blob and runs[-1][2] == loc.line:
            runs[-1] = (loc.blob, runs[-1][1], loc.line + 1)
        else:
            runs.append((loc.blob, loc.line, loc.line + 1))
    return runs
