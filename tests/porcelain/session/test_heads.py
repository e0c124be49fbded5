"""The heads cache behind `session list` (index/sessions.json): exact, stat-validated, never trusted."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.messages import tagged_turn
from sessionstore.errors import StorePathError
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.history.naming import derived_title, title_from_start
from sessionstore.porcelain.session.heads import HEADS_FILE, HeadsCache
from sessionstore.porcelain.session.heads_file import HeadRow
from sessionstore.porcelain.session.layout import SessionInfo
from sessionstore.porcelain.store import SessionStore

TESTS = Path(__file__).resolve().parents[2]


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
    assert HeadsCache(store).load()["s0"][0] == store.log("s0").size()
    store.session("s0").append(tagged_turn(0, 2), compact=False)  # changing now, after it was cached
    store.infos(derived_title)
    row = HeadsCache(store).load()["s0"]
    assert list(row[:3]) == [-1, -1, -1] and row[-1][0] == 3  # its mark alone (never a hit), the new head's


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


def _parts(store: SessionStore) -> tuple[bytes, dict[str, Any], list[bytes]]:
    """The cache file as its format says: a header line, the memo, the rows document, one head line
    per row."""
    header, _memo, document, *heads = (store.root / HEADS_FILE).read_bytes().split(b"\n")
    return header, orjson.loads(document), heads


def _write(store: SessionStore, document: dict[str, Any], heads: list[bytes]) -> None:
    """The cache file holding `document` and `heads` (no memo), with valid checksums (as if this
    module wrote it)."""
    parts = [b"null", orjson.dumps(document), b"\n".join(heads)]
    digests = " ".join(hashlib.sha256(part).hexdigest() for part in parts).encode()
    header = b"sessionstore-heads 6 " + _FIELD_NAMES + b" " + digests
    (store.root / HEADS_FILE).write_bytes(b"\n".join([header, *parts]))


_FIELD_NAMES = ",".join(f.name for f in dataclasses.fields(Commit)).encode()


def test_a_cache_with_a_valid_checksum_but_a_stale_head_is_caught_by_fsck(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.infos(derived_title)
    _, document, heads = _parts(store)
    position = list(document["rows"]).index("s2")
    fields = orjson.loads(heads[position])
    fields["id"] = "f" * 64  # as if the cache were wrong while its key still matches
    heads[position] = orjson.dumps(fields)
    _write(store, document, heads)
    report = store.fsck()
    assert not report.ok and any("'s2' is cached at another head" in p for p in report.problems)
    repaired = store.fsck(repair=True)
    assert repaired.ok and any("rebuilt index/sessions.json" in r for r in repaired.repaired)
    assert store.fsck().ok and orjson.loads(_parts(store)[2][position])["id"] == store.log("s2").head().id


def test_a_cached_checkpoint_count_its_refs_disagree_with_is_caught_by_fsck(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.session("s1")
    with store.lock("s1"):
        session.commit_checkpoint(list(session.history), tier=2)
    _age(store)
    store.infos(derived_title)
    _, document, heads = _parts(store)
    assert document["rows"]["s1"][5] == 1
    document["rows"]["s1"][5] = 7
    _write(store, document, heads)
    assert any("'s1' is cached with 7 checkpoints, its refs hold 1" in p for p in store.fsck().problems)
    assert store.fsck(repair=True).ok and store.infos(derived_title) == _truth(store)


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
    shutil.rmtree(store.root / "index", ignore_errors=True)  # the appends' model windows made it
    (store.root / "index").symlink_to(elsewhere)
    with pytest.raises(StorePathError, match=r"/index is a symlink: nothing is read or written through it"):
        store.infos(derived_title)  # refused, never taken for a missing cache
    assert list(elsewhere.iterdir()) == []
    assert any("index is a symlink" in p for p in store.fsck().problems)


def test_the_cache_payload_is_what_its_header_says(tmp_path: Path) -> None:
    """The format: a header line (magic, the commit fields it holds, the sha256 of the memo line, of
    the rows line and of the head lines), the memo, the rows as one JSON line, then one JSON line
    per row with its head commit, every field of it."""
    store = _store(tmp_path, names=2)
    store.infos(derived_title)
    data = (store.root / HEADS_FILE).read_bytes()
    header, memo_line, rows_line, heads_part = data.split(b"\n", 3)
    digests = " ".join(hashlib.sha256(part).hexdigest() for part in (memo_line, rows_line, heads_part))
    assert header == b"sessionstore-heads 6 " + _FIELD_NAMES + b" " + digests.encode()
    document = orjson.loads(rows_line)
    assert memo_line == b"null" and document["tag"] is None and list(document["rows"]) == ["s0", "s1"]
    for (name, row), line in zip(document["rows"].items(), heads_part.split(b"\n"), strict=True):
        st = store.log(name).path.stat()
        key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        head = store.log(name).head()
        assert head is not None
        mark = [head.seq, head.offset, head.end, head.id]  # how long the log was (`log_marks`)
        assert row == [*key, None, None, derived_title(store, name), None, None, mark]  # no refs, cells, key
        assert Commit(**orjson.loads(line)) == head
    memo = HeadsCache(store).memo(title_from_start, _cells([]), "t", lambda rows: [r[0] for r in rows])
    assert memo == (["s0", "s1"], ["s0", "s1"])
    tag, stamp, names, value = orjson.loads((store.root / HEADS_FILE).read_bytes().split(b"\n")[1])
    assert (tag, names, value) == ("t", ["s0", "s1"], ["s0", "s1"]) and len(stamp) == 64


def test_a_cache_written_for_other_commit_fields_is_not_read(tmp_path: Path) -> None:
    """A cache from a version whose `Commit` had other fields (the header names them) is rebuilt."""
    store = _store(tmp_path, names=2)
    good = store.infos(derived_title)
    path = store.root / HEADS_FILE
    fields = ",".join(f.name for f in dataclasses.fields(Commit) if f.name != "usage").encode()
    header, rest = path.read_bytes().split(b"\n", 1)
    digests = header.split(b" ", 3)[3]  # still valid: only the named fields differ
    path.write_bytes(b"sessionstore-heads 6 " + fields + b" " + digests + b"\n" + rest)
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


def test_a_log_rewritten_in_place_with_its_size_and_mtime_kept_is_read_again(tmp_path: Path) -> None:
    """Same inode, same size, the old mtime put back (`touch -r`, `rsync --inplace -t`): the ctime
    in the key still moved."""
    store = _store(tmp_path)
    before = {i.name: i for i in store.infos(derived_title)}
    a, b = store.log("s2").path, store.log("s3").path
    st = a.stat()
    with open(a, "r+b") as f:
        f.write(b.read_bytes())
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = a.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    listed = {i.name: i for i in store.infos(derived_title)}
    assert listed["s2"].head == store.log("s2").head() and listed["s2"].head.id == before["s3"].head.id


def _cells(calls: list[str]) -> Callable[[Commit | None], list[Any]]:
    def cells(head: Commit | None) -> list[Any]:
        calls.append(head.session if head else "")
        return [head.id if head else None, head.count if head else 0]

    return cells


def test_listing_cells_are_made_once_per_head_and_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    cache, calls = HeadsCache(store), []
    cells = _cells(calls)
    truth = [(i.name, i.checkpoints, i.title, [i.head.id, i.head.count]) for i in _truth(store)]
    assert cache.listing(title_from_start, cells, "t1") == truth and calls == ["s0", "s1", "s2", "s3"]
    with monkeypatch.context() as patch:
        patch.setattr(Log, "head", lambda self: pytest.fail(f"read {self.session}"))
        assert cache.listing(title_from_start, cells, "t1") == truth and len(calls) == 4  # all cached
        assert cache.listing(title_from_start, cells, "t2") == truth and len(calls) == 8  # another tag:
        # made again from the cached heads, no log read
    store.session("s1").append(tagged_turn(1, 1), compact=False)
    past = time.time() - 60  # only s1 settled again (dating all would move every ctime)
    os.utime(store.log("s1").path, (past, past))
    listed = cache.listing(title_from_start, cells, "t2")
    assert calls[8:] == ["s1"] and listed[1][3] == [store.log("s1").head().id, 4]
    assert store.infos(derived_title) == _truth(store)  # infos keeps the cells it does not make
    assert cache.listing(title_from_start, cells, "t2") == listed and len(calls) == 9


def test_a_warm_listing_takes_every_row_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row of a warm cache is used as read, in a listing of infos and of cells: none is made a
    `HeadRow` and compared field by field (the slow path, which would then run `same_log`)."""
    store = _store(tmp_path)
    cache, calls = HeadsCache(store), []
    cells = _cells(calls)
    listed, infos = cache.listing(title_from_start, cells, "t"), store.infos(derived_title)
    with monkeypatch.context() as patch:
        patch.setattr(HeadRow, "same_log", lambda self, st: pytest.fail("a warm row taken apart"))
        assert cache.listing(title_from_start, cells, "t") == listed and store.infos(derived_title) == infos
    assert infos == _truth(store) and len(calls) == 4


