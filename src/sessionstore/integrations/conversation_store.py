"""`FileConversationStore`: pydantic-ai's `ConversationStore` on the session store's plumbing.

    store = FileConversationStore(".sessions")
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    result = await agent.run(prompt, conversation=conversation)
    await store.save(result)

**One conversation, one session.** A conversation is stored as the session named after its id: the id
itself when it is a valid session name, else `c-` + the first 32 hex digits of its sha256 (the real id
is kept in the record). So it shows in `session list/log/show`, and `fsck`/`gc` cover it. An id whose
session name is already used by a plain session or another conversation is refused with
`ConversationNameTaken`, which is both an `InvalidSessionName` and a pydantic-ai `UserError` (so a UI
adapter reports the caller's mistake, not a failure worth retrying: retrying cannot help).

**Text UTF-8 cannot store.** A lone surrogate (`"\\ud800"`) in an id, a scope or a message is refused
with `UnstorableText` (a `UserError` naming the conversation and the fix) before anything is written.
(`InMemoryConversationStore` keeps such strings, since it never encodes them; a file cannot.)

**Values come back in their JSON form**, as `ModelMessagesTypeAdapter` gives them (a `datetime` or
model tool return as a string or dict). `save` compares messages with the stored ones as objects and as
stored JSON lines, so a hand-built `Conversation` over its saved history extends it, not a new branch.

**Listing** (`list_conversations`) reads the conversation index (`conversation_index`): O(limit) head
lines, not every conversation.

**One save, one commit.** Each `write_record` appends one commit whose `conversation` field holds the
whole `ConversationRecord` (head, usage, deferred requests, scope, fork origin, branches, revision) and
whose messages are an ordinary session blob (JSONL of `ModelMessage`s). Entry ids live in the commit:
- `turn`: the new head extends the previous one. `blob` holds the new messages, `ids` their entry ids
  (line for line), `after` the entry the first one follows. A save that adds no message (or a branch
  to the current head) is a `turn` without a blob.
- `checkout` (branch, rewritten history) and `fork` (first commit of a conversation whose history
  starts elsewhere): a reset point. `blobs` concatenate to the whole history, `ids` name its entries
  in order, `counts` give the lines per blob. Whole blobs are reused; a history cut inside a blob gets a
  new blob of that blob's leading lines (a byte slice, so nothing is re-encoded). Messages the history
  adds form one more blob. `target` is the commit the history was cut from (this log's previous head,
  or the source's head for a fork); `from` names the source session of a fork.
So a session replay of the log always yields the conversation's current history, and each log is
self-contained: the entries its records (heads and `branches`) reach are all indexed by its own lines,
which is what lets `delete` remove a log without breaking a fork of it.

**Atomicity and concurrency.** Under the per-conversation lock (`store.lock(name)`), a write re-reads
the log, compares the stored revision (raising pydantic-ai's `ConversationConflict`), writes the blobs,
then appends and fsyncs the commit line: the line is the commit point, so a crash leaves the record and
its entries both visible or neither (at most an unreferenced blob, which `gc` collects). Readers take
no lock; each log is read incrementally and cached per `FileConversationStore`.

**Delete** removes the conversation's log file (under its lock, directory fsynced): the record is gone
from `load`, `list_conversations` and `session list` at once. Its blobs stay until `session gc` finds no
log reaching them past its grace period (14 days), since a fork or a concurrent save may share one:
don't rely on `delete` alone to erase messages before that `gc`.

**On object storage** (`FileConversationStore("s3://bucket/prefix")`, DESIGN §13) the same commits
are objects: the lock is the conditional create of the next commit (a racing save on another machine
gets `ConversationConflict`, as behind the file lock), a view reads only the commits after the one it
holds, and `list_conversations` reads the head hints (`HintedIndex`: O(conversations / 1000)
requests; another process's save still in flight may be missing for a moment). `delete` is refused
there (`DeleteNotSupported`, nothing changed): removing commits one by one could race a save.

**Async.** Every primitive runs its file work in a worker thread (`asyncio.to_thread`; `save` reads
the record it wrote last from memory); one mutex per instance serializes them, and the file lock
serializes writers across threads and processes.

`read_history` is overridden: one walk of the in-memory index, each blob read once, one validation.
Records round-trip through pydantic's JSON too (values under `Any`, such as deferred-call metadata,
come back as their JSON form). `Session.append`/`compact`/`checkout` refuse a conversation's session; a
foreign commit written behind both APIs' backs is refused on the next read.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai.agent import AgentRunResult
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

from ..accounting.settings import Settings
from ..errors import InvalidSessionName, StaleSessionError
from ..plumbing import codec
from ..plumbing.commits import utc_now
from ..plumbing.fsutil import fsync_dir
from ..plumbing.names import check_name
from ..porcelain.session.writer import write_commit
from ..porcelain.store import SessionStore
from .conversation_commits import reset_commit, turn_commit
from .conversation_index import ConversationIndex, HintedIndex
from .conversation_records import (
    RECORD,
    ConversationLog,
    ConversationNameTaken,
    DeleteNotSupported,
    Located,
    UnstorableText,
    commit_time,
    record_from_json,
    record_to_json,
    segments,
    storable,
    unstorable,
    warm_up,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["ConversationNameTaken", "FileConversationStore", "UnstorableText", "session_name"]

T = TypeVar("T")

_saving: contextvars.ContextVar[tuple[str, str | None, Conversation] | None] = contextvars.ContextVar(
    "_saving", default=None
)
"""(conversation id, revision, conversation) while `FileConversationStore.save` runs pydantic-ai's save."""


