"""The one lock every MEMORY.md writer holds across its read-modify-write.

Append (`session memory append`, a session's end), squash (the pre-commit and post-merge hooks) and
the merge driver each read the file, change its lines and rename a new copy over it; two of them
at once keep only the last copy, losing the other's bullets. Each holds `memory_lock(path)` from
before its read to after its rename. The lock is an `flock` on the directory holding the file
(`plumbing.locks.locked_directory`), so every process, whatever path spelling it was given, and
whichever store (or none) it runs for, takes the same lock, and no lock file appears in the work tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..errors import MemoryFileError
from ..plumbing.locks import locked_directory


@contextmanager
def memory_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold MEMORY.md `path`'s lock for the block, waiting up to `timeout` seconds (then `LockTimeout`
    naming the file); `MemoryFileError` when its directory does not exist."""
    directory = os.path.realpath(Path(path).absolute().parent)  # where the rename happens
    with ExitStack() as held:
        try:
            held.enter_context(locked_directory(Path(directory), timeout, what=str(path)))
        except (FileNotFoundError, NotADirectoryError):
            raise MemoryFileError(f"{path} does not exist: run `session memory init` to create it") from None
        yield