@pytest.mark.parametrize("malformed", [None, 5, "abc", [1, 2], [0] * 9, [0] * 10, [0] * 11, "abcdefghij"])
def test_a_malformed_row_under_a_valid_checksum_is_a_miss(tmp_path: Path, malformed: Any) -> None:
    """A row the listing cannot unpack into a `HeadRow`'s fields, or whose fields are not its log's
    key, is read from the log (never an error, never used), in a listing of infos and of cells."""
    store = _store(tmp_path)
    cache, calls = HeadsCache(store), []
    cells = _cells(calls)
    cache.listing(title_from_start, cells, "t")
    good = store.infos(derived_title)
    _, document, heads = _parts(store)
    document["rows"]["s1"] = malformed
    _write(store, document, heads)
    assert store.infos(derived_title) == good == _truth(store)
    _write(store, document, heads)
    truth = [(i.name, i.checkpoints, i.title, [i.head.id, i.head.count]) for i in good]
    assert cache.listing(title_from_start, cells, "t") == truth and calls[4:] == ["s1"]


def test_a_damaged_heads_part_changes_no_listing_and_is_rewritten(tmp_path: Path) -> None:
    store = _store(tmp_path)
    cache, calls = HeadsCache(store), []
    listed = cache.listing(title_from_start, _cells(calls), "t")
    good = store.infos(derived_title)
    path = store.root / HEADS_FILE
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x01  # in the last head line
    path.write_bytes(data)
    assert cache.load() == {}  # damaged in a part: not used as a whole
    assert cache.listing(title_from_start, _cells(calls), "t") == listed and len(calls) == 4  # rows intact
    assert any("index/sessions.json is damaged" in p for p in store.fsck().problems)
    assert store.infos(derived_title) == good == _truth(store)  # from the logs, then rewritten
    assert store.fsck().ok and cache.load().keys() == {i.name for i in good}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    at=st.floats(min_value=0, max_value=1, exclude_max=True), mask=st.sampled_from([0x01, 0x20, 0x80, 0xFF])
)
def test_a_flipped_byte_anywhere_in_the_cache_changes_no_listing(
    tmp_path: Path, at: float, mask: int
) -> None:
    """Whatever byte of the file is flipped, a listing of cells and a listing of infos give what
    they gave before (the part it hit is not used), and never raise."""
    root = tmp_path / "flip"
    if not root.exists():
        store = _store(root)
        session = store.session("s1")
        with store.lock("s1"):
            session.commit_checkpoint(list(session.history), tier=2)
        _age(store)
        HeadsCache(store).listing(title_from_start, _cells([]), "t")
        store.infos(derived_title)
    store = SessionStore.open(root / "store", warm=False)
    path = store.root / HEADS_FILE
    good = path.read_bytes()
    expected = (HeadsCache(store).listing(title_from_start, _cells([]), "t"), store.infos(derived_title))
    data = bytearray(good)
    data[int(at * len(data))] ^= mask
    try:
        path.write_bytes(data)
        assert HeadsCache(store).listing(title_from_start, _cells([]), "t") == expected[0]
        path.write_bytes(data)
        assert store.infos(derived_title) == expected[1]
    finally:
        path.write_bytes(good)


