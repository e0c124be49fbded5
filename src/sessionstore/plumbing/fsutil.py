"""Durable file primitives: the only place that decides when bytes reach the disk.

Every durable write is: temp file in the target directory, write, fsync, rename or link, fsync the
directory. Appends are fsynced before they are acknowledged. `fdatasync` is enough for file contents
(it flushes the size too); directory entries need an fsync of the directory itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_datasync = getattr(os, "fdatasync", os.fsync)


def fsync_dir(path: Path) -> None:
    """Make a rename, link or unlink inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(directory: Path, data: bytes, *, prefix: str = ".tmp-") -> Path:
    """Write `data` to a fresh, fsynced temp file in `directory` and return its path."""
    import tempfile  # writers only: read-only commands never pay for it

    fd, name = tempfile.mkstemp(dir=directory, prefix=prefix)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        _datasync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    os.close(fd)
    return Path(name)


def atomic_replace(path: Path, data: bytes, *, prefix: str = ".tmp-") -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new file, never a mix.

    The file keeps the permission bits of the one it replaces (a hook script stays executable); a new
    file gets 0o644, not the 0o600 of the temp file it starts as.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    tmp = write_temp(path.parent, data, prefix=prefix)
    try:
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
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


def append_durable(path: Path, data: bytes) -> int:
    """Append `data` to `path` (created if missing) and sync it; return the offset it was written at.

    A failure part-way truncates back to the old size, so no partial line is left behind by us; a crash
    can still leave one, which readers treat as a torn tail.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        offset = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _datasync(fd)
        except BaseException:
            os.ftruncate(fd, offset)
            raise
        if offset == 0:
            fsync_dir(path.parent)  # a new log file: its directory entry must survive too
        return offset
    finally:
        os.close(fd)


def truncate_durable(path: Path, size: int) -> None:
    """Cut `path` back to `size` bytes (torn-tail repair) and sync it."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.ftruncate(fd, size)
        _datasync(fd)
    finally:
        os.close(fd)
