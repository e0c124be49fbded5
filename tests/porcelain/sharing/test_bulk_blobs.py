"""Bulk blob writes (porcelain/sharing/bulk_blobs.py): what a pull writes before the lines that name
its blobs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sessionstore.errors import CorruptObjectError, SessionStoreError
from sessionstore.plumbing.objects import hash_bytes
from sessionstore.porcelain.sharing.bulk_blobs import write_objects
from sessionstore.porcelain.store import SessionStore


def test_bulk_written_blobs_verify_and_follow_the_umask(store: SessionStore) -> None:
    blobs = {hash_bytes(data): data for data in (b"one\n", b"two\n", os.urandom(70_000))}
    store.objects.write(b"one\n")  # an equal object already there is kept
    old = os.umask(0o022)
    try:
        write_objects(store, blobs)
    finally:
        os.umask(old)
    for oid, data in blobs.items():
        assert store.objects.read(oid) == data
    mode = stat.S_IMODE(store.objects.path(hash_bytes(b"two\n")).stat().st_mode)
    assert mode == 0o644
    assert not list(store.objects.stray_temps())


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    path.chmod(0o644)  # objects may be read-only once written
    if how == "flipped":
        data[len(data) // 2] ^= 0x01  # same size, one bit off
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(bytes(data[: len(data) // 2]))


@pytest.mark.parametrize("how", ["flipped", "truncated"])
def test_a_damaged_object_at_a_blobs_path_is_replaced_by_the_right_bytes(
    store: SessionStore, how: str
) -> None:
    """`ObjectStore.write` replaces a damaged copy; the bulk writer must too, or a pull that brings the
    right bytes leaves the store naming a blob it does not hold."""
    data = os.urandom(5_000)
    oid = store.objects.write(data)
    _damage(store.objects.path(oid), how)
    with pytest.raises(CorruptObjectError):
        store.objects.read(oid)
    write_objects(store, {oid: data, hash_bytes(b"other\n"): b"other\n"})
    assert store.objects.read(oid) == data
    assert not list(store.objects.stray_temps())


def test_an_equal_object_at_a_blobs_path_is_kept(store: SessionStore) -> None:
    data = os.urandom(3_000)
    oid = store.objects.write(data)
    inode = store.objects.path(oid).stat().st_ino
    write_objects(store, {oid: data})
    assert store.objects.path(oid).stat().st_ino == inode
    assert store.objects.read(oid) == data


def test_a_directory_at_a_blobs_path_is_refused_and_nothing_is_named(store: SessionStore) -> None:
    data = b"blob\n"
    oid = hash_bytes(data)
    store.objects.path(oid).mkdir(parents=True)
    with pytest.raises(SessionStoreError, match="not a blob"):
        write_objects(store, {oid: data})
    assert store.objects.path(oid).is_dir()
    assert not list(store.objects.stray_temps())