def test_a_memo_stands_while_every_log_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    cache, calls, made = HeadsCache(store), [], []

    def make(rows: list[Any]) -> list[Any]:
        made.append(len(rows))
        return [[r[0], r[1], r[2], r[3]] for r in rows]

    names, first = cache.memo(title_from_start, _cells(calls), "t", make)
    assert names == ["s0", "s1", "s2", "s3"]
    assert first == [[r[0], r[1], r[2], r[3]] for r in cache.listing(title_from_start, _cells([]), "t")]
    with monkeypatch.context() as patch:  # no row parsed, no head read, nothing made
        patch.setattr(Log, "head", lambda self: pytest.fail(f"read {self.session}"))
        patch.setattr(orjson, "loads", _refusing_rows(orjson.loads))
        assert cache.memo(title_from_start, _cells(calls), "t", make)[1] == first and made == [4]
    assert cache.memo(title_from_start, _cells(calls), "other tag", make)[1] == first and made == [4, 4]
    store.session("s2").append(tagged_turn(2, 1), compact=False)  # changing now: listed, not remembered
    changed = cache.memo(title_from_start, _cells(calls), "other tag", make)[1]
    assert changed[2][3][1] == 4 and made == [4, 4, 4]
    assert cache.memo(title_from_start, _cells(calls), "other tag", make)[1] == changed and made == [
        4,
        4,
        4,
        4,
    ]
    past = time.time() - 60
    os.utime(store.log("s2").path, (past, past))  # settled now: remembered again
    assert cache.memo(title_from_start, _cells(calls), "other tag", make)[1] == changed and len(made) == 5
    assert cache.memo(title_from_start, _cells(calls), "other tag", make)[1] == changed and len(made) == 5
    with store.lock("s3"):  # a checkpoint ref moves its refs directory's key
        session = store.session("s3")
        session.commit_checkpoint(list(session.history), tier=2)
    _age(store)
    assert cache.memo(title_from_start, _cells(calls), "other tag", make)[1][3][1] == 1 and len(made) == 6


def _refusing_rows(loads: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`orjson.loads` that fails the test if it is given the rows document."""

    def guarded(data: Any) -> Any:
        assert not bytes(data).startswith(b'{"tag"'), "parsed the rows although the memo stood"
        return loads(data)

    return guarded


@pytest.mark.parametrize("part", [0, 1, 2, 3])
def test_fsck_names_a_flip_in_every_part(tmp_path: Path, part: int) -> None:
    """The header, the memo, the rows or a head line: damage anywhere is named (its part's checksum,
    whichever part a listing would have read first)."""
    store = _store(tmp_path)
    HeadsCache(store).memo(title_from_start, _cells([]), "t", lambda rows: len(rows))
    path = store.root / HEADS_FILE
    data = bytearray(path.read_bytes())
    starts = [0, *(i + 1 for i, byte in enumerate(data) if byte == ord("\n"))]
    data[starts[part] + 3] ^= 0x01
    path.write_bytes(data)
    assert any("index/sessions.json is damaged" in p for p in store.fsck().problems)
    assert store.fsck(repair=True).ok and store.fsck().ok
