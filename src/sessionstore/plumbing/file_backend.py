"""The directory backend (the default): DESIGN §2's layout, through the classes that always wrote it.

`FileBackend` only bundles them behind `backend.Backend`: `objects.ObjectStore` (blobs), `logs.Log`
(one `.jsonl` per session), `refs.RefStore` (checkpoint refs) and `locks.locked` (a flock per session).
The on-disk format is unchanged by the interface. Every directory is a `storedir.StoreDir` below the
store root, checked on each use: a symlink or a non-directory in the place of one is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .locks import locked
from .logs import Log
from .names import is_valid_name
from .objects import ObjectStore
from .refs import RefStore
from .storedir import StoreDir


class FileExclusion:
    """A `fcntl.flock` per session under `locks/` (`locks.locked`), which also holds off gc."""

    def __init__(self, locks: StoreDir) -> None:
        self.home = locks
        self.dir = locks.path

    @contextmanager
    def session(self, name: str, timeout: float) -> Iterator[None]:
        with locked(self.home, name, timeout):
            yield


class FileBackend:
    """A store directory: `objects/`, `logs/<session>.jsonl`, `refs/checkpoints/`, `locks/`; `root`
    is a path or, for an import's staging store, a `StoreDir` below the real store's root (its paths
    are then checked from there)."""

    def __init__(self, root: Path | StoreDir) -> None:
        self.top = root if isinstance(root, StoreDir) else StoreDir(root)
        self.root = self.top.path
        self.objects = ObjectStore(self.top)
        self.refs = RefStore(self.top)
        self.logs = self.top / "logs"
        self.locks = self.top / "locks"
        self.logs_dir = self.logs.path
        self.locks_dir = self.locks.path
        self.exclusion = FileExclusion(self.locks)

    @property
    def url(self) -> str:
        return str(self.root)

    def log(self, session: str) -> Log:
        return Log(self.logs, session)

    def log_entries(self) -> list[tuple[str, bool]]:
        """(name, is a session's log) of every `*.jsonl` in logs/: a directory or a name no session can
        have (a copy named "x (1).jsonl") is no session's log. logs/ is checked first."""
        try:
            with os.scandir(self.logs.check()) as entries:  # the file type comes with the listing: no stat
                return [
                    (e.name[:-6], is_valid_name(e.name[:-6]) and e.is_file())
                    for e in entries
                    if e.name.endswith(".jsonl")
                ]
        except FileNotFoundError:
            return []

    def sessions(self) -> list[str]:
        return sorted(name for name, is_log in self.log_entries() if is_log)
