"""Immutable, content-addressed blobs: `objects/ab/cdef…` named by the sha256 of their bytes.

Like git's loose objects (and dulwich's `DiskObjectStore`): a name is a promise about the bytes, so
reads verify it, writes never replace an existing object, and a rewrite of the same content only
touches the mtime so that `gc`'s grace period counts from the last time someone needed it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Callable, Container, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import CorruptObjectError, SessionStoreError
from .forks import in_child
from .fsutil import StagedTemp, file_kind, fsync_dir, read_regular
from .storedir import StoreDir, refusal

_HEX = frozenset("0123456789abcdef")
_TRASH = ".gc-"
"""Prefix of an object gc has renamed aside and not yet unlinked (see `ObjectStore.prune`)."""


@cache
def _writer() -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor  # writers only: read-only commands skip it

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionstore-blob")


@cache
def _hasher() -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionstore-hash")


def _forget_workers() -> None:
    """In a forked child: the pools' threads stayed in the parent, so make new pools on first use."""
    _writer.cache_clear()
    _hasher.cache_clear()


in_child(_forget_workers)

HASH_ASIDE = 1 << 19
"""From this many bytes (512 KiB) on, `ObjectStore.load` hashes on a thread while decoding."""

T = TypeVar("T")


def hash_aside(data: bytes) -> Future[str]:
    """`hash_bytes(data)` on the store's hashing thread (sha256 releases the GIL for its whole pass),
    so the caller can parse `data` meanwhile; small data is hashed at once."""
    if len(data) < HASH_AT_ONCE:
        from concurrent.futures import Future

        done: Future[str] = Future()
        done.set_result(hash_bytes(data))
        return done
    return _hasher().submit(hash_bytes, data)


HASH_AT_ONCE = 1 << 16
"""Below this many bytes (64 KiB) `hash_aside` hashes on the caller's thread: the hand-off costs more."""


def hash_bytes(data: bytes) -> str:
    """The object id of `data`: hex sha256 of exactly these bytes."""
    return hashlib.sha256(data).hexdigest()


_OBJECT_ID = re.compile(r"[0-9a-f]{64}")


def is_object_id(text: str) -> bool:
    """True for a full 64-hex-digit object id (one regex match: it runs for every blob a reader names)."""
    return _OBJECT_ID.fullmatch(text) is not None


class _Staged(NamedTuple):
    """A write between `ObjectStore._stage` and `_land`."""

    oid: str
    final: Path
    data: bytes
    st: os.stat_result | None
    """What was at the object's path when staged (None: nothing)."""
    temp: StagedTemp | None
    """The bytes' temp file, written and not yet synced; None when an equal object was there."""


class Writing(NamedTuple):
    """A blob write under way (`ObjectStore.write_in_background`): the object's id, known before it
    lands, and the future of its landing."""

    oid: str
    landing: Future[str]

    def result(self, timeout: float | None = None) -> str:
        """Wait until the object is durable under its name (its id); raises what the write raised."""
        return self.landing.result(timeout)


