"""One contract suite over every backend (plumbing/backend.py): the directory, obstore's in-memory
store, and S3 through a real S3 API server (moto) on 127.0.0.1.

What every caller relies on: blobs verify on every read, a racing writer gets `StaleSessionError`
and changes nothing, refs are write-once, and replay starts at the newest checkpoint.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore.errors import CorruptLogError, CorruptObjectError, ImmutableRefError, StaleSessionError
from sessionstore.plumbing.backend import Backend
from sessionstore.plumbing.bucket import Bucket
from sessionstore.plumbing.commits import Commit, make_line
from sessionstore.plumbing.file_backend import FileBackend
from sessionstore.plumbing.object_logs import flush_hints
from sessionstore.plumbing.object_storage import ObjectBackend, open_url
from sessionstore.plumbing.objects import hash_bytes

BACKENDS = ["file", "memory", "s3"]


def _file_backend(root: Path) -> FileBackend:
    for sub in ("objects", "logs", "refs/checkpoints", "locks"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return FileBackend(root)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "file":
        return _file_backend(tmp_path / "store")
    if request.param == "memory":
        from obstore.store import MemoryStore

        return ObjectBackend(Bucket(MemoryStore(), "memory:///"))
    server = request.getfixturevalue("s3_env")
    return open_url(f"s3://{server.bucket()}/team/store")


def _overwrite(backend: Any, key: str, data: bytes) -> None:
    """Put `data` where the store keeps `key` (relative to its root), bypassing every check: damage."""
    if isinstance(backend, FileBackend):
        path = backend.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    else:
        backend.bucket.put(key, data)


def _commit(backend: Backend, session: str, parent: Commit | None, text: bytes, **extra: Any) -> Commit:
    oid = backend.objects.write(text)
    fields: dict[str, Any] = {"sizes": [1], **extra}
    reset = "blobs" in extra
    count = 1 if reset else (parent.count if parent else 0) + 1
    line, body = make_line(parent=parent, kind="compaction" if reset else "turn", blob=oid, count=count,
                           tokens=count, usage=None, extra=fields)  # fmt: skip
    return backend.log(session).append(line, body, parent)


def _chain(backend: Backend, session: str, n: int) -> list[Commit]:
    out: list[Commit] = []
    for i in range(n):
        out.append(_commit(backend, session, out[-1] if out else None, f"turn {i}\n".encode()))
    return out


# -- blobs ------------------------------------------------------------------------------------------


def test_blob_round_trip_is_idempotent_and_listed(backend: Backend) -> None:
    data = b'{"kind":"request"}\n' * 50
    oid = backend.objects.write(data)
    assert oid == hash_bytes(data)
    assert backend.objects.write(data) == oid  # a second write of the same bytes stores nothing new
    assert backend.objects.read(oid) == data
    assert backend.objects.exists(oid)
    assert list(backend.objects) == [oid]
    assert not backend.objects.exists(hash_bytes(b"other"))


def test_a_missing_blob_is_named(backend: Backend) -> None:
    oid = hash_bytes(b"never written")
    with pytest.raises(CorruptObjectError, match=f"object {oid[:12]} is missing"):
        backend.objects.read(oid)


def test_every_read_verifies_the_sha256(backend: Backend) -> None:
    good, bad = backend.objects.write(b"good\n"), backend.objects.write(b"will be damaged\n")
    _overwrite(backend, f"objects/{bad[:2]}/{bad[2:]}", b"will be damagee\n")  # same size, one byte
    with pytest.raises(CorruptObjectError, match=f"object {bad[:12]} is corrupt"):
        backend.objects.read(bad)
    decoded: list[Any] = []
    with pytest.raises(CorruptObjectError, match=bad[:12]):
        backend.objects.load([good, bad], decoded.append)
    assert decoded == []  # decode never saw bytes that do not verify
    assert backend.objects.load([good], lambda blobs: blobs) == [b"good\n"]


def test_unverified_reads_return_the_bytes_as_found_and_name_a_missing_blob(backend: Backend) -> None:
    """`read_unverified_many` (what `session search` reads, verifying only blobs with a hit): the
    bytes in order, a damaged blob's as they are, a missing one named."""
    good, bad = backend.objects.write(b"good\n"), backend.objects.write(b"will be damaged\n")
    _overwrite(backend, f"objects/{bad[:2]}/{bad[2:]}", b"will be damagee\n")
    damaged = b"will be damagee\n"
    assert backend.objects.read_unverified_many([bad, good, bad]) == [damaged, b"good\n", damaged]
    assert backend.objects.read_unverified_many([]) == []
    gone = hash_bytes(b"never written")
    with pytest.raises(CorruptObjectError, match=f"object {gone[:12]} is missing"):
        backend.objects.read_unverified_many([good, gone])


