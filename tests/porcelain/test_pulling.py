"""The pull writer's parts: durable bulk blob writes and the names of divergence copies."""

from __future__ import annotations

import os
import stat

from sessionstore.plumbing.names import is_valid_name
from sessionstore.plumbing.objects import hash_bytes
from sessionstore.porcelain.pulling import divergence_name, write_objects
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


def test_divergence_names_are_valid_session_names() -> None:
    cid = "41d07aa" + "0" * 57
    assert divergence_name("fix-auth", "origin", cid) == "fix-auth-origin-41d07aa"
    assert divergence_name("x", "team/upstream", cid) == "x-team-upstream-41d07aa"
    long = divergence_name("a" * 128, "origin", cid)
    assert is_valid_name(long) and long.endswith("-origin-41d07aa")
