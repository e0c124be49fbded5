"""Durable file primitives: the only place that decides when bytes reach the disk.

Every durable write is: temp file in the target directory, write, fsync, rename or link, fsync the
directory. Appends are fsynced before they are acknowledged. `fdatasync` is enough for file contents
(it flushes the size too); directory entries need an fsync of the directory itself. A batch writer on
Linux (`session pull`) may instead write without syncing and make the whole batch durable with one
`filesystem_sync` (syncfs) before it acknowledges any of it.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import SessionStoreError

_datasync = getattr(os, "fdatasync", os.fsync)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
FILE_MODE = 0o666
"""Mode every store file is created with; the kernel applies the process umask (as git does)."""


def read_regular(path: str | Path, *, what: str) -> bytes:
    """The bytes of the regular file `path`: opened without following a link or blocking on a FIFO,
    checked to be a regular file by `fstat`, and read up to the size fstat gave, never further.

    `FileNotFoundError` if it is absent; `SessionStoreError` naming `what` if it is anything but a
    regular file (a directory, FIFO, device, socket or symlink), so a hostile entry can neither hang
    the reader nor feed it an endless stream.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            raise
        if isinstance(err, PermissionError):  # a regular file we may not read: moving it is no fix
            raise SessionStoreError(
                f"cannot read {what} at {path}: {err.strerror or err}; check its permissions"
            ) from None
        raise SessionStoreError(
            f"{what} at {path} is not a regular file ({err.strerror or err}): move it aside"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SessionStoreError(
                f"{what} at {path} is not a regular file ({file_kind(st.st_mode)}): move it aside"
            )
        chunks = []
        left = st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """A word for what a non-regular directory entry is, for messages."""
    for test, word in (
        (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
    ):  # fmt: skip
        if test(mode):
            return word
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def fsync_dir(path: str | Path) -> None:
    """Make a rename, link or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_synced(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (os.write may write less than asked) and fdatasync it."""
    _write_all(fd, data)
    _datasync(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_temp(directory: Path, data: bytes, *, prefix: str = ".tmp-") -> Path:
    """Write `data` to a fresh, fsynced temp file in `directory` and return its path."""
    return StagedTemp(directory, data, prefix=prefix).sync()


class StagedTemp:
    """A fresh temp file in `directory` holding `data`, written but not yet synced: `sync()` makes it
    durable (and closes it), `discard()` removes it. For a writer that wants the bytes in the page
    cache at once and the fdatasync on another thread (`ObjectStore.write_in_background`)."""

    def __init__(self, directory: Path, data: bytes, *, prefix: str = ".tmp-") -> None:
        import secrets  # writers only: read-only commands never pay for it

        while True:  # like mkstemp, but created with FILE_MODE so the umask decides (mkstemp is 0600)
            name = os.path.join(directory, prefix + secrets.token_hex(8))
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, FILE_MODE)
                break
            except FileExistsError:
                continue
        self.path = Path(name)
        self._fd: int | None = fd
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            self.discard()
            raise

    def sync(self) -> Path:
        """fdatasync and close the file (removed again if that fails); returns its path."""
        fd, self._fd = self._fd, None
        if fd is None:
            raise ValueError(f"{self.path} was synced or discarded already")
        try:
            _datasync(fd)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        os.close(fd)
        return self.path

    def close(self) -> Path:
        """Close the file unsynced (for data that may be lost: see `atomic_replace`); returns its path."""
        fd, self._fd = self._fd, None
        if fd is None:
            raise ValueError(f"{self.path} was synced or discarded already")
        os.close(fd)
        return self.path

    def discard(self) -> None:
        """Close (if open) and remove the file."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self.path.unlink(missing_ok=True)


def atomic_replace(path: Path, data: bytes, *, prefix: str = ".tmp-", durable: bool = True) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new file, never a mix.

    The file keeps the permission bits of the one it replaces (a hook script stays executable); a new
    file gets 0o666 less the umask, as every store file does. `durable=False`: neither the file nor
    the directory is synced, so after a power loss `path` may be the old file, the new one, or (on
    some file systems) empty or cut short: only for derived data that checks itself on every read
    and is made again when it does not pass (the heads cache, as git leaves its index unsynced).
    """
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    staged = StagedTemp(path.parent, data, prefix=prefix)
    tmp = staged.sync() if durable else staged.close()
    try:
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create `path` holding `data` only if it does not exist; return False if it did.

    The content is written and synced under a temp name first and then hard-linked into place, so the
    name appears atomically with its full content (a bare O_CREAT|O_EXCL would expose an empty file to
    a crash between create and write). `link` fails with EEXIST exactly as O_EXCL would.
    """
    tmp = write_temp(path.parent, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    fsync_dir(path.parent)
    return True


def append_durable(path: str | Path, data: bytes, *, sync: bool = True) -> int:
    """Append `data` to `path` (created if missing) and sync it; return the offset it was written at.

    A failure part-way truncates back to the old size, so no partial line is left behind by us; a crash
    can still leave one, which readers treat as a torn tail. `sync=False` leaves the bytes (and, for a
    new file, its directory entry) to the caller's `filesystem_sync`, which must run before anything
    reports them written: a batch of appends made durable by one sync (`session pull`).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, FILE_MODE)
    try:
        offset = os.fstat(fd).st_size
        try:
            if sync:
                _write_synced(fd, data)
            else:
                _write_all(fd, data)
        except BaseException:
            os.ftruncate(fd, offset)
            raise
        if offset == 0 and sync:
            fsync_dir(os.path.dirname(path))  # a new log file: its directory entry must survive too
        return offset
    finally:
        os.close(fd)


@functools.cache
def filesystem_sync() -> Callable[[str | Path], None] | None:
    """`syncfs(2)` of the filesystem holding a path, or None where there is none (not Linux).

    On Linux it writes back every dirty file and directory of that filesystem and commits its journal
    before it returns, so one call makes a batch of unsynced writes, links and new directory entries
    durable together (what thousands of `fsync`s would). A caller that gets None syncs each file and
    directory on its own, as every other writer does."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None

    def sync(path: str | Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if call(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), str(path))
        finally:
            os.close(fd)

    return sync


def truncate_durable(path: str | Path, size: int) -> None:
    """Cut `path` back to `size` bytes (torn-tail repair) and sync it."""
    fd = os.open(path, os.O_WRONLY | _NOFOLLOW)
    try:
        os.ftruncate(fd, size)
        _datasync(fd)
    finally:
        os.close(fd)
