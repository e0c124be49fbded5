"""Checkpoint refs: write-once, durable, `<commit-id> <offset>\\n`, and a second create changes nothing."""

from __future__ import annotations

import os

import pytest

from sessionstore.errors import CorruptObjectError, ImmutableRefError, StorePathError
from sessionstore.plumbing.fsutil import write_temp
from sessionstore.plumbing.refs import CheckpointRef, RefStore

A, B = "a" * 64, "b" * 64


def test_create_read_and_list(tmp_path) -> None:
    refs = RefStore(tmp_path)
    made = refs.create("s", 1, A, 0)
    refs.create("s", 2, B, 123)
    assert made == CheckpointRef("s", 1, A, 0) and made.name == "checkpoints/s/1"
    assert (tmp_path / "refs/checkpoints/s/2").read_bytes() == f"{B} 123\n".encode()
    assert refs.read("s", 2) == CheckpointRef("s", 2, B, 123)
    assert [r.k for r in refs.list("s")] == [1, 2]
    assert refs.list("nobody") == [] and refs.sessions() == ["s"]
    assert not [p for p in (tmp_path / "refs/checkpoints/s").iterdir() if p.name.startswith(".tmp")]


def test_second_create_raises_and_changes_nothing(tmp_path) -> None:
    refs = RefStore(tmp_path)
    refs.create("s", 1, A, 10)
    path = tmp_path / "refs/checkpoints/s/1"
    past = 1_600_000_000
    os.utime(path, (past, past))
    before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino)
    with pytest.raises(ImmutableRefError, match="checkpoints/s/1"):
        refs.create("s", 1, B, 99)
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["1"]  # no temp left behind


def test_numbers_start_at_one(tmp_path) -> None:
    with pytest.raises(ValueError, match="start at 1"):
        RefStore(tmp_path).create("s", 0, A, 0)


def test_missing_and_malformed_refs(tmp_path) -> None:
    refs = RefStore(tmp_path)
    with pytest.raises(LookupError):
        refs.read("s", 1)
    refs.create("s", 1, A, 0)
    (tmp_path / "refs/checkpoints/s/2").write_text("garbage")
    with pytest.raises(CorruptObjectError, match="checkpoints/s/2 is malformed"):
        refs.read("s", 2)


def test_stray_temps_lists_only_temp_files_inside_the_store(tmp_path) -> None:
    refs = RefStore(tmp_path)
    refs.create("s", 1, A, 0)
    refs.create("t", 1, B, 5)
    assert list(refs.stray_temps()) == []
    left = write_temp(refs.dir / "s", f"{B} 9\n".encode())  # a ref write killed before its link
    (refs.dir / "t" / ".tmp-dir").mkdir()  # not a file: never listed, so never unlinked
    os.symlink(tmp_path / "elsewhere", refs.dir / "t" / ".tmp-link")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".tmp-victim").write_bytes(b"not the store's")
    os.symlink(outside, refs.dir / "linked")  # a symlinked session directory is refused, never entered
    with pytest.raises(StorePathError, match=r"checkpoints/linked is a symlink"):
        list(refs.stray_temps())
    assert (outside / ".tmp-victim").read_bytes() == b"not the store's"
    os.unlink(refs.dir / "linked")
    assert list(refs.stray_temps()) == [left]
    assert [r.k for r in refs.list("s")] == [1] and [k for k, _ in refs.entries("s")] == [1]