class ObjectStore:
    """Blobs under `root/objects`, two-hex-digit fan-out like git."""

    def __init__(self, root: Path | StoreDir) -> None:
        self.home = (root if isinstance(root, StoreDir) else StoreDir(root)) / "objects"
        """`objects/` (every use checks it: `storedir`)."""
        self.dir = self.home.path
        self._dir = self.home.text

    def fan(self, oid: str) -> StoreDir:
        """The fan-out directory of object `oid` (`objects/ab`)."""
        if not is_object_id(oid):
            raise CorruptObjectError(f"malformed object id {oid!r}: expected 64 hex digits")
        return self.home / oid[:2]

    def path(self, oid: str) -> Path:
        """Where object `oid` lives (whether or not it exists), once `objects/` and its fan-out
        directory are checked to be real directories (`StorePathError` if not)."""
        return self.fan(oid).check() / oid[2:]

    def exists(self, oid: str) -> bool:
        """Whether `oid` is there as a regular file (a link in its place is not an object)."""
        try:
            return stat.S_ISREG(os.lstat(self.path(oid)).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def write(self, data: bytes, gate: Callable[[], object] | None = None) -> str:
        """Store `data` durably and return its id; an existing object is kept and its mtime touched.

        "Existing" means a regular file of exactly `len(data)` bytes at the object's path: a regular
        file of another size (damage) is replaced by the right bytes, and anything else there (a
        directory, FIFO, symlink) is refused with `SessionStoreError`, so no turn is acknowledged
        over a blob that was never stored.

        `gate()`, when given, is called once the bytes are synced to their temp file and before they
        get the object's name (or before an existing object is touched): if it raises, the temp file
        is removed and nothing is stored. It lets a check of the bytes run while they are synced.
        """
        return self._land(self._stage(data), gate)

    def write_in_background(self, data: bytes, check: Callable[[bytes], None] | None = None) -> Writing:
        """`write(data)` with its syncs on a worker thread: the id at once, the landing to wait for.

        The object's temp file is created and written here (page cache only), then one worker thread
        syncs it, links it into place and syncs its directory, which is mostly waiting with the GIL
        released, so the caller can tokenize the same turn meanwhile. `check(data)`, when given, runs
        here on the caller's thread while that first sync is under way, and gates the naming
        (`write`'s `gate`): if it raises, nothing is stored and its error is raised here, once the
        worker has dropped the temp file. (On the caller's thread rather than a third one: the check
        holds the GIL, so a third thread only competed with the caller's counting.) One worker per
        process: writes are durable one by one, as the caller awaits each.

        The returned `Writing` names the object before it lands, so a caller can build what will
        refer to it (a commit line) while it syncs; nothing may be made durable that names it before
        `Writing.result()` has returned.
        """
        import threading
        from concurrent.futures import Future

        staged = self._stage(data)
        checked: Future[None] = Future()
        started = threading.Event()

        def land() -> str:
            started.set()
            return self._land(staged, checked.result)

        try:
            writing = _writer().submit(land)
        except BaseException:  # the interpreter is shutting down: no worker will ever take it
            if staged.temp is not None:
                staged.temp.discard()
            raise
        # Wait (GIL released) until the worker runs: from there it reaches the sync, which releases
        # the GIL, in a few bytecodes. Without the wait the worker sat behind this thread's check and
        # counting, which hold the GIL, and the sync began only when the caller blocked on the result.
        try:
            started.wait()
            if check is not None:
                check(data)
        except BaseException as err:  # the gate is always decided: a worker left waiting would hang
            checked.set_exception(err)  # every later write of the process
            if isinstance(err, Exception):
                writing.exception()  # the worker has dropped the temp file: nothing is left behind
            raise  # KeyboardInterrupt and the like go on at once; the worker drops the temp file
        checked.set_result(None)
        return Writing(staged.oid, writing)

    def _stage(self, data: bytes) -> _Staged:
        """The part of a write before its first sync: the id, the checks of what is at its path, and
        (unless an equal object is there) the bytes written to a temp file beside it."""
        oid = hash_bytes(data)
        home = self.fan(oid).make()  # objects/ and objects/ab checked (made when absent)
        final = home / oid[2:]
        try:
            st = os.lstat(final)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise SessionStoreError(
                    f"object {oid[:12]} cannot be stored: {final} is {file_kind(st.st_mode)}, not a blob; "
                    "move it out of the store, then retry (nothing was written)"
                )
            if st.st_size == len(data):
                return _Staged(oid, final, data, st, None)
        return _Staged(oid, final, data, st, StagedTemp(home, data))

    def _land(self, staged: _Staged, gate: Callable[[], object] | None) -> str:
        """The rest of a write: sync the temp file, pass the gate, name the object, sync its directory."""
        oid, final, temp = staged.oid, staged.final, staged.temp
        if temp is None:  # an equal object is there: touch it so gc's grace counts from now
            if gate is not None:
                gate()
            try:
                os.utime(final, follow_symlinks=False)
                return oid
            except FileNotFoundError:  # gc pruned it between the check and the touch: write it again
                return self._land(
                    _Staged(oid, final, staged.data, None, StagedTemp(final.parent, staged.data)), gate
                )
        try:
            tmp = temp.sync()
            if gate is not None:
                gate()
            if staged.st is not None and stat.S_ISREG(staged.st.st_mode):
                os.replace(tmp, final)  # a damaged copy: these bytes are the ones its name promises
            else:
                os.link(tmp, final)  # never overwrites: an equal object written meanwhile wins harmlessly
        except FileExistsError:
            os.utime(final, follow_symlinks=False)
        finally:
            temp.discard()
        fsync_dir(final.parent)
        return oid

    def read(self, oid: str) -> bytes:
        """The bytes of `oid`, verified against the name; `CorruptObjectError` names a bad object."""
        data = self.read_unverified(oid)
        if hash_bytes(data) != oid:
            raise self._corrupt(oid, data)
        return data

    def read_unverified(self, oid: str) -> bytes:
        """The bytes of `oid` as found (`CorruptObjectError` if missing); callers verify them.

        The file is opened without following a link or blocking, must be regular (else
        `CorruptObjectError` saying what it is), and is read up to its size: a FIFO or a link to
        /dev/zero can neither hang nor exhaust the reader.
        """
        self.fan(oid).check()
        return self._read(oid)

    def _read(self, oid: str) -> bytes:
        """`read_unverified` once the caller has checked the object's directories (`check_dirs`)."""
        where = f"{self._dir}/{oid[:2]}/{oid[2:]}"  # `path(oid)` as text: no `Path` per read (replay, list)
        try:
            return self._read_file(where, oid)
        except FileNotFoundError:
            path = Path(where)
            if _restore(path.with_name(_TRASH + path.name), path):  # a gc crashed mid-prune: still needed
                return self._read_file(where, oid)
            raise CorruptObjectError(
                f"object {oid[:12]} is missing from {self.dir}: restore it (e.g. from git) or run "
                "`session fsck`"
            ) from None

    def _read_file(self, where: str, oid: str) -> bytes:
        try:
            return read_regular(where, what=f"object {oid[:12]}")
        except SessionStoreError as err:
            raise CorruptObjectError(str(err)) from None
        except NotADirectoryError:
            raise CorruptObjectError(
                f"{os.path.dirname(where)} is not a directory: move it out of {self.dir}"
            ) from None

    def read_unverified_many(self, oids: Sequence[str]) -> list[bytes]:
        """`read_unverified` of each of `oids`, in order, the directories checked once for all."""
        self.check_dirs(oids)
        return [self._read(oid) if is_object_id(oid) else self.read_unverified(oid) for oid in oids]

    def check_dirs(self, oids: Sequence[str] = ()) -> None:
        """Refuse a linked (or malformed) `objects/` or fan-out directory before reading `oids`
        through it (`StorePathError`, `CorruptObjectError` for a malformed id)."""
        self.home.check()
        for fan in {oid[:2] for oid in oids}:
            if len(fan) != 2 or not set(fan) <= _HEX:
                raise CorruptObjectError(f"malformed object id {fan!r}...: expected 64 hex digits")
            where = f"{self._dir}/{fan}"  # what `(self.home / fan).check()` lstats, without its Paths
            try:
                st = os.lstat(where)
            except FileNotFoundError:
                continue  # the read of an object in it says what is missing
            if not stat.S_ISDIR(st.st_mode):
                raise refusal(where, st.st_mode)

    def load(self, oids: Sequence[str], decode: Callable[[list[bytes]], T]) -> T:
        """`decode` of the bytes of `oids`, returned only once every blob verified against its name.

        A bad blob raises `CorruptObjectError` (the first in order), never a parse error of its bytes
        nor `decode`'s result. Small loads are verified before `decode` sees any byte. From
        `HASH_ASIDE` bytes on, the blobs are hashed on a worker thread while `decode` parses them:
        sha256 releases the GIL for its whole pass, so resuming after a big checkpoint blob costs
        about one validation instead of a hash pass plus a validation; `decode` may then run on
        bytes that turn out bad, and whatever it returned or raised is dropped for the corruption
        error. Each file is read once; reading everything before decoding beats handing blobs over
        one by one (benchmarks/bench_store.py).
        """
        self.check_dirs(oids)
        data = [self._read(oid) if is_object_id(oid) else self.read_unverified(oid) for oid in oids]
        if sum(map(len, data)) < HASH_ASIDE:
            self._verify(oids, data, [hash_bytes(d) for d in data])
            return decode(data)
        digests = _hasher().submit(lambda: [hash_bytes(d) for d in data])
        try:
            out = decode(data)
        except BaseException:
            self._verify(oids, data, digests.result())  # a bad blob is named, not its parse error
            raise
        self._verify(oids, data, digests.result())
        return out

    def _verify(self, oids: Sequence[str], data: list[bytes], digests: list[str]) -> None:
        for oid, blob, digest in zip(oids, data, digests, strict=True):
            if digest != oid:
                raise self._corrupt(oid, blob)

    def _corrupt(self, oid: str, data: bytes = b"") -> CorruptObjectError:
        if b"\r\n" in data and hash_bytes(data.replace(b"\r\n", b"\n")) == oid:
            return CorruptObjectError(
                f"object {oid[:12]} differs from its name only by CRLF line endings: git converted it "
                "(core.autocrlf); put `* -text` in the store's .gitattributes, then have git write the blobs "
                "again: `git ls-files -z .sessions/objects | xargs -0 git checkout-index -f --`"
            )
        return CorruptObjectError(
            f"object {oid[:12]} is corrupt (its bytes no longer hash to its name): restore "
            f"{self.path(oid)} from a backup or git"
        )

    def __iter__(self) -> Iterator[str]:
        """Every object id present as a regular file (temp files, strays and non-regular entries
        skipped: `irregular` lists those)."""
        for oid, kind in self._entries():
            if kind is None:
                yield oid

    def irregular(self) -> Iterator[tuple[str, str]]:
        """(path relative to objects/, what it is) of every entry that should be a blob or a fan-out
        directory and is something else: a directory, FIFO, device, socket or symlink."""
        for name, kind in self._entries():
            if kind is not None:
                yield name, kind

    def _entries(self) -> Iterator[tuple[str, str | None]]:
        try:
            with os.scandir(self.home.check()) as fans:
                fan_entries = sorted(fans, key=lambda e: e.name)
        except FileNotFoundError:
            return
        for fan in fan_entries:
            if len(fan.name) != 2 or not set(fan.name) <= _HEX:
                continue
            if not fan.is_dir(follow_symlinks=False):
                yield fan.name, file_kind(fan.stat(follow_symlinks=False).st_mode)
                continue
            with os.scandir(fan.path) as entries:
                for entry in entries:
                    oid = fan.name + entry.name
                    if not is_object_id(oid):
                        continue
                    if entry.is_file(follow_symlinks=False):
                        yield oid, None
                    else:
                        yield f"{fan.name}/{entry.name}", file_kind(entry.stat(follow_symlinks=False).st_mode)

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
        st = trash.lstat()
        if st.st_mtime > cutoff:
            with contextlib.suppress(FileExistsError):  # a writer rewrote it meanwhile: equal bytes
                os.link(trash, path)
            trash.unlink()
            return None
        trash.unlink()
        return st.st_size

    def _fans(self) -> list[StoreDir]:
        """The fan-out directories there are (real directories only: `irregular` names the rest)."""
        try:
            with os.scandir(self.home.check()) as fans:
                names = sorted(
                    e.name
                    for e in fans
                    if len(e.name) == 2 and set(e.name) <= _HEX and e.is_dir(follow_symlinks=False)
                )
        except FileNotFoundError:
            return []
        return [self.home / name for name in names]

    def pruning_leftovers(self) -> Iterator[tuple[str, Path]]:
        """(object id, path) of objects a crashed gc renamed aside and never unlinked."""
        for fan in self._fans():
            for trash in fan.temp_files(_TRASH):
                oid = fan.rel[-2:] + trash.name[len(_TRASH) :]
                if is_object_id(oid):
                    yield oid, trash

    def settle_pruning(self, needed: Container[str]) -> int:
        """Finish what a crashed gc left renamed aside: put back each object in `needed`, delete the
        others (gc calls this with writers held off). Returns how many were put back."""
        restored = 0
        for oid, trash in list(self.pruning_leftovers()):
            if oid in needed and _restore(trash, self.path(oid)):
                restored += 1
            trash.unlink(missing_ok=True)
        return restored

    def stray_temps(self) -> Iterator[Path]:
        """Temp files left by a crash mid-write (gc removes old ones): regular files only, in real
        fan-out directories, so whatever a caller deletes from this list is inside the store."""
        for fan in self._fans():
            yield from fan.temp_files()


def _restore(trash: Path, path: Path) -> bool:
    """Link a pruning leftover back into place; True if `path` holds the object now (or already did)."""
    try:
        os.link(trash, path)
    except FileNotFoundError:
        return path.exists()  # another reader restored it first, or there was no leftover
    except FileExistsError:
        pass  # a writer wrote the same bytes meanwhile
    trash.unlink(missing_ok=True)
    return True
