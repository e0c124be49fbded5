"""Immutable, content-addressed blobs: `objects/ab/cdef…` named by the sha256 of their bytes.

Like git's loose objects (and dulwich's `DiskObjectStore`): a name is a promise about the bytes, so
reads verify it, writes never replace an existing object, and a rewrite of the same content only
touches the mtime so that `gc`'s grace period counts from the last time someone needed it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import CorruptObjectError
from .fsutil import fsync_dir, write_temp

_HEX = frozenset("0123456789abcdef")
_TRASH = ".gc-"
"""Prefix of an object gc has renamed aside and not yet unlinked (see `ObjectStore.prune`)."""


@cache
def _writer() -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor  # writers only: read-only commands skip it

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionstore-blob")


T = TypeVar("T")


def hash_bytes(data: bytes) -> str:
    """The object id of `data`: hex sha256 of exactly these bytes."""
    return hashlib.sha256(data).hexdigest()


def is_object_id(text: str) -> bool:
    """True for a full 64-hex-digit object id."""
    return len(text) == 64 and set(text) <= _HEX


class ObjectStore:
    """Blobs under `root/objects`, two-hex-digit fan-out like git."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "objects"

    def path(self, oid: str) -> Path:
        """Where object `oid` lives (whether or not it exists)."""
        if not is_object_id(oid):
            raise CorruptObjectError(f"malformed object id {oid!r}: expected 64 hex digits")
        return self.dir / oid[:2] / oid[2:]

    def exists(self, oid: str) -> bool:
        return self.path(oid).is_file()

    def write(self, data: bytes) -> str:
        """Store `data` durably and return its id; an existing object is kept and its mtime touched."""
        oid = hash_bytes(data)
        final = self.path(oid)
        if final.exists():
            try:
                os.utime(final)
                return oid
            except FileNotFoundError:
                pass  # gc pruned it between the check and the touch: write it again
        fan = final.parent
        if not fan.is_dir():
            fan.mkdir(parents=True, exist_ok=True)
            fsync_dir(self.dir)
        tmp = write_temp(fan, data)
        try:
            os.link(tmp, final)  # never overwrites: an equal object written meanwhile wins harmlessly
        except FileExistsError:
            os.utime(final)
        finally:
            tmp.unlink()
        fsync_dir(fan)
        return oid

    def write_in_background(self, data: bytes) -> Future[str]:
        """`write(data)` on a worker thread; the id arrives through the future.

        A write is mostly waiting on fsync, which releases the GIL, so a caller can tokenize the same
        turn meanwhile (tiktoken releases it too): an append then costs the longer of the two, not the
        sum. One worker per process: writes are durable one by one, as the caller awaits each.
        """
        return _writer().submit(self.write, data)

    def read(self, oid: str) -> bytes:
        """The bytes of `oid`, verified against the name; `CorruptObjectError` names a bad object."""
        data = self.read_unverified(oid)
        if hash_bytes(data) != oid:
            raise self._corrupt(oid)
        return data

    def read_unverified(self, oid: str) -> bytes:
        """The bytes of `oid` as found (`CorruptObjectError` if missing); callers verify them."""
        path = self.path(oid)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            trash = path.with_name(_TRASH + path.name)
            with contextlib.suppress(FileNotFoundError, FileExistsError):
                os.link(trash, path)  # a gc that crashed mid-prune: the object is still needed
                trash.unlink()
                return path.read_bytes()
            raise CorruptObjectError(
                f"object {oid[:12]} is missing from {self.dir}: restore it (e.g. from git) or run "
                "`session fsck`"
            ) from None

    def load(self, oids: Sequence[str], decode: Callable[[list[bytes]], T]) -> T:
        """`decode` of the bytes of `oids`, every blob read and verified before `decode` sees any.

        So a bad blob raises `CorruptObjectError`, never a parse error of its bytes. Measured on a
        10,000-message session (benchmarks/bench_store.py): reading everything first beats handing
        blobs over one by one (1.21x vs 1.36x a bare validate_json), and threads do not help at all,
        since pydantic holds the GIL and a hashing thread crawls between switch intervals.
        """
        return decode([self.read(oid) for oid in oids])

    def _corrupt(self, oid: str) -> CorruptObjectError:
        return CorruptObjectError(
            f"object {oid[:12]} is corrupt (its bytes no longer hash to its name): restore "
            f"{self.path(oid)} from a backup or git"
        )

    def __iter__(self) -> Iterator[str]:
        """Every object id present (temp files and stray names skipped)."""
        if not self.dir.is_dir():
            return
        for fan in sorted(self.dir.iterdir()):
            if len(fan.name) != 2 or not fan.is_dir():
                continue
            for entry in fan.iterdir():
                oid = fan.name + entry.name
                if is_object_id(oid):
                    yield oid

    def mtime(self, oid: str) -> float:
        return self.path(oid).stat().st_mtime

    def delete(self, oid: str) -> None:
        """Remove one object (gc only, under the store lock)."""
        self.path(oid).unlink(missing_ok=True)

    def prune(self, oid: str, cutoff: float) -> int | None:
        """Delete `oid` if its mtime is not after `cutoff`; return the bytes freed, or None if kept.

        Writers take no store lock, and a writer reusing an object touches its mtime. So the object is
        first renamed aside, then its mtime is read again: a touch that landed before the rename shows
        now and the object is put back; a touch after it finds no file and the writer writes the
        object anew. Only then is it unlinked. A crash in between leaves a `.gc-` twin that `read`
        restores if a log still needs it.
        """
        path = self.path(oid)
        trash = path.with_name(_TRASH + path.name)
        trash.unlink(missing_ok=True)  # a leftover twin (same inode) would make the rename a no-op
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return None
        st = trash.stat()
        if st.st_mtime > cutoff:
            with contextlib.suppress(FileExistsError):  # a writer rewrote it meanwhile: equal bytes
                os.link(trash, path)
            trash.unlink()
            return None
        trash.unlink()
        return st.st_size

    def pruning_leftovers(self) -> Iterator[tuple[str, Path]]:
        """(object id, path) of objects a crashed gc renamed aside and never unlinked."""
        if self.dir.is_dir():
            for trash in self.dir.glob(f"*/{_TRASH}*"):
                oid = trash.parent.name + trash.name[len(_TRASH) :]
                if is_object_id(oid):
                    yield oid, trash

    def stray_temps(self) -> Iterator[Path]:
        """Temp files left by a crash mid-write (gc removes old ones)."""
        if self.dir.is_dir():
            yield from self.dir.glob("*/.tmp-*")
