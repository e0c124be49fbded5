"""Per-session and store-wide locks, never followed through symlinks, and the writers-vs-gc lock.

Writers of one session serialize on `locks/<session>.lock` (`fcntl.flock`); gc holds `locks/.store.lock`
while it runs (a leading dot, which no session name has, so a session named "store" locks its own
file). Each acquisition opens its own lock file descriptor, so two threads of one process exclude each
other exactly as two processes do. Readers take no lock.

Writers and gc also exclude each other for the window between writing a blob and appending the commit
line that reaches it (DESIGN §2): otherwise gc sees a fresh blob no log reaches yet and deletes it, and
no grace period is short enough to be safe. This is a shared `fcntl.flock` on `locks/.gc.lock`: every
session lock holds it shared (`store_writes`) for as long as the session lock is held, and gc takes it
exclusive (`gc_exclusive`) while it reads the logs and prunes. A turnstile, `locks/.gc-turn.lock`,
keeps a stream of overlapping writers from starving gc: writers pass it shared on their way in, gc
holds it exclusive, so once gc is waiting no new writer enters and the ones inside finish. Both sides
give up after the lock timeout with `LockTimeout`.

Who holds a lock: after acquiring, a writer records itself in `locks/<name>.holder` (pid, program,
time; not synced: it is a hint, not data). A writer that finds the lock taken reads it and, before it
waits, tells `on_wait` (the CLI prints it on stderr), so a wait of up to `lock_timeout_s` is never
silent, and a `LockTimeout` names the holder too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LockTimeout, SessionStoreError
from .fsutil import read_regular
from .names import check_name
from .storedir import StoreDir

STORE_LOCK = ".store"
"""The store-wide lock's name: not a valid session name, so it can never be one session's lock."""
GC_LOCK = ".gc"
"""Held shared by every writer between blob and commit line, exclusive by gc while it prunes."""
GC_TURNSTILE = ".gc-turn"
"""Passed shared by writers on their way in and held exclusive by gc, so gc is never starved."""
_RESERVED = frozenset({STORE_LOCK, GC_LOCK, GC_TURNSTILE})
_held = threading.local()
"""Per thread: how many `store_writes` holds are open (nested session locks take the gc lock once)."""

on_wait: Callable[[str], None] | None = None
"""Called with one line (what is locked, by whom, how long it will wait) before a writer waits."""


Locks = Path | StoreDir
"""`locks/`: a `StoreDir` (checked by every use, `storedir`), or a plain directory (tests, tools)."""


def _home(locks_dir: Locks) -> StoreDir:
    return locks_dir if isinstance(locks_dir, StoreDir) else StoreDir(locks_dir.parent) / locks_dir.name


def holder(locks_dir: Locks, name: str) -> str:
    """Who last took lock `name`, as `pid 123 (session compact x) since 09:41:02 UTC`, or a plain
    'another process' when that is unknown or that process has exited."""
    try:
        data = read_regular(_home(locks_dir).file(f"{name}.holder"), what="lock holder")
        record = data.decode("utf-8", "replace").split("\n", 1)[0]
        pid_text, since, program = record.split(" ", 2)
        pid = int(pid_text)
        os.kill(pid, 0)
    except PermissionError:  # alive, another user's
        pass
    except (OSError, ValueError, SessionStoreError):
        return "another process"
    return f"pid {pid} ({program.strip()}) since {since} UTC"


_HOLDER_SIZE = 128
"""Bytes of a holder record: always written whole at offset 0, so the file is never truncated."""


def _record_holder(locks_dir: StoreDir, name: str) -> None:
    """Write who holds the lock: one fixed-size record, space-padded, overwritten in place.

    Never `O_TRUNC`: on ext4 truncating a file that has data costs a journal commit (~0.8 ms on this
    machine's disk, against ~8 us for the overwrite), and every append takes a lock."""
    program = " ".join([os.path.basename(sys.argv[0] or "python"), *sys.argv[1:3]])[:80] if sys.argv else "?"
    since = time.strftime("%H:%M:%S", time.gmtime())
    record = f"{os.getpid()} {since} {program}".encode("utf-8", "replace")[: _HOLDER_SIZE - 1]
    try:
        path = f"{locks_dir.text}/{name}.holder"  # `locked` checked the directory
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError:
        return  # a hint only: never fail a write over it
    try:
        os.pwrite(fd, record.ljust(_HOLDER_SIZE - 1) + b"\n", 0)
    except OSError:
        pass
    finally:
        os.close(fd)


def _refuse_symlink(path: str | Path) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # no lock file yet (or no locks/: refused on open)
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise SessionStoreError(
            f"lock file {path} is a symlink or not a regular file: remove it (locks are never followed)"
        )


@contextmanager
def locked(locks_dir: Locks, name: str, timeout: float, *, what: str | None = None) -> Iterator[None]:
    """Hold the lock `locks_dir/<name>.lock` for the block; `LockTimeout` names what was locked.

    A session's lock (any `name` but the reserved store-wide ones) also holds `store_writes` for the
    block, so everything written under a session lock is safe from a concurrent gc.
    """
    if name not in _RESERVED:
        check_name(name)
    locks_dir = _home(locks_dir)
    path = locks_dir.file(f"{name}.lock")  # checks locks/; a str: every acquisition builds it (no Path)
    label = what or f"session {name!r}"
    # One descriptor per acquisition (threads exclude each other too); O_NOFOLLOW refuses any link.
    fd = _open_lock(locks_dir, name, label)
    try:
        _exclusive(fd, timeout, lambda: f"{label} is locked by {holder(locks_dir, name)}")
    except OSError as err:  # LockTimeout is a TimeoutError: raised as it is
        os.close(fd)
        if isinstance(err, LockTimeout):
            raise
        raise SessionStoreError(
            f"cannot lock {label}: {path}: {err.strerror or err}; the store must be writable (check its "
            "permissions)"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        _refuse_symlink(path)  # swapped for a link between the check and the open: give up
        _record_holder(locks_dir, name)
        if name in _RESERVED:
            yield
        else:
            with store_writes(locks_dir, timeout):
                yield
    finally:
        os.close(fd)  # closing the last descriptor of the open file releases its flock


@contextmanager
def locked_directory(directory: Path, timeout: float, *, what: str) -> Iterator[None]:
    """Hold an exclusive `flock` on `directory` itself for the block; `LockTimeout` names `what`.

    For a file rewritten by rename (MEMORY.md): a lock on the file would stay with its old inode, and
    a lock file beside it would show in `git status`, while the directory is the same inode for
    every process whatever path spelling reached it. Raises `FileNotFoundError` for a missing
    directory (the caller says what to do about it).
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _exclusive(fd, timeout, lambda: f"{what} is locked by another process")
        yield
    finally:
        os.close(fd)  # releases the flock


def _exclusive(fd: int, timeout: float, taken: Callable[[], str]) -> None:
    """Take `fd`'s exclusive flock, at once when free; else tell `on_wait` (`taken()` says what is
    locked by whom) and wait up to `timeout` seconds."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        said = taken()
        if on_wait is not None and timeout > 0:
            on_wait(f"{said}: waiting up to {timeout:g}s")
        _flock(fd, fcntl.LOCK_EX, timeout, said)


def _open_lock(locks_dir: StoreDir, name: str, label: str | None = None) -> int:
    """Open (creating it) the lock file `name` (the caller has checked `locks/`); `locks/` itself is
    made when missing: git ignores it, so a clone of a committed store has none."""
    path = f"{locks_dir.text}/{name}.lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:
            if not locks_dir.path.parent.is_dir():
                raise
            locks_dir.make()
            fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            _refuse_symlink(path)
        what = f"{label}: {path}" if label else str(path)
        raise SessionStoreError(
            f"cannot lock {what}: {err.strerror or err}; the store must be writable (check its permissions)"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _refuse_symlink(path)
    return fd


def _flock(fd: int, mode: int, timeout: float, what: str) -> None:
    """`flock(fd, mode)`, polling until `timeout` seconds have passed, then `LockTimeout`.

    Polled rather than blocking so the wait is bounded (a blocking flock has no timeout); the first
    retry comes after 1 ms and the pause doubles to 20 ms, so a lock freed soon is taken soon. The
    locks are `flock`s taken directly (the filelock package did the same underneath at ~30x the cost per
    acquisition, ~300 us, on every append)."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(
                    f"{what} (waited {timeout:g}s): retry when it finishes, or raise lock_timeout_s"
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


@contextmanager
def store_writes(locks_dir: Locks, timeout: float) -> Iterator[None]:
    """Hold the writers' side of the gc lock: gc prunes nothing while the block runs.

    Take it around the window from writing a blob to appending (and syncing) the commit line that
    reaches it. Every `locked()` session lock already holds it; nesting in one thread takes it once.
    """
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    locks_dir = _home(locks_dir)
    locks_dir.check()
    turn = _open_lock(locks_dir, GC_TURNSTILE)
    try:
        gate = _open_lock(locks_dir, GC_LOCK)
    except BaseException:
        os.close(turn)
        raise
    try:
        busy = "the store is being garbage-collected (`session gc` holds it)"
        _flock(turn, fcntl.LOCK_SH, timeout, busy)
        try:
            _flock(gate, fcntl.LOCK_SH, timeout, busy)
        finally:
            os.close(turn)  # closing drops the turnstile: it is only passed through
            turn = -1
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
    finally:
        if turn >= 0:
            os.close(turn)
        os.close(gate)  # closing the descriptor releases the flock


@contextmanager
def gc_exclusive(locks_dir: Locks, timeout: float) -> Iterator[None]:
    """Hold gc's side: no writer is between a blob and its commit line while the block runs."""
    locks_dir = _home(locks_dir)
    locks_dir.check()
    turn = _open_lock(locks_dir, GC_TURNSTILE)
    gate = -1
    try:
        gate = _open_lock(locks_dir, GC_LOCK)
        _flock(turn, fcntl.LOCK_EX, timeout, "gc waited for writers to let it in")
        _flock(gate, fcntl.LOCK_EX, timeout, "gc waited for writers to finish their commits")
        yield
    finally:
        if gate >= 0:
            os.close(gate)
        os.close(turn)
