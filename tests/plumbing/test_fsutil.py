"""Durable file primitives: atomic replace, exclusive create, synced appends that undo a failed write."""

from __future__ import annotations

import os

import pytest

from sessionstore.plumbing import fsutil


def test_atomic_replace_leaves_only_the_new_content(tmp_path) -> None:
    path = tmp_path / "f"
    fsutil.atomic_replace(path, b"one")
    fsutil.atomic_replace(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_atomic_replace_keeps_the_mode_and_a_new_file_is_not_private(tmp_path) -> None:
    # The temp file is 0o600 (mkstemp): a new file (`session export -o`, VERSION) kept that mode.
    path = tmp_path / "f"
    fsutil.atomic_replace(path, b"one")
    assert path.stat().st_mode & 0o777 == 0o644
    os.chmod(path, 0o755)
    fsutil.atomic_replace(path, b"two")
    assert path.stat().st_mode & 0o777 == 0o755


def test_atomic_replace_failure_keeps_the_old_file(tmp_path, monkeypatch) -> None:
    path = tmp_path / "f"
    fsutil.atomic_replace(path, b"old")

    def boom(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(fsutil, "_datasync", boom)
    with pytest.raises(OSError, match="disk full"):
        fsutil.atomic_replace(path, b"new")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_create_exclusive_never_replaces(tmp_path) -> None:
    path = tmp_path / "ref"
    assert fsutil.create_exclusive(path, b"first")
    assert not fsutil.create_exclusive(path, b"second")
    assert path.read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref"]


def test_append_durable_returns_offsets(tmp_path) -> None:
    path = tmp_path / "log"
    assert fsutil.append_durable(path, b"abc\n") == 0
    assert fsutil.append_durable(path, b"de\n") == 4
    assert path.read_bytes() == b"abc\nde\n"


def test_a_failed_append_is_cut_back(tmp_path, monkeypatch) -> None:
    path = tmp_path / "log"
    fsutil.append_durable(path, b"abc\n")

    def boom(fd: int) -> None:
        raise OSError("EIO")

    monkeypatch.setattr(fsutil, "_datasync", boom)
    with pytest.raises(OSError, match="EIO"):
        fsutil.append_durable(path, b"partial line\n")
    assert path.read_bytes() == b"abc\n"


def test_append_does_not_follow_a_symlink(tmp_path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    (tmp_path / "log").symlink_to(target)
    with pytest.raises(OSError):
        fsutil.append_durable(tmp_path / "log", b"x\n")
    assert target.read_bytes() == b"keep"


def test_truncate_and_fsync_dir(tmp_path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"whole\ntorn")
    fsutil.truncate_durable(path, 6)
    assert path.read_bytes() == b"whole\n"
    fsutil.fsync_dir(tmp_path)
    with pytest.raises(NotADirectoryError):
        fsutil.fsync_dir(path)


def test_write_temp_cleans_up_on_failure(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(fsutil, "_datasync", lambda fd: (_ for _ in ()).throw(OSError("no")))
    with pytest.raises(OSError):
        fsutil.write_temp(tmp_path, b"data")
    assert os.listdir(tmp_path) == []


def test_a_staged_temp_is_synced_once_or_discarded_and_a_failed_write_leaves_nothing(
    tmp_path, monkeypatch
) -> None:
    synced: list[int] = []
    real = fsutil._datasync
    monkeypatch.setattr(fsutil, "_datasync", lambda fd: (synced.append(fd), real(fd)))
    staged = fsutil.StagedTemp(tmp_path, b"bytes")
    assert staged.path.read_bytes() == b"bytes" and synced == []  # written, not yet synced
    assert staged.sync() == staged.path and len(synced) == 1
    with pytest.raises(ValueError, match="synced or discarded already"):
        staged.sync()
    staged.discard()
    assert os.listdir(tmp_path) == []
    other = fsutil.StagedTemp(tmp_path, b"more")
    other.discard()
    other.discard()  # twice is harmless
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        fsutil.StagedTemp(tmp_path, b"never")
    assert os.listdir(tmp_path) == []


def test_short_writes_are_continued_until_every_byte_is_down(tmp_path, monkeypatch) -> None:
    """os.write may write less than asked: temp files and appends loop until all bytes are written."""
    real_write = os.write
    calls: list[int] = []

    def short(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr(os, "write", short)
    data = b"0123456789abcdef"
    tmp = fsutil.write_temp(tmp_path, data)
    assert tmp.read_bytes() == data
    log = tmp_path / "log"
    assert fsutil.append_durable(log, b"first\n") == 0
    assert fsutil.append_durable(log, data) == 6
    assert log.read_bytes() == b"first\n" + data
    assert len(calls) > 3 + 2 + 6  # the writes really were short, and each was continued


def test_an_unsynced_replace_is_atomic_and_syncs_nothing(tmp_path, monkeypatch) -> None:
    """`durable=False` (derived data that checks itself: the heads cache): the same atomic rename,
    the same mode rules, and no fdatasync of the file nor fsync of the directory."""
    target = tmp_path / "cache"
    target.write_bytes(b"old")
    target.chmod(0o640)
    synced: list[int] = []
    monkeypatch.setattr(fsutil, "_datasync", lambda fd: synced.append(fd))
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    fsutil.atomic_replace(target, b"new", durable=False)
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o640
    assert synced == [] and sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
    fsutil.atomic_replace(target, b"newer")
    assert target.read_bytes() == b"newer" and len(synced) == 2  # the default syncs both
