"""The directory backend (the default): DESIGN §2's layout, through the classes that always wrote it.

`FileBackend` only bundles them behind `backend.Backend`: `objects.ObjectStore` (blobs), `logs.Log`
(one `.jsonl` per session), `refs.RefStore` (checkpoint refs) and `locks.locked` (a flock per session).
The on-disk format is unchanged by the interface.
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


class FileExclusion:
    """A `fcntl.flock` per session under `locks/` (`locks.locked`), which also holds off gc."""

    def __init__(self, locks_dir: Path) -> None:
        self.dir = locks_dir

    @contextmanager
    def session(self, name: str, timeout: float) -> Iterator[None]:
        with locked(self.dir, name, timeout):
            yield


class FileBackend:
    """A store directory: `objects/`, `logs/<session>.jsonl`, `refs/checkpoints/`, `locks/`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = ObjectStore(root)
        self.refs = RefStore(root)
        self.logs_dir = root / "logs"
        self.locks_dir = root / "locks"
        self.exclusion = FileExclusion(self.locks_dir)

    @property
    def url(self) -> str:
        return str(self.root)

    def log(self, session: str) -> Log:
        return Log(self.logs_dir, session)

    def log_entries(self) -> list[tuple[str, bool]]:
        """(name, is a session's log) of every `*.jsonl` in logs/: a directory or a name no session can
        have (a copy named "x (1).jsonl") is no session's log."""
        try:
            with os.scandir(self.logs_dir) as entries:  # the file type comes with the listing: no stat
                return [
                    (e.name[:-6], is_valid_name(e.name[:-6]) and e.is_file())
                    for e in entries
                    if e.name.endswith(".jsonl")
                ]
        except FileNotFoundError:
            return []

    def sessions(self) -> list[str]:
        return sorted(name for name, is_log in self.log_entries() if is_log)
