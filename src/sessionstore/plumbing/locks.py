"""Per-session and store-wide locks (`filelock`), never followed through symlinks.

Writers of one session serialize on `locks/<session>.lock`; gc holds `locks/.store.lock` while it
deletes (a leading dot, which no session name has, so a session named "store" locks its own file).
Each acquisition opens its own lock file descriptor, so two threads of one process exclude each other
exactly as two processes do. Readers take no lock.

Who holds a lock: after acquiring, a writer records itself in `locks/<name>.holder` (pid, program,
time; not synced: it is a hint, not data). A writer that finds the lock taken reads it and, before it
waits, tells `on_wait` (the CLI prints it on stderr), so a wait of up to `lock_timeout_s` is never
silent, and a `LockTimeout` names the holder too.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LockTimeout, SessionStoreError
from .names import check_name

STORE_LOCK = ".store"
"""The store-wide lock's name: not a valid session name, so it can never be one session's lock."""
MEMORY_LOCK = ".memory"
"""Serializes read-modify-write of the team's MEMORY.md by the sessions of one store."""
_RESERVED = frozenset({STORE_LOCK, MEMORY_LOCK})

on_wait: Callable[[str], None] | None = None
"""Called with one line (what is locked, by whom, how long it will wait) before a writer waits."""


def holder(locks_dir: Path, name: str) -> str:
    """Who last took lock `name`, as `pid 123 (session compact x) since 09:41:02 UTC`, or a plain
    'another process' when that is unknown or that process has exited."""
    try:
        pid_text, since, program = (locks_dir / f"{name}.holder").read_text("utf-8").split(" ", 2)
        pid = int(pid_text)
        os.kill(pid, 0)
    except PermissionError:  # alive, another user's
        pass
    except (OSError, ValueError):
        return "another process"
    return f"pid {pid} ({program.strip()}) since {since} UTC"


def _record_holder(locks_dir: Path, name: str) -> None:
    program = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:3]])[:80] if sys.argv else "?"
    since = time.strftime("%H:%M:%S", time.gmtime())
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(locks_dir / f"{name}.holder", flags, 0o666)
    except OSError:
        return  # a hint only: never fail a write over it
    try:
        os.write(fd, f"{os.getpid()} {since} {program}\n".encode("utf-8", "replace"))
    finally:
        os.close(fd)


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
    label = what or f"session {name!r}"
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if on_wait is not None and timeout > 0:
                on_wait(f"{label} is locked by {holder(locks_dir, name)}: waiting up to {timeout:g}s")
            lock.acquire()
    except Timeout:
        raise LockTimeout(
            f"{label} is locked by {holder(locks_dir, name)} (waited {timeout:g}s): retry when it finishes, "
            "or raise lock_timeout_s"
        ) from None
    except OSError as err:  # a read-only store, or a locks/ directory that is gone
        raise SessionStoreError(
            f"cannot lock {what or f'session {name!r}'}: {path}: {err.strerror or err}; the store must be "
            "writable (check its permissions)"
        ) from None
    try:
        _refuse_symlink(path)  # swapped for a link between the check and the open: give up
        _record_holder(locks_dir, name)
        yield
    finally:
        lock.release()