def test_a_blob_whose_check_fails_is_not_stored(backend: Backend) -> None:
    def refuse(data: bytes) -> None:
        raise ValueError("undecodable")

    with pytest.raises(ValueError, match="undecodable"):
        backend.objects.write_in_background(b"bad turn\n", refuse)
    assert list(backend.objects) == []
    writing = backend.objects.write_in_background(b"good turn\n", lambda data: None)
    assert writing.result() == writing.oid == hash_bytes(b"good turn\n")
    assert backend.objects.read(writing.oid) == b"good turn\n"


# -- commit chains ----------------------------------------------------------------------------------


def test_a_chain_reads_back_verified(backend: Backend) -> None:
    made = _chain(backend, "s", 4)
    log = backend.log("s")
    assert log.exists() and not backend.log("other").exists()
    head = log.head()
    assert head is not None and head.id == made[-1].id and head.seq == 4
    commits, end = log.scan(since_reset=False)
    assert [c.id for c in commits] == [c.id for c in made]
    assert end == made[-1].end
    assert log.read_at(made[1].offset).id == made[1].id
    assert [c.id for c in log.scan(since_reset=False, end=made[2].end)[0]] == [c.id for c in made[:3]]
    assert backend.sessions() == ["s"]


def test_a_racing_writer_gets_the_stale_error_and_changes_nothing(backend: Backend) -> None:
    base = _chain(backend, "s", 2)[-1]
    ours = _commit(backend, "s", base, b"ours\n")
    line, body = make_line(parent=base, kind="turn", blob=None, count=3, tokens=3, usage=None, extra={})
    with pytest.raises(StaleSessionError, match="'s'"):
        backend.log("s").append(line, body, base)  # another writer that loaded the same head
    head = backend.log("s").head()
    assert head is not None and head.id == ours.id
    assert len(backend.log("s").scan(since_reset=False)[0]) == 3


def test_of_eight_threads_racing_for_one_seq_one_wins(backend: Backend) -> None:
    base = _chain(backend, "s", 1)[-1]
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def race(i: int) -> None:
        line, body = make_line(parent=base, kind="turn", blob=None, count=2, tokens=2, usage=None,
                               extra={"writer": i})  # fmt: skip
        log = backend.log("s")
        start.wait()
        try:
            with backend.exclusion.session("s", 10):
                log.append(line, body, base)
            outcomes.append(f"won {i}")
        except StaleSessionError:
            outcomes.append("stale")

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("stale") == 7
    head = backend.log("s").head()
    assert head is not None and head.seq == 2 and f"won {head.extra['writer']}" == winners[0]


def test_a_flipped_byte_in_a_commit_is_damage_not_history(backend: Backend) -> None:
    made = _chain(backend, "s", 3)
    if isinstance(backend, FileBackend):
        path = backend.root / "logs" / "s.jsonl"
        data = bytearray(path.read_bytes())
        data[made[1].offset + 20] ^= 1
        path.write_bytes(bytes(data))
    else:
        key = backend.log("s").key(2)
        data = bytearray(backend.bucket.get(key))
        data[20] ^= 1
        _overwrite(backend, key, bytes(data))
    with pytest.raises(CorruptLogError):
        backend.log("s").scan(since_reset=False)


# -- checkpoint refs and replay ---------------------------------------------------------------------


