"""What a listing stats (porcelain/session/log_stats.py): logs in `sessions` order, refs keys, the
stamp of logs/ that changes with every change a listing must see and with nothing else, and the
start of a log that holds its head."""

from __future__ import annotations

import os
import time
from pathlib import Path

from helpers.messages import tagged_turn
from sessionstore.plumbing.storedir import StoreDir
from sessionstore.porcelain.session.log_stats import (
    count_checkpoints,
    head_in,
    log_stats,
    read_start,
    refs_key,
    stamp,
)
from sessionstore.porcelain.store import SessionStore


def _store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store", warm=False)
    for i, name in enumerate(["a.b", "a-b", "a", "B"]):
        store.session(name).append(tagged_turn(i, 0), compact=False)
    return store


def test_logs_are_listed_as_sessions_lists_them(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (store.logs_dir / "x (1).jsonl").write_bytes(b"")  # a stray copy: no session
    (store.logs_dir / "dir.jsonl").mkdir()  # not a file
    listed = list(log_stats(store.logs))
    assert [name for name, _ in listed] == store.sessions() == ["B", "a", "a-b", "a.b"]
    assert all(st.st_ino == (store.logs_dir / f"{name}.jsonl").stat().st_ino for name, st in listed)
    assert "x (1)" in [name for name, _ in log_stats(store.logs, known={"x (1)"})]  # known: not checked
    assert list(log_stats(StoreDir(tmp_path / "nowhere"))) == []
    kept: dict[str, os.stat_result] = {}
    stamp(store.logs, store.refs.home, kept)  # the stats a rebuild's walk takes instead of its own
    taken = dict(kept)
    assert list(log_stats(store.logs, taken=taken)) == listed and not taken  # let go as used
    assert [n for n, _ in log_stats(store.logs, {"x (1)"}, kept)] == [
        n for n, _ in log_stats(store.logs, {"x (1)"})
    ]


def test_refs_keys_and_counts(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert refs_key(store.refs.home, "a") is None and count_checkpoints(store.refs.home, "a") == 0
    session = store.session("a")
    with store.lock("a"):
        session.commit_checkpoint(list(session.history), tier=2)
    st = (store.refs.dir / "a").stat()
    assert (
        refs_key(store.refs.home, "a") == [st.st_mtime_ns, st.st_ino]
        and count_checkpoints(store.refs.home, "a") == 1
    )


def test_the_stamp_moves_with_every_change_and_only_then(tmp_path: Path) -> None:
    store = _store(tmp_path)
    seen = {stamp(store.logs, store.refs.home)}

    def moved() -> bool:
        now = stamp(store.logs, store.refs.home)
        assert now == stamp(store.logs, store.refs.home)  # nothing changed in between: the same
        fresh = now not in seen
        seen.add(now)
        return fresh

    assert not moved()
    store.session("a").append(tagged_turn(0, 1), compact=False)
    assert moved()
    log = store.logs_dir / "B.jsonl"
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))  # even the same times: the ctime moved
    assert moved()
    past = time.time() - 60
    os.utime(log, (past, past))
    assert moved()
    os.rename(store.logs_dir / "a-b.jsonl", store.logs_dir / "c.jsonl")
    assert moved()
    (store.logs_dir / "stray.txt").write_bytes(b"")
    assert moved()
    session = store.session("B")
    with store.lock("B"):
        session.commit_checkpoint(list(session.history), tier=2)  # the log and its refs directory
    assert moved()
    with open(store.refs.dir / "B" / "1", "rb"):  # reading changes nothing
        pass
    assert not moved()


def test_a_short_logs_start_holds_its_verified_head(tmp_path: Path) -> None:
    store = _store(tmp_path)
    start, whole = read_start(store.logs, "a")
    assert whole and start == (store.logs_dir / "a.jsonl").read_bytes()
    assert head_in(start, whole, "a") == store.log("a").head()
    assert head_in(start, False, "a") is None  # not all of the log: its head is Log.head's to read
    flipped = start[:-10] + bytes([start[-10] ^ 1]) + start[-9:]
    assert head_in(flipped, True, "a") is None  # a line that does not verify: Log.head names it
    (store.logs_dir / "fifo.jsonl").unlink(missing_ok=True)
    os.mkfifo(store.logs_dir / "fifo.jsonl")
    assert read_start(store.logs, "fifo") == (b"", False) == read_start(store.logs, "none")


def test_a_start_read_at_the_listings_stat_is_what_the_log_held_then(tmp_path: Path) -> None:
    """With the size the listing's stat gave, no second stat: bytes appended since are not read (the
    row is keyed by that stat, so the next listing reads them), a log found shorter is not all of it,
    and anything but a regular file in its place gives nothing."""
    store = _store(tmp_path)
    held = (store.logs_dir / "a.jsonl").read_bytes()
    assert read_start(store.logs, "a", len(held)) == (held, True)
    store.session("a").append(tagged_turn(0, 9), compact=False)
    assert read_start(store.logs, "a", len(held)) == (held, True)  # as of the stat
    assert read_start(store.logs, "a", 10 * len(held))[1] is False
    os.mkfifo(store.logs_dir / "pipe.jsonl")
    (store.logs_dir / "dir.jsonl").mkdir()
    assert read_start(store.logs, "pipe", 100) == (b"", False) == read_start(store.logs, "dir", 100)
