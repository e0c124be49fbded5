"""Bulk blob writes (porcelain/bulk_blobs.py): what a pull writes before the lines naming its blobs."""

from __future__ import annotations

import os
import stat

from sessionstore.plumbing.objects import hash_bytes
from sessionstore.porcelain.bulk_blobs import write_objects
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
