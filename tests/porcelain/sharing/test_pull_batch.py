"""A pull makes a group of sessions durable together (porcelain/sharing/remote_commits.py `land`): one
`syncfs` for the group's logs instead of a log sync and a directory sync per session (Linux), the
checkpoint refs only after it, per-file syncs elsewhere; and kill -9 in the middle of a group leaves
every session as it was or a verified prefix of the remote's, every log readable (DESIGN §2, §12)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from helpers.gitrepos import isolate_git, two_clones
from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.plumbing import fsutil
from sessionstore.porcelain.sharing import bulk_blobs, remote_commits
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.sharing.push import NEW, push
from sessionstore.porcelain.store import SessionStore

SESSIONS = 12


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionStore, SessionStore, list[str]]:
    """(alice, bob, names): alice pushed `SESSIONS` sessions of three turns, every third with a
    compaction (so it has a checkpoint ref); bob has pulled nothing yet."""
    isolate_git(monkeypatch)
    alice, bob, names = two_clones(tmp_path, sessions=SESSIONS)
    for i, name in enumerate(names):
        session = alice.session(name)
        session.append(tagged_turn(0, 10 * i + 1))
        if i % 3 == 0:
            session.compact()
        session.append(tagged_turn(0, 10 * i + 2))
    push(alice)
    return alice, bob, names


def same_as(alice: SessionStore, bob: SessionStore, names: list[str]) -> None:
    for name in names:
        assert bob.log(name).path.read_bytes() == alice.log(name).path.read_bytes(), name
        assert [r.commit_id for r in bob.refs.list(name)] == [r.commit_id for r in alice.refs.list(name)]
    assert bob.fsck().ok


def test_a_group_is_made_durable_by_one_sync_and_no_per_file_sync(shared, monkeypatch) -> None:
    """On Linux a group of sessions costs three `syncfs` (blobs, their links, every log) and no
    fsync or fdatasync of a blob, a log or a directory; the checkpoint refs follow the last sync."""
    if fsutil.filesystem_sync() is None:
        pytest.skip("syncfs is Linux only")
    alice, bob, names = shared
    events: list[str] = []
    real = fsutil.filesystem_sync()
    assert real is not None

    def syncfs(path):  # type: ignore[no-untyped-def]
        events.append("syncfs")
        real(path)

    def counted(name):  # type: ignore[no-untyped-def]
        call = getattr(os, name)

        def sync(fd: int) -> None:
            events.append(name)
            call(fd)

        return sync

    for module in (bulk_blobs, remote_commits):
        monkeypatch.setattr(module, "filesystem_sync", lambda: syncfs)
    refs = remote_commits.ensure_checkpoint_refs

    def ensure(store, name, commits=None):  # type: ignore[no-untyped-def]
        events.append("refs")
        return refs(store, name, commits)

    monkeypatch.setattr(remote_commits, "ensure_checkpoint_refs", ensure)
    monkeypatch.setattr(remote_commits, "write_objects", _counting(events, remote_commits.write_objects))
    for name in ("fsync", "fdatasync"):
        monkeypatch.setattr(os, name, counted(name))
    assert {o.status for o in pull(bob)} == {NEW}
    landing = events[events.index("land") + 1 :]
    before_refs = landing[: landing.index("refs")]
    assert before_refs == ["syncfs"] * 3, before_refs  # blobs, their links, then every log at once
    assert landing.count("refs") == SESSIONS
    monkeypatch.undo()
    same_as(alice, bob, names)


def _counting(events: list[str], write_objects):  # type: ignore[no-untyped-def]
    def wrapped(store, blobs):  # type: ignore[no-untyped-def]
        events.append("land")
        return write_objects(store, blobs)

    return wrapped


def test_without_syncfs_each_log_is_synced_as_it_is_written(shared, monkeypatch) -> None:
    """Where there is no `syncfs` (not Linux) every blob, log and directory is synced on its own, as
    before: the same sessions, byte for byte, fsck clean."""
    alice, bob, names = shared
    for module in (bulk_blobs, remote_commits):
        monkeypatch.setattr(module, "filesystem_sync", lambda: None)
    synced: list[str] = []
    real = fsutil._datasync
    monkeypatch.setattr(fsutil, "_datasync", lambda fd: (synced.append("data"), real(fd))[1])
    assert {o.status for o in pull(bob)} == {NEW}
    assert len(synced) >= SESSIONS  # at least one per log
    same_as(alice, bob, names)


@pytest.mark.slow
@pytest.mark.parametrize("after", [0, 5, SESSIONS - 1])
def test_a_pull_killed_mid_group_leaves_every_log_readable_and_the_next_pull_finishes(shared, after) -> None:
    """kill -9 of a real pull stopped after `after` sessions of its group had their lines written (not
    yet synced, their refs not written): every session is absent or whole, every log reads and
    loads, no checkpoint ref of the group exists yet, and fsck finds only those refs missing (derivable:
    `--repair` makes them, as the next pull does), which the next pull makes while it completes every
    session byte for byte."""
    alice, bob, names = shared
    victim = spawn("stop_mid_batch.py", bob.root, after)
    assert victim.stdout is not None
    line = victim.stdout.readline()
    assert line == f"stopping {names[after]}\n", line
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    for i, name in enumerate(names):
        if i < after:
            assert bob.log(name).path.read_bytes() == alice.log(name).path.read_bytes(), name
            assert bob.session(name).history == alice.session(name).history
        else:
            assert not bob.exists(name) or not bob.log(name).path.read_bytes(), name
        assert not bob.refs.numbers(name)  # refs only after the group's sync
    missing = {p.split(":")[0] for p in bob.fsck().problems if "is missing; `session fsck --repair`" in p}
    assert missing == {n for i, n in enumerate(names[:after]) if i % 3 == 0}, bob.fsck().problems
    assert len(bob.fsck().problems) == len(missing)
    if after % 2:
        assert bob.fsck(repair=True).repaired and bob.fsck().ok
    assert {o.status for o in pull(bob)[after:]} == {NEW}
    same_as(alice, bob, names)
