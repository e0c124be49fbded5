"""Pulled commits written (porcelain/sharing/remote_commits.py) over real git: staged sessions land in
bounded groups (one blob sync per group), each blob is read from git once per group, and a session
refused while its group lands leaves the others pulled."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.gitrepos import isolate_git, store_files, two_clones
from helpers.messages import tagged_turn
from sessionstore.plumbing.git import CatFile
from sessionstore.porcelain.sharing import remote_commits
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.sharing.push import FAST_FORWARD, NEW, REJECTED, push


def test_a_pull_lands_in_groups_and_reads_each_blob_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups of at most 3 sessions: 8 sessions (one a fork, whose first commit names every blob of
    its source) land in three groups, byte-identical, and git is asked for each blob once."""
    isolate_git(monkeypatch)
    alice, bob, names = two_clones(tmp_path, sessions=7)
    for name in names:
        alice.session(name).append(tagged_turn(0, 1))
    alice.fork("s00", "s00-fork")
    push(alice)
    monkeypatch.setattr(remote_commits.Group, "MAX_SESSIONS", 3)
    asked: list[str] = []
    real = CatFile.read

    def read(self: CatFile, specs):  # type: ignore[no-untyped-def]
        asked.extend(specs)
        return real(self, specs)

    monkeypatch.setattr(CatFile, "read", read)
    landed = []
    real_land = remote_commits.land

    def counting_land(store, group, *rest):  # type: ignore[no-untyped-def]
        landed.append(len(group.staged))
        return real_land(store, group, *rest)

    monkeypatch.setattr("sessionstore.porcelain.sharing.pull.land", counting_land)
    found = {o.name: o.status for o in pull(bob)}
    assert found == dict.fromkeys([*names, "s00-fork"], NEW)
    assert store_files(bob) == store_files(alice)
    blobs = [spec.rsplit("/", 1)[1] for spec in asked if ":objects/" in spec]
    assert (
        sorted(blobs)
        == sorted(set(blobs))
        == sorted(p.parent.name + p.name for p in (alice.root / "objects").rglob("*") if p.is_file())
    )
    assert landed == [3, 3, 2]


def test_a_session_that_moved_while_its_group_landed_is_refused_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_git(monkeypatch)
    alice, bob, names = two_clones(tmp_path, sessions=4)
    push(alice)
    pull(bob)
    for name in names:
        alice.session(name).append(tagged_turn(0, 1))
    push(alice)
    real = remote_commits.write_objects

    def meanwhile(store, blobs):  # type: ignore[no-untyped-def]
        real(store, blobs)
        bob.session("s01").append(tagged_turn(1, 0))  # a writer gets in between stage and land

    monkeypatch.setattr(remote_commits, "write_objects", meanwhile)
    found = {o.name: o for o in pull(bob)}
    assert found["s01"].status == REJECTED and "changed while pulling" in found["s01"].detail
    assert {n: o.commits for n, o in found.items() if n != "s01"} == dict.fromkeys(["s00", "s02", "s03"], 1)
    assert bob.fsck().ok
    for name in ("s00", "s02", "s03"):
        assert bob.log(name).path.read_bytes() == alice.log(name).path.read_bytes()


@pytest.mark.parametrize("how", ["flipped", "truncated"])
def test_a_pull_replaces_a_damaged_local_copy_of_a_blob_the_remote_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Bob holds a blob of s00 damaged (one flipped byte, or cut short); alice forks s00 (the fork's
    first commit names every blob of its source) and appends to it: bob's pull brings the right bytes
    from the remote and leaves a good object, and both sessions load and fsck clean."""
    isolate_git(monkeypatch)
    alice, bob, _ = two_clones(tmp_path, sessions=1)
    alice.session("s00").append(tagged_turn(0, 1))
    push(alice)
    pull(bob)
    head = bob.log("s00").head()
    assert head is not None
    oid = head.blob
    assert oid is not None
    path = bob.objects.path(oid)
    data = bytearray(path.read_bytes())
    path.chmod(0o644)
    if how == "flipped":
        data[len(data) // 2] ^= 0x01
    else:
        del data[len(data) // 2 :]
    path.write_bytes(bytes(data))
    alice.fork("s00", "s00-fork")
    alice.session("s00").append(tagged_turn(0, 2))
    push(alice)
    found = {o.name: o.status for o in pull(bob)}
    assert found == {"s00": FAST_FORWARD, "s00-fork": NEW}, found
    assert bob.objects.read(oid) == alice.objects.read(oid)
    assert store_files(bob) == store_files(alice)
    assert bob.fsck().ok


def test_a_directory_where_a_pulled_blob_goes_refuses_that_session_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_git(monkeypatch)
    alice, bob, _ = two_clones(tmp_path, sessions=2)
    alice.session("s01").append(tagged_turn(0, 1))
    push(alice)
    head = alice.log("s01").head()
    assert head is not None and head.blob is not None
    bob.objects.path(head.blob).mkdir(parents=True)
    found = {o.name: o for o in pull(bob)}
    assert found["s00"].status == NEW
    assert found["s01"].status == REJECTED and "is a directory, not a blob" in found["s01"].detail
    assert not bob.exists("s01")
