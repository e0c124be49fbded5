"""The conversation index: `list_conversations` equals pydantic-ai's in-memory store, costs O(limit)
head reads, survives failed saves, and is derivable from the logs (check, rebuild)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.conversation_store import ConversationRecord, InMemoryConversationStore

from helpers.messages import tagged_turn
from sessionstore import FileConversationStore
from sessionstore.integrations.conversation_index import (
    INDEX_FILE,
    ConversationIndex,
    check_index,
    rebuild_index,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def listed(store: object, scope: str | None = None, limit: int | None = None) -> list[tuple[str, str | None]]:
    records = asyncio.run(store.list_conversations(scope=scope, limit=limit))  # type: ignore[attr-defined]
    return [(r.conversation_id, r.scope) for r in records]


async def _write(store, cid: str, scope: str | None, minute: int) -> None:
    current = await store.read_record(cid)
    record = ConversationRecord(
        conversation_id=cid, head_id=None, scope=scope, updated_at=T0 + timedelta(minutes=minute)
    )
    await store.write_record(record, expected_revision=current.revision if current else None)


async def _delete(store, cid: str) -> None:
    current = await store.read_record(cid)
    if current is not None:
        await store.delete_record(cid, expected_revision=current.revision)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["save", "save", "save", "delete"]),
        st.sampled_from([f"conv-{i}" for i in range(8)]),
        st.sampled_from([None, "alice", "bob"]),
        st.integers(0, 50),  # updated_at in minutes: saves need not arrive in time order
    ),
    max_size=30,
)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, limit=st.none() | st.integers(0, 6))
def test_listing_equals_the_in_memory_store(tmp_path_factory: pytest.TempPathFactory, ops, limit) -> None:
    ours = FileConversationStore(tmp_path_factory.mktemp("s") / "store")
    ref = InMemoryConversationStore()
    for step, (op, cid, scope, minute) in enumerate(ops):
        for store in (ours, ref):
            if op == "save":  # unique times (no ties to order), not in the order they are written
                asyncio.run(_write(store, cid, scope, minute * 100 + step))
            else:
                asyncio.run(_delete(store, cid))
    for scope in (None, "alice", "bob"):
        assert listed(ours, scope, limit) == listed(ref, scope, limit)
    assert check_index(ours.store) == []


def test_out_of_order_times_are_still_listed_newest_first(tmp_path: Path) -> None:
    ours = FileConversationStore(tmp_path / "store")
    ref = InMemoryConversationStore()
    minutes = [30, 10, 50, 20, 40, 5, 45]  # written in this order, so the index is out of time order
    for i, minute in enumerate(minutes):
        for store in (ours, ref):
            asyncio.run(_write(store, f"c{i}", None, minute))
    for limit in (1, 2, 3, None):
        assert listed(ours, limit=limit) == listed(ref, limit=limit)


def test_newest_ten_of_many_reads_about_ten_heads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = FileConversationStore(tmp_path / "store")
    for i in range(120):
        asyncio.run(_write(ours, f"c{i:03d}", "team" if i % 2 else None, i))
    reads: list[str] = []
    real = ConversationIndex.head_record
    monkeypatch.setattr(ConversationIndex, "head_record", lambda self, n: reads.append(n) or real(self, n))
    assert [cid for cid, _ in listed(ours, limit=10)] == [f"c{i:03d}" for i in range(119, 109, -1)]
    assert len(reads) == 10  # one head line per record returned: O(limit), not O(conversations)
    reads.clear()
    assert [cid for cid, _ in listed(ours, "team", limit=3)] == ["c119", "c117", "c115"]
    assert len(reads) == 3  # other scopes are skipped on the index line alone


def test_a_failed_save_after_its_index_line_lists_the_stored_record(tmp_path: Path) -> None:
    ours = FileConversationStore(tmp_path / "store")
    asyncio.run(_write(ours, "a", None, 1))
    asyncio.run(_write(ours, "b", None, 2))
    head = ours.store.log("a").head()
    assert head is not None
    ours.index.note("a", time="2027-01-01T00:00:00.000000Z", scope="zzz", commit="f" * 64)  # never landed
    assert listed(ours) == [("b", None), ("a", None)]  # the truth (a's head) decides, in its own time
    assert "listed at commit fffffff" in "\n".join(check_index(ours.store))
    assert rebuild_index(ours.store) == 2 and check_index(ours.store) == []


def test_the_index_is_derived_from_the_logs(tmp_path: Path) -> None:
    ours = FileConversationStore(tmp_path / "store")
    for i in range(5):
        asyncio.run(_write(ours, f"c{i}", "s" if i % 2 else None, i))
    ours.store.session("plain").append(tagged_turn(0, 0))  # a plain session is no conversation
    before = listed(ours, limit=3)
    path = ours.store.root / INDEX_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))  # lost lines (a crash on a file system without ordering)
    problems = check_index(ours.store)
    assert len(problems) == 3 and all("is missing" in p for p in problems)
    rebuild_index(ours.store)
    assert check_index(ours.store) == [] and listed(ours, limit=3) == before
    path.unlink()  # no index at all (a store written before it): rebuilt on first use
    assert listed(FileConversationStore(ours.store.root), limit=3) == before
    assert path.exists()


def test_concurrent_writers_keep_the_running_maximum(tmp_path: Path) -> None:
    root = tmp_path / "store"
    FileConversationStore(root)

    def writer(k: int) -> None:
        store = FileConversationStore(root)  # its own instance: its own file descriptors and locks
        for i in range(15):
            asyncio.run(_write(store, f"w{k}-{i}", None, (i * 7 + k * 3) % 40))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fresh = FileConversationStore(root)
    entries = [e for e in (fresh.store.root / INDEX_FILE).read_bytes().splitlines() if e]
    running = ""
    for raw in entries:
        entry = orjson.loads(raw)
        running = max(running, entry["u"])
        assert entry["m"] == running
    everything = listed(fresh)
    assert len(everything) == 45 and check_index(fresh.store) == []
    for limit in (1, 5, 20):
        assert listed(fresh, limit=limit) == everything[:limit]


def test_a_writer_reads_back_what_others_appended_or_rebuilt_since_its_own_line(tmp_path: Path) -> None:
    """Each index remembers its own last line (no read-back while the file is still that); another
    instance's line, or a rebuild (a new file), is read before the next running maximum."""
    root = tmp_path / "store"
    a, b = FileConversationStore(root), FileConversationStore(root)
    asyncio.run(_write(a, "c1", None, 30))
    asyncio.run(_write(b, "c2", None, 50))  # after a's line: a must read it
    asyncio.run(_write(a, "c3", None, 10))
    asyncio.run(_write(a, "c4", None, 20))  # a's own line is the last: remembered
    b.index.rebuild()  # a new file, with the entries in time order
    asyncio.run(_write(a, "c5", None, 5))
    entries = [orjson.loads(e) for e in (root / INDEX_FILE).read_bytes().splitlines() if e]
    running = ""
    for entry in entries:
        running = max(running, entry["u"])
        assert entry["m"] == running
    assert entries[-1]["n"] == "c5" and entries[-1]["m"] == max(e["u"] for e in entries)
    assert [cid for cid, _ in listed(a)] == ["c2", "c1", "c4", "c3", "c5"]
