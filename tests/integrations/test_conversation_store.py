"""FileConversationStore: sessions on disk, what delete removes, crash atomicity, no event-loop blocking.

Behavioural equivalence with pydantic-ai's in-memory store is in test_conversation_store_stateful.py,
real processes (races, kill -9) in test_conversation_store_processes.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore

from helpers.conversations import run_turn
from helpers.messages import tagged_turn
from helpers.slow_blob import slow_blob_sync
from sessionstore import FileConversationStore
from sessionstore.errors import InvalidSessionName, SessionStoreError
from sessionstore.integrations import conversation_records
from sessionstore.integrations.conversation_records import ConversationLog
from sessionstore.integrations.conversation_store import session_name
from sessionstore.plumbing.logs import Log
from sessionstore.plumbing.names import check_name
from sessionstore.porcelain.session.writer import write_commit


def turns(
    store: FileConversationStore, cid: str, n: int, *, start: Conversation | None = None
) -> Conversation:
    """Run and save `n` turns of conversation `cid`; the last saved conversation."""

    async def go() -> Conversation:
        conversation = start or await store.load(cid) or Conversation(conversation_id=cid)
        for i in range(n):
            result = await run_turn(conversation, f"turn {i}")
            await store.save(result)
            conversation = result.conversation
        return conversation

    return asyncio.run(go())


@pytest.fixture
def cstore(tmp_path: Path) -> FileConversationStore:
    return FileConversationStore(tmp_path / "store")


# -- names -------------------------------------------------------------------------------------------


@given(st.text(min_size=1, max_size=200))
@hsettings(max_examples=200, deadline=None)
def test_every_conversation_id_maps_to_a_valid_deterministic_session_name(cid: str) -> None:
    name = session_name(cid)
    assert check_name(name) == name and session_name(cid) == name
    try:
        check_name(cid)
    except InvalidSessionName:
        assert name == "c-" + hashlib.sha256(cid.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    else:
        assert name == cid


def test_a_plain_session_of_the_same_name_is_refused(cstore: FileConversationStore) -> None:
    cstore.store.session("taken").append(tagged_turn(0, 0))
    with pytest.raises(InvalidSessionName, match="not a conversation"):
        asyncio.run(cstore.load("taken"))
    with pytest.raises(InvalidSessionName):
        turns(cstore, "taken", 1, start=Conversation(conversation_id="taken"))
    assert [r.conversation_id for r in asyncio.run(cstore.list_conversations())] == []


# -- what the session commands see ---------------------------------------------------------------------


def test_listing_reads_only_the_first_line_of_a_plain_session(
    cstore: FileConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # To learn that a log is not a conversation, its first commit is enough: the whole log was read.
    plain = cstore.store.session("plain")
    for i in range(40):
        plain.append(tagged_turn(0, i))
    turns(cstore, "conv", 1)
    size = plain.log_file.path.stat().st_size
    read: list[int] = []
    real_pread = conversation_records.os.pread

    def counting_pread(fd: int, n: int, at: int) -> bytes:
        data = real_pread(fd, n, at)
        read.append(len(data))
        return data

    monkeypatch.setattr(conversation_records.os, "pread", counting_pread)
    fresh = FileConversationStore(cstore.store)
    assert [r.conversation_id for r in asyncio.run(fresh.list_conversations())] == ["conv"]
    first_line = plain.log()[-1].size
    assert sum(read) < size and first_line < size // 10


def test_saves_are_turn_commits_and_sessions_replay_the_conversation(cstore: FileConversationStore) -> None:
    last = turns(cstore, "chat", 3)
    session = cstore.store.session("chat")
    assert [c.kind for c in session.log()] == ["turn"] * 3
    assert session.history == last.messages and session.persisted_count == 6
    assert [c.count for c in session.log()] == [6, 4, 2]
    assert cstore.store.info("chat").count == 6
    assert cstore.store.fsck().ok


def test_branch_and_fork_are_reset_points_that_share_blobs(cstore: FileConversationStore) -> None:
    last = turns(cstore, "chat", 3)
    branched = asyncio.run(cstore.branch("chat", at=3, expected_revision=last.revision))
    head = cstore.store.session("chat").head
    assert head is not None and head.kind == "checkout" and head.count == 3
    assert cstore.store.session("chat").history == branched.messages == last.messages[:3]
    forked = asyncio.run(cstore.fork("chat", at=2, new_conversation_id="spin-off"))
    fork_head = cstore.store.session("spin-off").head
    assert fork_head is not None and fork_head.kind == "fork" and fork_head.extra["from"] == "chat"
    first_turn = cstore.store.session("chat").log()[-1].blob
    assert fork_head.blobs == [first_turn]  # a whole blob is shared, not copied
    assert cstore.store.session("spin-off").history == forked.messages
    turns(cstore, "chat", 1)  # continues on the branch
    assert cstore.store.session("chat").history[:3] == last.messages[:3]
    assert cstore.store.fsck().ok


def test_read_history_reads_no_entry_one_by_one(
    cstore: FileConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns(cstore, "chat", 4)

    async def refuse(self: Any, entry_id: str) -> Any:
        raise AssertionError("read_entry called")

    monkeypatch.setattr(FileConversationStore, "read_entry", refuse)
    loaded = asyncio.run(cstore.load("chat", limit=3))
    assert loaded is not None and len(loaded.messages) == 3
    assert ConversationStore.read_history is not FileConversationStore.read_history


# -- delete and gc -----------------------------------------------------------------------------------


def test_delete_removes_the_log_and_gc_collects_only_what_no_log_reaches(
    cstore: FileConversationStore,
) -> None:
    turns(cstore, "doomed", 3)
    forked = asyncio.run(cstore.fork("doomed", at=2, new_conversation_id="kept"))
    doomed_blobs = {c.blob for c in cstore.store.session("doomed").log()}
    asyncio.run(cstore.delete("doomed"))
    assert asyncio.run(cstore.load("doomed")) is None
    assert cstore.store.sessions() == ["kept"]
    assert [r.conversation_id for r in asyncio.run(cstore.list_conversations())] == ["kept"]
    young = cstore.store.gc()  # default grace period: nothing is deleted yet
    assert young.removed == [] and young.kept_young == 2
    assert all(cstore.store.objects.exists(b) for b in doomed_blobs if b)
    report = cstore.store.gc(grace_days=0)
    assert len(report.removed) == 2  # the two later turns; the first is the fork's
    reloaded = asyncio.run(FileConversationStore(cstore.store.root).load("kept"))
    assert reloaded is not None and reloaded.messages == forked.messages
    assert cstore.store.fsck().ok


def test_entries_only_a_deleted_conversation_reached_are_gone(cstore: FileConversationStore) -> None:
    turns(cstore, "doomed", 1)
    entries = asyncio.run(cstore.load_entries("doomed"))
    assert entries is not None
    asyncio.run(cstore.delete("doomed"))
    with pytest.raises(KeyError):
        asyncio.run(cstore.read_entry(entries[-1].id))


def test_a_copy_loaded_before_a_delete_cannot_overwrite_the_recreated_conversation(
    cstore: FileConversationStore,
) -> None:
    old = turns(cstore, "again", 1)
    asyncio.run(cstore.delete("again"))
    turns(cstore, "again", 1, start=Conversation(conversation_id="again"))
    with pytest.raises(ConversationConflict):
        turns(cstore, "again", 1, start=old)


# -- atomicity ---------------------------------------------------------------------------------------


def test_a_failure_between_blob_and_commit_line_leaves_the_old_record(
    cstore: FileConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = turns(cstore, "chat", 2)

    def crash(self: Log, *args: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(Log, "append", crash)
    with pytest.raises(OSError):
        turns(cstore, "chat", 1, start=before)
    monkeypatch.undo()
    for store in (cstore, FileConversationStore(cstore.store.root)):
        loaded = asyncio.run(store.load("chat"))
        assert (
            loaded is not None and loaded.messages == before.messages and loaded.revision == before.revision
        )
    assert cstore.store.fsck().ok  # the orphan blob is gc's business, not damage


def test_a_torn_last_line_is_ignored_then_cut_by_the_next_save(cstore: FileConversationStore) -> None:
    before = turns(cstore, "chat", 2)
    log = cstore.store.log("chat").path
    with open(log, "ab") as f:
        f.write(b'{"blob":"half a li')
    fresh = FileConversationStore(cstore.store.root)
    loaded = asyncio.run(fresh.load("chat"))
    assert loaded is not None and loaded.messages == before.messages
    turns(fresh, "chat", 1, start=loaded)
    assert cstore.store.fsck().ok and len(cstore.store.session("chat").history) == 6


def test_another_instance_sees_saves_and_its_stale_copy_conflicts(cstore: FileConversationStore) -> None:
    other = FileConversationStore(cstore.store.root)
    first = turns(cstore, "chat", 1)
    copy = asyncio.run(other.load("chat"))
    turns(cstore, "chat", 1, start=first)
    assert copy is not None
    with pytest.raises(ConversationConflict):
        turns(other, "chat", 1, start=copy)
    reloaded = asyncio.run(other.load("chat"))
    assert reloaded is not None and len(reloaded.messages) == 4


def test_a_save_after_this_instances_own_save_reads_no_file_and_still_sees_another_writer(
    cstore: FileConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The record this instance wrote stands in for the file's while the conversation carries its
    # revision; a writer that moved the file meanwhile is still refused under the lock.
    reads: list[str] = []
    real = FileConversationStore._sync_read_record

    def spy(self: FileConversationStore, cid: str) -> Any:
        reads.append(cid)
        return real(self, cid)

    monkeypatch.setattr(FileConversationStore, "_sync_read_record", spy)
    first = turns(cstore, "chat", 1)
    reads.clear()
    mine = turns(cstore, "chat", 1, start=first)
    assert reads == []  # nothing read from the file: the record came from memory
    other = FileConversationStore(cstore.store.root)
    theirs = asyncio.run(other.load("chat"))
    assert theirs is not None
    turns(other, "chat", 1, start=theirs)
    with pytest.raises(ConversationConflict):
        turns(cstore, "chat", 1, start=mine)
    reloaded = asyncio.run(cstore.load("chat"))
    assert reloaded is not None and len(reloaded.messages) == 6
    turns(cstore, "chat", 1, start=reloaded)
    final = asyncio.run(FileConversationStore(cstore.store.root).load("chat"))
    assert final is not None and len(final.messages) == 8 and cstore.store.fsck().ok


def test_session_writes_to_a_conversation_are_refused(cstore: FileConversationStore) -> None:
    turns(cstore, "chat", 1)
    session = cstore.store.session("chat")
    log = (cstore.store.logs_dir / "chat.jsonl").read_bytes()
    with pytest.raises(SessionStoreError, match="FileConversationStore conversation"):
        session.append(tagged_turn(0, 0))
    with pytest.raises(SessionStoreError, match="FileConversationStore conversation"):
        session.compact()
    assert (cstore.store.logs_dir / "chat.jsonl").read_bytes() == log
    assert asyncio.run(FileConversationStore(cstore.store.root).load("chat")) is not None


def test_a_foreign_commit_in_a_conversation_log_is_refused(cstore: FileConversationStore) -> None:
    """Belt and braces: a line appended behind the store's back (not via Session) is still caught."""
    turns(cstore, "chat", 1)
    log = cstore.store.log("chat")
    with cstore.store.lock("chat"):  # a writer that skipped Session's check: the bare commit writer
        head = log.head()
        assert head is not None
        write_commit(log, head, kind="turn", blob=None, count=head.count, tokens=0, extra={})
    with pytest.raises(InvalidSessionName, match="not written by FileConversationStore"):
        asyncio.run(FileConversationStore(cstore.store.root).load("chat"))


