"""Locks: real exclusion between processes and threads, LockTimeout naming the session, no symlinks."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.accounting.settings import Settings
from sessionstore.errors import LockTimeout, SessionStoreError
from sessionstore.plumbing.locks import STORE_LOCK, locked
from sessionstore.porcelain.store import SessionStore


def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(store: SessionStore, tmp_path) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"do not touch")
    before = target.stat()
    (store.locks_dir / "victim.lock").symlink_to(target)
    session = store.session("victim")
    with pytest.raises(SessionStoreError, match="symlink"):
        session.append(tagged_turn(0, 0))
    assert target.read_bytes() == b"do not touch"
    assert (target.stat().st_mtime_ns, target.stat().st_size) == (before.st_mtime_ns, before.st_size)
    assert session.persisted_count == 0 and not store.exists("victim")


def test_a_dangling_symlink_is_not_created_through(store: SessionStore, tmp_path) -> None:
    target = tmp_path / "would-be-created"
    (store.locks_dir / "victim.lock").symlink_to(target)
    with pytest.raises(SessionStoreError, match="symlink"), store.lock("victim"):
        pass
    assert not target.exists()


def test_a_directory_in_place_of_the_lock_is_refused(store: SessionStore) -> None:
    (store.locks_dir / "odd.lock").mkdir()
    with pytest.raises(SessionStoreError, match="not a regular file"), store.lock("odd"):
        pass


@pytest.mark.slow
def test_lock_timeout_names_the_session_held_by_another_process(tmp_path) -> None:
    store = SessionStore.open(tmp_path / "s", settings=Settings(lock_timeout_s=0.2))
    session = store.session("busy")
    holder = spawn("hold_lock.py", store.root, "busy", stdin=subprocess.PIPE)
    try:
        assert holder.stdout and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(LockTimeout, match="session 'busy'") as err:
            session.append(tagged_turn(0, 0))
        assert 0.15 < time.monotonic() - started < 5
        assert "lock_timeout_s" in str(err.value)
        assert session.persisted_count == 0 and not store.exists("busy")
    finally:
        assert holder.stdin
        holder.stdin.close()
        holder.wait(timeout=10)
    session.append(tagged_turn(0, 0))  # released with the process: the next writer proceeds
    assert session.persisted_count == 2


def test_threads_of_one_process_exclude_each_other(store: SessionStore) -> None:
    inside = 0
    peak = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        for _ in range(20):
            with store.lock("t"):
                with guard:
                    inside += 1
                    peak = max(peak, inside)
                time.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 1


def test_the_lock_is_not_reentrant_and_times_out_naming_the_store(tmp_path) -> None:
    store = SessionStore.open(tmp_path / "s", settings=Settings(lock_timeout_s=0.05))
    with store.store_lock():
        with pytest.raises(LockTimeout, match=f"store {store.root}"), store.store_lock():
            pass
        with store.lock("other"):  # other locks stay free
            pass
    with locked(store.locks_dir, STORE_LOCK, 0.05):
        pass
    assert not os.path.islink(store.locks_dir / f"{STORE_LOCK}.lock")


def test_a_session_named_store_does_not_share_the_store_lock(tmp_path) -> None:
    # The store lock was once `locks/store.lock`, the very file a session named "store" locks: gc would
    # then block that session's writers (and they gc).
    store = SessionStore.open(tmp_path / "s", settings=Settings(lock_timeout_s=0.05))
    with store.store_lock():
        store.session("store").append(tagged_turn(0, 0))
    assert store.session("store").persisted_count == 2


def test_a_waiter_is_told_who_holds_the_lock_before_it_waits(tmp_path) -> None:
    """Another process holds the lock: `on_wait` hears its pid and program first, and the timeout
    names it too; an uncontended lock never calls `on_wait`."""
    from sessionstore.plumbing import locks

    store = SessionStore.open(tmp_path / "s", settings=Settings(lock_timeout_s=0.2))
    heard: list[str] = []
    locks.on_wait = heard.append
    holder = spawn("hold_lock.py", store.root, "busy", stdin=subprocess.PIPE)
    try:
        with store.lock("free"):
            assert heard == []
        assert holder.stdout and holder.stdout.readline().strip() == "locked"
        match = rf"locked by pid {holder.pid} \(hold_lock.py .*\) since"
        with pytest.raises(LockTimeout, match=match), store.lock("busy"):
            pass
        (line,) = heard
        assert f"session 'busy' is locked by pid {holder.pid} (hold_lock.py" in line
        assert line.endswith("waiting up to 0.2s")
    finally:
        locks.on_wait = None
        assert holder.stdin
        holder.stdin.close()
        holder.wait(timeout=10)
    assert locks.holder(store.locks_dir, "busy") == "another process"  # the holder has exited


def test_the_holder_record_is_rewritten_in_place_and_read_back(tmp_path) -> None:
    from sessionstore.plumbing.locks import holder, locked

    (tmp_path / "s.holder").write_bytes(b"x" * 300)  # an older, longer record: overwritten, never read as one
    with locked(tmp_path, "s", timeout=1):
        said = holder(tmp_path, "s")
        assert said.startswith(f"pid {os.getpid()} (") and "x" not in said.split(")")[-1]
    data = (tmp_path / "s.holder").read_bytes()
    assert data[:128].rstrip().split(b" ", 1)[0] == str(os.getpid()).encode()
    assert data[127:128] == b"\n"


def test_a_missing_locks_directory_is_made_as_a_clone_of_a_committed_store_needs(tmp_path) -> None:
    from sessionstore.plumbing.locks import locked

    locks = tmp_path / "locks"  # git ignores locks/: a clone has none
    with locked(locks, "s", timeout=1):
        assert (locks / "s.lock").is_file()
    gone = tmp_path / "gone" / "locks"
    refused = pytest.raises(SessionStoreError, match=r"cannot lock session 's'.*must be writable")
    with refused, locked(gone, "s", 1):
        pass
