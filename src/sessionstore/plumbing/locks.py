"""Per-session and store-wide locks (`filelock`), never followed through symlinks.

Writers of one session serialize on `locks/<session>.lock`; gc holds `locks/.store.lock` while it
deletes (a leading dot, which no session name has, so a session named "store" locks its own file).
Each acquisition opens its own lock file descriptor, so two threads of one process exclude each other
exactly as two processes do. Readers take no lock.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LockTimeout, SessionStoreError
from .names import check_name

STORE_LOCK = ".store"
"""The store-wide lock's name: not a valid session name, so it can never be one session's lock."""
MEMORY_LOCK = ".memory"
"""Serializes read-modify-write of the team's MEMORY.md by the sessions of one store."""
_RESERVED = frozenset({STORE_LOCK, MEMORY_LOCK})


def _refuse_symlink(path: Path) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # no lock file yet (or no locks/: refused on open)
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise SessionStoreError(
            f"lock file {path} is a symlink or not a regular file: remove it (locks are never followed)"
        )


@contextmanager
def locked(locks_dir: Path, name: str, timeout: float, *, what: str | None = None) -> Iterator[None]:
    """Hold the lock `locks_dir/<name>.lock` for the block; `LockTimeout` names what was locked."""
    if name not in _RESERVED:
        check_name(name)
    from filelock import FileLock, Timeout  # here, not at the top: read-only commands never lock

    path = locks_dir / f"{name}.lock"
    _refuse_symlink(path)
    lock = FileLock(path, timeout=timeout, is_singleton=False, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        label = what or f"session {name!r}"
        raise LockTimeout(
            f"{label} is locked by another writer (waited {timeout:g}s): retry when it finishes, or raise "
            "lock_timeout_s"
        ) from None
    except OSError as err:  # a read-only store, or a locks/ directory that is gone
        raise SessionStoreError(
            f"cannot lock {what or f'session {name!r}'}: {path}: {err.strerror or err}; the store must be "
            "writable (check its permissions)"
        ) from None
    try:
        _refuse_symlink(path)  # swapped for a link between the check and the open: give up
        yield
    finally:
        lock.release()
