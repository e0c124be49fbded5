"""Reading and atomically rewriting a MEMORY.md, refusing anything that is not a writable text file.

Every refusal is a `MemoryFileError` with one line naming the file and the fix, raised before any
byte is written, so a refused file is always left exactly as it was.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MemoryFileError
from ..plumbing.fsutil import atomic_replace


@dataclass
class MemoryUpdate:
    """What one operation did (or, with `--check`, would do) to a MEMORY.md."""

    path: Path
    changed: bool = False
    method: str = "none"  # none | dedupe | append | extractive | llm | clamp
    lines_before: int = 0
    lines_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: bool = False
    """The file does not exist (and nothing was written): a team that has not opted in."""

    def describe(self, *, dry_run: bool = False) -> str:
        """One line for people: sizes before and after, how, and how much was removed."""
        if self.missing:
            return f"{self.path}: no such file, nothing written (run `session memory init` to start one)"
        if not self.changed:
            return f"{self.path}: unchanged ({self.lines_after} lines, {self.bytes_after:,} bytes)"
        count = len(self.removed)
        removed = f", {count} line{'' if count == 1 else 's'} removed" if count else ""
        would = "would change: " if dry_run else ""
        return (
            f"{self.path}: {would}{self.lines_before} -> {self.lines_after} lines, "
            f"{self.bytes_before:,} -> {self.bytes_after:,} bytes ({self.method}{removed})"
        )


def read_memory_file(path: Path) -> str:
    """The text of `path`; refuses directories, binary and non-UTF-8 files."""
    if path.is_dir():
        raise MemoryFileError(f"{path} is a directory, not a file: rename it or pass the MEMORY.md file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MemoryFileError(f"{path} does not exist: run `session memory init` to create it") from None
    except OSError as err:
        raise MemoryFileError(f"cannot read {path}: {err.strerror}: fix its permissions") from None
    if b"\x00" in data:
        raise MemoryFileError(f"{path} is a binary file, not Markdown: restore the text file from git")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MemoryFileError(
            f"{path} is not UTF-8 (bad byte at offset {err.start}): re-save it as UTF-8"
        ) from None


def ensure_writable(path: Path) -> None:
    """Refuse a read-only file even as root: the owner's write bit is what the user meant."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not mode & stat.S_IWUSR:
        raise MemoryFileError(
            f"{path} is read-only: make it writable (chmod u+w) to let sessionstore rewrite it"
        )


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text`: temp file in the same directory, fsync, rename, fsync the directory.

    The file keeps its permission bits (a hook script stays executable, a group-writable file stays so).
    """
    ensure_writable(path)
    atomic_replace(path, text.encode("utf-8"), prefix=f".{path.name}.")
