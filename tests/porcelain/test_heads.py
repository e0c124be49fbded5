"""The heads cache behind `session list` (index/sessions.json): exact, stat-validated, never trusted."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers.messages import tagged_turn
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.heads import HEADS_FILE, HeadsCache
from sessionstore.porcelain.layout import SessionInfo
from sessionstore.porcelain.naming import derived_title
from sessionstore.porcelain.store import SessionStore

TESTS = Path(__file__).resolve().parents[1]


def _age(store: SessionStore, seconds: float = 60.0) -> None:
    """Date every log and refs directory `seconds` back: no longer "racily clean", so cacheable."""
    past = time.time() - seconds
    for path in [*store.logs_dir.glob("*.jsonl"), *store.refs.dir.glob("*")]:
        os.utime(path, (past, past))


def _truth(store: SessionStore) -> list[SessionInfo]:
    """What listing gives when every head is read from its log (no cache)."""
    return [
        SessionInfo(i.name, i.head, i.checkpoints, derived_title(store, i.name))
        for i in (store.info(name) for name in store.sessions())
    ]


def _store(tmp_path: Path, names: int = 4) -> SessionStore:
    store = SessionStore.open(tmp_path / "store", warm=False)
    for w in range(names):
        store.session(f"s{w}").append(tagged_turn(w, 0), compact=False)
    _age(store)
    return store


def _cached_listing_reads_no_log(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> list[SessionInfo]:
    def refuse(self: Log) -> None:
        raise AssertionError(f"read the head of {self.session} although it is cached")

    with monkeypatch.context() as patch:
        patch.setattr(Log, "head", refuse)
        return store.infos(derived_title)


def test_the_cache_gives_exactly_what_reading_every_head_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    first = store.infos(derived_title)
    assert first == _truth(store) and (store.root / HEADS_FILE).is_file()
    assert (store.root / HEADS_FILE.parent / ".gitignore").read_bytes() == b"*\n"  # never committed
    assert _cached_listing_reads_no_log(store, monkeypatch) == first  # every head from the cache
    assert store.infos() == [SessionInfo(i.name, i.head, i.checkpoints) for i in first]


def test_appends_by_another_process_are_seen(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.infos(derived_title)
    script = TESTS / "helpers" / "appender.py"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    argv = [sys.executable, str(script), str(store.root), "s1", "7", "2"]
    subprocess.run(argv, env=env, check=True, timeout=60)
    listed = {i.name: i for i in store.infos(derived_title)}
    assert listed["s1"].head == store.log("s1").head() and listed["s1"].head.seq == 3
    assert list(listed.values()) == _truth(store)


def test_a_log_replaced_by_one_of_the_same_size_is_read_again(tmp_path: Path) -> None:
    store = _store(tmp_path)
    before = {i.name: i for i in store.infos(derived_title)}
    a, b = store.log("s2").path, store.log("s3").path
    assert a.stat().st_size == b.stat().st_size  # tagged turns of equal shape: same size
    st = a.stat()
    tmp = a.with_name(".swap")
    shutil.copyfile(b, tmp)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))  # even the same mtime: the inode differs
    os.replace(tmp, a)
    after = {i.name: i for i in store.infos(derived_title)}
    assert after["s2"].head == store.log("s2").head() != before["s2"].head
    assert after["s2"].head.id == before["s3"].head.id


def test_a_log_changing_now_is_not_cached_until_it_settles(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.session("s0").append(tagged_turn(0, 1), compact=False)  # mtime: now
    store.infos(derived_title)
    cached = HeadsCache(store).load()
    assert "s0" not in cached and {"s1", "s2", "s3"} <= cached.keys()
    _age(store)
    store.infos(derived_title)
    assert "s0" in HeadsCache(store).load()


def test_checkpoint_counts_follow_the_refs(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.infos(derived_title)
    session = store.session("s1")
    with store.lock("s1"):
        session.commit_checkpoint(list(session.history), tier=2)
    _age(store)
    listed = {i.name: i for i in store.infos(derived_title)}
    assert listed["s1"].checkpoints == 1 == store.info("s1").checkpoints
    assert list(listed.values()) == _truth(store)


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "directory"])
def test_a_damaged_cache_is_rebuilt_never_an_error(tmp_path: Path, damage: str) -> None:
    store = _store(tmp_path)
    good = store.infos(derived_title)
    path = store.root / HEADS_FILE
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x20
        path.write_bytes(data)
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff not a cache")
    else:
        path.unlink()
        path.mkdir()
    assert HeadsCache(store).load() == {}
    assert store.infos(derived_title) == good == _truth(store)
    if damage != "directory":
        assert HeadsCache(store).load().keys() == {i.name for i in good}  # rewritten, valid again


def test_a_cache_with_a_valid_checksum_but_a_stale_head_is_caught_by_fsck(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.infos(derived_title)
    cache = HeadsCache(store)
    entries = cache.load()
    entries["s2"][1]["id"] = "f" * 64  # as if the cache were wrong while its key still matches
    cache.save(entries)
    report = store.fsck()
    assert not report.ok and any("'s2' is cached at another head" in p for p in report.problems)
    repaired = store.fsck(repair=True)
    assert repaired.ok and any("rebuilt index/sessions.json" in r for r in repaired.repaired)
    assert store.fsck().ok and cache.load()["s2"][1]["id"] == store.log("s2").head().id


def test_fsck_names_a_damaged_cache_and_repair_rebuilds_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.infos(derived_title)
    path = store.root / HEADS_FILE
    path.write_bytes(path.read_bytes()[:-5])
    report = store.fsck()
    assert any("index/sessions.json is damaged" in p for p in report.problems)
    assert store.fsck(repair=True).ok and store.fsck().ok and HeadsCache(store).load()


def test_a_symlinked_index_directory_is_never_written_through(tmp_path: Path) -> None:
    store = _store(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store.root / "index").symlink_to(elsewhere)
    assert store.infos(derived_title) == _truth(store)  # still lists
    assert list(elsewhere.iterdir()) == []
    assert any("index is a symlink" in p for p in store.fsck().problems)


def test_the_cache_payload_is_what_its_header_says(tmp_path: Path) -> None:
    """The format: one header line (magic, the commit fields it holds, sha256 of the payload), then
    the JSON payload; each cached head is every field of its commit."""
    store = _store(tmp_path, names=1)
    store.infos(derived_title)
    header, payload = (store.root / HEADS_FILE).read_bytes().split(b"\n", 1)
    names = ",".join(f.name for f in dataclasses.fields(Commit)).encode()
    assert header == b"sessionstore-heads 2 " + names + b" " + hashlib.sha256(payload).hexdigest().encode()
    (key, fields, refs, checkpoints, title) = orjson.loads(payload)["s0"]
    st = store.log("s0").path.stat()
    assert key == [st.st_size, st.st_mtime_ns, st.st_ino]
    assert Commit(**fields) == store.log("s0").head()
    assert (refs, checkpoints, title) == (None, None, derived_title(store, "s0"))


def test_a_cache_written_for_other_commit_fields_is_not_read(tmp_path: Path) -> None:
    """A cache from a version whose `Commit` had other fields (the header names them) is rebuilt."""
    store = _store(tmp_path, names=2)
    good = store.infos(derived_title)
    path = store.root / HEADS_FILE
    payload = path.read_bytes().split(b"\n", 1)[1]
    fields = ",".join(f.name for f in dataclasses.fields(Commit) if f.name != "usage").encode()
    other = b"sessionstore-heads 2 " + fields + b" "
    path.write_bytes(other + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert HeadsCache(store).load() == {}
    assert store.infos(derived_title) == good == _truth(store)


def test_a_hit_shares_the_cached_fields_and_equals_the_log_head(tmp_path: Path) -> None:
    store = _store(tmp_path, names=3)
    store.infos(derived_title)
    for info in store.infos(derived_title):
        assert info.head == store.log(info.name).head()
        assert isinstance(info, SessionInfo) and info.head.session == info.name


def test_listed_in_session_name_order_as_sessions_sorts(tmp_path: Path) -> None:
    """Sorted by name, not by file name: "a" before "a-b" and "a.b" although "a.jsonl" sorts after
    "a-b.jsonl"; the same order cached or not."""
    store = SessionStore.open(tmp_path / "store", warm=False)
    names = ["a.b", "a-b", "a", "a_b", "B", "a0"]
    for w, name in enumerate(names):
        store.session(name).append(tagged_turn(w, 0), compact=False)
    _age(store)
    assert [i.name for i in store.infos(derived_title)] == store.sessions() == sorted(names)
    assert [i.name for i in store.infos(derived_title)] == sorted(names)  # from the cache