# -- async ---------------------------------------------------------------------------------------------


def test_file_work_never_runs_on_the_event_loop_thread(
    cstore: FileConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[int] = set()
    refresh = ConversationLog.refresh

    def spy(self: ConversationLog) -> None:
        threads.add(threading.get_ident())
        refresh(self)

    monkeypatch.setattr(ConversationLog, "refresh", spy)
    loop_thread: list[int] = []

    async def go() -> None:
        loop_thread.append(threading.get_ident())
        await cstore.save(await run_turn(Conversation(conversation_id="chat"), "hi"))
        await cstore.load("chat")
        await cstore.list_conversations()
        await cstore.delete("chat")

    asyncio.run(go())
    assert threads and loop_thread[0] not in threads


def test_a_saves_line_and_index_note_are_made_while_its_blob_syncs_and_the_line_lands_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionstore.integrations.conversation_index import ConversationIndex

    store = FileConversationStore(tmp_path / "s")
    conversation = Conversation(conversation_id="c", messages=tagged_turn(1, 0))
    asyncio.run(store.save(conversation))
    events: list[str] = []
    slow_blob_sync(monkeypatch, events)
    note = ConversationIndex.note

    def noted(self: ConversationIndex, *args: Any, **kw: Any) -> None:
        events.append("index noted")
        note(self, *args, **kw)

    monkeypatch.setattr(ConversationIndex, "note", noted)
    conversation.messages.extend(tagged_turn(1, 1))
    asyncio.run(store.save(conversation))
    assert events == ["line built", "index noted", "blob synced", "line appended"]
    monkeypatch.undo()
    loaded = asyncio.run(FileConversationStore(tmp_path / "s").load("c"))
    assert loaded is not None and loaded.messages == conversation.messages