def test_refs_are_write_once(backend: Backend) -> None:
    made = _chain(backend, "s", 2)
    ref = backend.refs.create("s", 1, made[0].id, made[0].offset)
    with pytest.raises(ImmutableRefError, match="checkpoints/s/1 already exists"):
        backend.refs.create("s", 1, made[1].id, made[1].offset)
    assert backend.refs.read("s", 1) == ref
    assert backend.refs.list("s") == [ref]
    assert backend.refs.sessions() == ["s"]
    with pytest.raises(LookupError):
        backend.refs.read("s", 2)


def test_a_malformed_ref_is_named(backend: Backend) -> None:
    _overwrite(backend, "refs/checkpoints/s/1", b"not a ref\n")
    with pytest.raises(CorruptObjectError, match="checkpoints/s/1 is malformed"):
        backend.refs.read("s", 1)


def test_replay_starts_at_the_newest_checkpoint(backend: Backend) -> None:
    made = _chain(backend, "s", 5)
    for k in (1, 2):  # two compactions, each a reset point with its ref
        whole = backend.objects.write(f"summary {k}\n".encode())
        made.append(
            _commit(backend, "s", made[-1], f"summary {k}\n".encode(), blobs=[whole], tier=2, checkpoint=k)
        )
        backend.refs.create("s", k, made[-1].id, made[-1].offset)
        made.extend(_chain_after(backend, "s", made[-1], 3))
    counter = getattr(backend, "bucket", None)
    flush_hints()  # the last append's head hint: written in the background, not part of the replay
    before = dict(counter.requests) if counter else {}
    commits, end = backend.log("s").scan(since_reset=True)
    if counter:  # object storage: the commits after the newest checkpoint, never the whole log
        spent = {k: n - before.get(k, 0) for k, n in counter.requests.items() if n != before.get(k, 0)}
        assert spent == {"get": 4 + 1, "list": 2}  # the ref and the 4 commits from it; refs and commits
    assert [c.id for c in commits] == [c.id for c in made[-4:]]
    assert commits[0].is_reset and end == made[-1].end
    assert backend.log("s").read_at(backend.refs.read("s", 1).offset).id == made[5].id
    # a replay to an older commit starts at the checkpoint before it
    older, _ = backend.log("s").scan(since_reset=True, end=made[7].end)
    assert [c.id for c in older] == [c.id for c in made[5:8]]


def _chain_after(backend: Backend, session: str, parent: Commit, n: int) -> list[Commit]:
    out = [parent]
    for i in range(n):
        out.append(_commit(backend, session, out[-1], f"after {parent.seq} {i}\n".encode()))
    return out[1:]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blobs=st.lists(st.binary(max_size=200), min_size=1, max_size=6))
def test_any_bytes_read_back_as_written(blobs: list[bytes]) -> None:
    from obstore.store import MemoryStore

    backend = ObjectBackend(Bucket(MemoryStore(), "memory:///"))
    oids = [backend.objects.write(b) for b in blobs]
    assert backend.objects.load(oids, list) == blobs
    assert set(backend.objects) == set(oids)


def test_a_reader_catches_up_with_the_commits_after_the_one_it_holds() -> None:
    """`ObjectLog.since` (FileConversationStore's refresh on object storage): the new commits with their
    lines, verified and chained; None once the commit it holds is gone or no longer followed."""
    from obstore.store import MemoryStore

    backend = ObjectBackend(Bucket(MemoryStore(), "memory:///"))
    chain = _chain(backend, "s", 4)
    log = backend.log("s")
    got = log.since(None)
    assert got is not None and [c.id for c, _ in got] == [c.id for c in chain]
    assert all(line == backend.bucket.get(log.key(c.seq)) for c, line in got)
    assert [c.id for c, _ in log.since(chain[1]) or []] == [c.id for c in chain[2:]]
    assert log.since(chain[3]) == []
    log.remove()
    assert log.since(chain[1]) is None  # removed
    _chain(backend, "s", 3)
    assert log.since(chain[1]) is None  # written again: seq 3 does not follow the commit held
