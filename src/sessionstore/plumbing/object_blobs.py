"""Blobs on object storage: `objects/ab/cdef...` named by the sha256 of their bytes (DESIGN §13).

The same promises as `objects.ObjectStore` on files (`backend.Blobs`): a write is a PUT created only if
absent, so writing a blob twice, from one process or eight, stores it once; every read verifies the
sha256. gc's grace counts from an object's last-modified time, so a write that finds its blob already
there and older than `REFRESH_AFTER` PUTs it again (same bytes, a new time), as the file backend
touches the mtime; one whose size is wrong (damage) is replaced by the bytes its name promises.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from ..errors import CorruptObjectError
from .bucket import Bucket
from .objects import Writing, hash_bytes, is_object_id

T = TypeVar("T")
REFRESH_AFTER = 24 * 3600.0
"""A blob found present and last written longer ago than this (seconds) is written again on reuse."""


class ObjectBlobs:
    """Content-addressed blobs under `objects/` of a bucket prefix."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket

    def path(self, oid: str) -> str:
        """The key of object `oid`, relative to the store's prefix."""
        if not is_object_id(oid):
            raise CorruptObjectError(f"malformed object id {oid!r}: expected 64 hex digits")
        return f"objects/{oid[:2]}/{oid[2:]}"

    def exists(self, oid: str) -> bool:
        return self.bucket.head(self.path(oid)) is not None

    def write(self, data: bytes, gate: Callable[[], object] | None = None) -> str:
        """Store `data` (durable when this returns) and return its id; `gate()` runs before the PUT."""
        oid = hash_bytes(data)
        key = self.path(oid)
        if gate is not None:
            gate()
        if not self.bucket.create(key, data):
            found = self.bucket.head(key)
            if found is None or found.size != len(data) or time.time() - found.time > REFRESH_AFTER:
                self.bucket.put(key, data)  # pruned meanwhile, damaged, or old: gc's grace counts anew
        return oid

    def write_in_background(self, data: bytes, check: Callable[[bytes], None] | None = None) -> Writing:
        """`write(data)` with its PUT on a request thread: the id at once, the landing to wait for.

        `check(data)` runs first, here: if it raises, nothing is sent and its error is raised. The
        caller may build what names the blob meanwhile, and makes nothing durable that names it
        before `Writing.result()` has returned."""
        if check is not None:
            check(data)
        oid = hash_bytes(data)
        return Writing(oid, self.bucket.in_background(lambda: self.write(data)))

    def read(self, oid: str) -> bytes:
        """The bytes of `oid`, verified against its name."""
        data = self.read_unverified(oid)
        if hash_bytes(data) != oid:
            raise self._corrupt(oid)
        return data

    def read_unverified(self, oid: str) -> bytes:
        data = self.bucket.get(self.path(oid))
        if data is None:
            raise self._missing(oid)
        return data

    def read_unverified_many(self, oids: Sequence[str]) -> list[bytes]:
        """`read_unverified` of each of `oids`, in order, fetched concurrently."""
        found = self.bucket.get_many([self.path(oid) for oid in oids])
        for oid, blob in zip(oids, found, strict=True):
            if blob is None:
                raise self._missing(oid)
        return found  # type: ignore[return-value]  # no None left

    def load(self, oids: Sequence[str], decode: Callable[[list[bytes]], T]) -> T:
        """`decode` of the bytes of `oids`, fetched concurrently and each verified before `decode` runs."""
        keys = [self.path(oid) for oid in oids]
        found = self.bucket.get_many(keys)
        data: list[bytes] = []
        for oid, blob in zip(oids, found, strict=True):
            if blob is None:
                raise self._missing(oid)
            if hash_bytes(blob) != oid:
                raise self._corrupt(oid)
            data.append(blob)
        return decode(data)

    def _missing(self, oid: str) -> CorruptObjectError:
        return CorruptObjectError(
            f"object {oid[:12]} is missing from {self.bucket.url}/objects: restore it from a backup, or "
            "run `session fsck`"
        )

    def _corrupt(self, oid: str) -> CorruptObjectError:
        return CorruptObjectError(
            f"object {oid[:12]} is corrupt (its bytes no longer hash to its name): restore "
            f"{self.bucket.url}/{self.path(oid)} from a backup"
        )

    def __iter__(self) -> Iterator[str]:
        return (oid for oid, _, _ in self.times())

    def irregular(self) -> Iterator[tuple[str, str]]:
        """Nothing: a bucket holds objects only (no directories, FIFOs or links to refuse)."""
        return iter(())

    def times(self) -> Iterator[tuple[str, float, int]]:
        """(object id, last written, size) of every blob, from the listing alone (gc's candidates)."""
        for meta in self.bucket.list("objects/"):
            oid = meta.key.replace("/", "", 1)
            if len(meta.key) == 65 and meta.key[2] == "/" and is_object_id(oid):
                yield oid, meta.time, meta.size

    def prune(self, oid: str, cutoff: float) -> int | None:
        """Delete `oid` if it was last written at or before `cutoff`; the bytes freed, or None if kept."""
        found = self.bucket.head(self.path(oid))
        if found is None or found.time > cutoff:
            return None
        self.bucket.delete(self.path(oid))
        return found.size