def session_name(conversation_id: str) -> str:
    """The session a conversation is stored as: its id when valid as a name, else `c-` + sha256 prefix."""
    try:
        return check_name(conversation_id)
    except InvalidSessionName:
        return "c-" + hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class FileConversationStore(ConversationStore):
    """A durable `ConversationStore`: each conversation is a session of a `SessionStore`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | SessionStore | None = None,
        *,
        create: bool = True,
        settings: Settings | None = None,
    ) -> None:
        self.store = (
            path
            if isinstance(path, SessionStore)
            else SessionStore.open(path, create=create, settings=settings, warm=False)  # warm_up below
        )
        self._logs: dict[str, ConversationLog] = {}
        self._mutex = threading.Lock()
        self.index: ConversationIndex | HintedIndex = (
            HintedIndex(self.store) if self.store.on_object_storage else ConversationIndex(self.store)
        )
        warm_up()  # a web server's first request should not pay for what every process loads once

    def __repr__(self) -> str:
        return f"FileConversationStore({str(self.store.root)!r})"

    async def save(
        self, conversation: Conversation | AgentRunResult[Any], *, scope: str | None = None
    ) -> list[ConversationEntry]:
        """pydantic-ai's `save`, except that messages are compared with the stored ones in their stored
        (JSON) form: a hand-built `Conversation` over the history it loaded (whose tool returns may be
        the original datetimes or models, where the store gives back their JSON form) extends the
        stored history instead of storing it again as a new branch."""
        target = conversation.conversation if isinstance(conversation, AgentRunResult) else conversation
        # The record this instance wrote at the conversation's revision is read from memory (no hop):
        # a writer that moved the file since is refused by `write_record`'s check under the lock. The
        # conversation goes along for `read_history`, which pydantic-ai's save calls only when the
        # conversation's stored boundary no longer holds (see `_as_stored`): no scan of the history
        # here, so what this override adds to a save is O(turn).
        token = _saving.set((target.conversation_id, target.revision, target))
        try:
            return await super().save(conversation, scope=scope)
        finally:
            _saving.reset(token)

    def _as_stored(
        self, view: ConversationLog, chain: list[tuple[str, Located]], stored: list[ModelMessage],
        mine: list[ModelMessage],
    ) -> list[ModelMessage]:  # fmt: skip
        """`stored` (the messages of `chain`), where each one that differs from the caller's message at
        its place only in its JSON form (the app's datetime or model where the store gives back their
        JSON) is replaced by the caller's own object: pydantic-ai's save, which compares with `==`,
        then extends the stored history instead of storing it again as a branch, and branches only
        where a message really differs, as with its in-memory store."""
        differ = [i for i, (a, b) in enumerate(zip(stored, mine, strict=False)) if a != b]
        if not differ:
            return stored
        lines = self._stored_lines(view, chain)
        out = list(stored)
        for i in differ:
            try:
                encoded = codec.encode_unchecked([mine[i]])
            except ValueError:
                break  # not storable: pydantic-ai branches here and the write names the problem
            if encoded[:-1] != lines[i]:
                break  # really rewritten from here on: pydantic-ai branches at the first difference
            out[i] = mine[i]
        return out

    def _stored_lines(self, view: ConversationLog, chain: list[tuple[str, Located]]) -> list[bytes]:
        """The stored JSON line of each entry of `chain` (each blob read and verified once)."""
        runs = segments(chain)
        oids = list(dict.fromkeys(blob for blob, _, _ in runs))
        blobs = {oid: self.store.objects.read(oid).split(b"\n") for oid in oids}
        return [line for blob, a, b in runs for line in blobs[blob][a:b]]

    # -- the five primitives, plus read_history -----------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        view = self._logs.get(session_name(conversation_id))
        written = view.written if view is not None else None
        saving = _saving.get()
        if written is not None and saving is not None and saving[:2] == (conversation_id, written.revision):
            return dataclasses.replace(written, branches=list(written.branches))  # see `save`
        return await asyncio.to_thread(self._locked, self._sync_read_record, conversation_id)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        return await asyncio.to_thread(self._locked, self._sync_read_records, scope, limit)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await asyncio.to_thread(
            self._locked, self._sync_write_record, record, list(new_entries), expected_revision
        )

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Remove the conversation's log; its blobs stay until `gc` finds no log reaching them."""
        await asyncio.to_thread(self._locked, self._sync_delete_record, conversation_id, expected_revision)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        entries = await asyncio.to_thread(self._locked, self._sync_read_entries, entry_id, 1)
        return entries[-1]

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        if head_id is None or limit == 0:
            return []
        saving = _saving.get()  # inside `save`: compared with the caller's messages (see `_as_stored`)
        # Read only here, on the slow path: messages added meanwhile (pydantic-ai allows it) only
        # lengthen the list; the prefix it is compared by is the one pydantic-ai's save copied.
        mine = list(saving[2].messages) if saving is not None else None
        return await asyncio.to_thread(self._locked, self._sync_read_entries, head_id, limit, mine)

    # -- sync implementations (run in a worker thread, under the instance mutex) --------------------

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        with self._mutex:
            return fn(*args)

    def _view(self, name: str) -> ConversationLog:
        """The cached view of session `name`, refreshed from disk."""
        view = self._logs.get(name)
        if view is None:
            view = self._logs[name] = ConversationLog(self.store.log(name))
        view.refresh()
        return view

    def _sync_read_record(self, conversation_id: str) -> ConversationRecord | None:
        return self._view(session_name(conversation_id)).owned_record(conversation_id)

    def _sync_read_records(self, scope: str | None, limit: int | None) -> list[ConversationRecord]:
        """The newest records from the conversation index: O(limit) head reads, not a scan of the store."""
        return [record_from_json(data) for data in self.index.newest(scope, limit)]

    def _find(self, entry_id: str) -> ConversationLog:
        """A fresh view whose index has `entry_id`; `KeyError` when no stored conversation reaches it."""
        for view in [v for v in self._logs.values() if entry_id in v.entries]:
            view.refresh()
            if entry_id in view.entries:
                return view
        names = self.store.sessions()
        for gone in self._logs.keys() - set(names):
            del self._logs[gone]
        for name in names:
            if entry_id in (view := self._view(name)).entries:
                return view
        raise KeyError(entry_id)

    def _sync_read_entries(
        self, head_id: str, limit: int | None, mine: list[ModelMessage] | None = None
    ) -> list[ConversationEntry]:
        view = self._find(head_id)
        chain = view.chain(head_id, limit)
        messages = self._messages(view, chain)
        if mine is not None:
            messages = self._as_stored(view, chain, messages, mine)
        return [
            ConversationEntry(id=entry_id, parent_id=loc.parent, message=message)
            for (entry_id, loc), message in zip(chain, messages, strict=True)
        ]

    def _messages(self, view: ConversationLog, chain: list[tuple[str, Located]]) -> list[ModelMessage]:
        """The messages of `chain`: each blob read once (verified on a worker thread), one validation."""
        runs = segments(chain)
        oids = list(dict.fromkeys(blob for blob, _, _ in runs))
        if len(oids) == len(runs) and all(not a and b == view.blob_lines[blob] for blob, a, b in runs):
            return self.store.objects.load(oids, codec.decode)  # whole blobs, in order: the usual case

        def pick(data: list[bytes]) -> list[ModelMessage]:
            lines = {oid: blob.split(b"\n") for oid, blob in zip(oids, data, strict=True)}
            return codec.decode(b"\n".join(lines[blob][a:b]) + b"\n" for blob, a, b in runs)

        return self.store.objects.load(oids, pick)

    def _sync_write_record(
        self, record: ConversationRecord, new_entries: list[ConversationEntry], expected_revision: str | None
    ) -> None:
        cid = record.conversation_id
        name = session_name(cid)
        record_json = storable(cid, record_to_json(record))
        with self.store.lock(name):
            view = self._view_to_write(name, expected_revision)
            current = view.owned_revision(cid)
            if (current[0] if current is not None else None) != expected_revision:
                raise ConversationConflict(cid)
            previous = current[1] if current is not None else None
            extends = record.head_id == (new_entries[-1].id if new_entries else previous) and all(
                entry.parent_id == (new_entries[i - 1].id if i else previous)
                for i, entry in enumerate(new_entries)
            )
            try:
                if extends:  # its blob may still be syncing: `write_commit` waits for `landed`
                    plan = turn_commit(self.store.objects, view, new_entries, previous)
                else:
                    origin = session_name(record.forked_from) if record.forked_from else None
                    find = self._source(cid)
                    plan = reset_commit(self.store.objects, view, record, new_entries, find, origin)
            except (UnicodeEncodeError, codec.UnreadableMessages) as err:  # before any write: nothing stored
                if "surrogate" in str(err):
                    raise unstorable(cid, "a message", err) from None
                raise UnstorableText(f"conversation {cid!r} cannot be saved: {err}") from None
            plan.fields[RECORD] = record_json

            def note(body: dict[str, Any]) -> None:  # the index may run ahead of the log, never behind
                self.index.note(name, time=body["time"], scope=record.scope, commit=body["id"])

            try:
                commit, line = write_commit(
                    view.log, view.head, kind=plan.kind, blob=plan.blob, count=plan.count,
                    tokens=plan.tokens, extra=plan.fields, time=commit_time(record.updated_at),
                    before_append=note, landed=plan.landed, objects=self.store.objects, data=plan.data,
                )  # fmt: skip
            except StaleSessionError:
                raise ConversationConflict(cid) from None
            view.apply(commit, line)
            if not self.store.on_object_storage:
                view.ino = os.lstat(view.log.path).st_ino
            view.written = record

    def _view_to_write(self, name: str, expected_revision: str | None) -> ConversationLog:
        """The view a save builds on. On object storage, when this instance wrote the revision the save
        expects and has seen nothing since, it is used as it is (no listing): if another process saved
        meanwhile, the conditional create of the next commit fails and the save is the
        `ConversationConflict` a refresh would have found."""
        view = self._logs.get(name)
        if (
            self.store.on_object_storage
            and view is not None
            and view.written is not None
            and view.record_json is not None
            and view.written.revision == expected_revision == view.record_json.get("revision")
        ):
            return view
        return self._view(name)

    def _source(self, cid: str) -> Callable[[str], ConversationLog]:
        """`_find` for the history of conversation `cid`'s reset point: a source a delete released
        meanwhile makes the save a conflict."""

        def find(entry_id: str) -> ConversationLog:
            try:
                return self._find(entry_id)
            except KeyError:
                raise ConversationConflict(cid) from None

        return find

    def _sync_delete_record(self, conversation_id: str, expected_revision: str) -> None:
        name = session_name(conversation_id)
        if self.store.on_object_storage:  # no lock across machines to hold a save off while it deletes
            raise DeleteNotSupported(
                f"conversation {conversation_id!r} cannot be deleted on object storage "
                f"({self.store.root}) yet: removing its commits one by one could race a save on another "
                "machine; nothing was changed: stop using the id, or keep conversations you delete in a "
                "store directory"
            )
        with self.store.lock(name):
            view = self._view(name)
            current = view.owned_record(conversation_id)
            if current is None or current.revision != expected_revision:
                raise ConversationConflict(conversation_id)
            self.index.note_delete(name, time=utc_now())
            view.log.remove()
            fsync_dir(self.store.logs_dir)
            view.refresh()
