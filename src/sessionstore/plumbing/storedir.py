"""The one way to a path inside a store: `StoreDir`, a directory named by its store root and its
path below it, checked on every use.

Nothing is read or written outside the store root (DESIGN §2), and a cloned repository can carry a
symlink anywhere in `.sessions/`. So every reader and writer gets its directory from a `StoreDir`
and calls `check()` (or `make()`) when it is about to use it, not when it was built: each component
below the root is `lstat`ed and must be a real directory (a symlink, or a file, FIFO, ... in its
place, raises `StorePathError` naming that entry); the first absent one ends the walk, since
nothing below it can exist. The root itself may be a link (`--store` pointing anywhere is the user's
choice). Files are then opened with `O_NOFOLLOW` (`fsutil`), and `entry()` refuses a symlink in a
file's or a moved directory's own place.

This is the resolved-path check, made with one `lstat` per component rather than `openat` walking:
the stores are shared through git, so the links to fear are the ones a clone brings, already there
when a command starts; a process racing to swap a directory for a link while a command runs could
win that window, as with any path-based check.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import StorePathError
from .fsutil import file_kind, fsync_dir


class StoreDir:
    """Directory `rel` ('' for the root itself; components joined by '/') below the store root `root`.

    `StoreDir(root) / "refs" / "checkpoints"` names a directory without touching the disk;
    `check()`, `make()`, `entry()`, `file()`, `listdir()` and `temp_files()` check it first."""

    __slots__ = ("_path", "_steps", "rel", "root", "text")

    def __init__(self, root: str | os.PathLike[str], rel: str = "") -> None:
        self.root = root if isinstance(root, Path) else Path(root)
        self.rel = rel
        base = os.fspath(root)
        self._steps = [f"{base}/{rel[: end if end >= 0 else None]}" for end in _ends(rel)] if rel else []
        """Every component's path below the root, outermost first: what `check` lstats."""
        self.text = self._steps[-1] if rel else base
        """The directory's path as text (hot paths build file names on it without a `Path`)."""
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        """The directory's path (unchecked: `check()` returns it checked)."""
        if self._path is None:
            self._path = Path(self.text)  # built when first asked: opening a store names ~20 dirs
        return self._path

    def __truediv__(self, name: str) -> StoreDir:
        if not name or "/" in name:
            raise ValueError(f"not one directory name: {name!r}")
        return self.below(name)

    def below(self, rel: str) -> StoreDir:
        """`self / "a" / "b"` for `rel` "a/b" (self for ''); each component one directory name."""
        if not rel:
            return self
        for name in rel.split("/"):
            if not name or name in (".", ".."):
                raise ValueError(f"not one directory name: {name!r}")
        return StoreDir(self.root, f"{self.rel}/{rel}" if self.rel else rel)

    def __repr__(self) -> str:
        return f"StoreDir({str(self.root)!r}, {self.rel!r})"

    def check(self) -> Path:
        """This directory's path, once every component below the root is a real directory or
        absent; `StorePathError` naming the first that is a symlink or not a directory."""
        for step in self._steps:
            try:
                st = os.lstat(step)
            except FileNotFoundError:
                break  # nothing below an absent directory exists: the caller's open says so
            if not stat.S_ISDIR(st.st_mode):
                raise refusal(step, st.st_mode)
        return self.path

    def exists(self) -> bool:
        """Whether the directory is there (checked: a link in its place is refused, not absent)."""
        return os.path.isdir(self.check())

    def make(self, *, sync: bool = True) -> Path:
        """`check()`, creating each absent component (and, with `sync`, syncing its parent, so the new
        entry is durable): what every writer calls before creating a file in a directory that may not
        exist."""
        parent = os.fspath(self.root)
        for step in self._steps:  # one lstat per component, as `check`; a mkdir only where absent
            try:
                st = os.lstat(step)
            except FileNotFoundError:
                try:
                    os.mkdir(step)
                except FileExistsError:  # made meanwhile (another writer): checked as found
                    st = os.lstat(step)
                else:
                    if sync:
                        fsync_dir(parent)
                    parent = step
                    continue
            if not stat.S_ISDIR(st.st_mode):
                raise refusal(step, st.st_mode)
            parent = step
        return self.path

    def file(self, name: str) -> str:
        """The path (text) of file `name` in this directory, after `check()`: for a caller that opens
        it with `O_NOFOLLOW` (a link in the file's own place is refused by the open)."""
        return f"{self.check()}/{name}"

    def entry(self, name: str) -> Path:
        """The path of `name` in this directory after `check()`, refused if `name` itself is a symlink:
        for what is read without `O_NOFOLLOW`, renamed or removed with what it holds (a session's refs
        directory, a trash entry)."""
        path = f"{self.check()}/{name}"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return Path(path)
        if stat.S_ISLNK(st.st_mode):
            raise refusal(path, st.st_mode, leaf=True)
        return Path(path)

    def listdir(self) -> list[str]:
        """The names in this directory ([] when it is absent), after `check()`."""
        try:
            return os.listdir(self.check())
        except FileNotFoundError:
            return []

    def check_tree(self) -> Path:
        """`check()`, and no symlink anywhere below this directory (`StorePathError` naming the first):
        what a caller about to delete the whole tree (a trash entry, an import's staging) calls, so
        nothing it removes is a link into somewhere else, even one `rmtree` would not follow."""
        top = self.check()
        for here, dirs, files in os.walk(top):  # never follows a link
            for name in sorted(dirs + files):
                path = os.path.join(here, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    raise refusal(path, st.st_mode, leaf=name in files)
        return top

    def temp_files(self, prefix: str = ".tmp-") -> list[Path]:
        """The temp files a write killed mid-way left here (`fsutil.write_temp`'s), in name order:
        regular files only, so whatever a caller deletes from this list is inside the store."""
        try:
            with os.scandir(self.check()) as entries:
                found = sorted(
                    e.name for e in entries if e.name.startswith(prefix) and e.is_file(follow_symlinks=False)
                )
        except FileNotFoundError:
            return []
        return [self.path / name for name in found]


def _ends(rel: str) -> list[int]:
    """Where each component of `rel` ends (-1: at the end)."""
    ends = [i for i, c in enumerate(rel) if c == "/"]
    return [*ends, -1]


def refusal(path: str, mode: int, *, leaf: bool = False) -> StorePathError:
    """The error for store entry `path` found to be `mode` where a real directory (or, for a `leaf`,
    anything but a symlink) belongs."""
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        fix = "the file itself" if leaf else "a real directory holding what belongs there"
        return StorePathError(
            f"{path} is a symlink: nothing is read or written through it (it points to {target}); "
            f"replace it with {fix}, then retry"
        )
    return StorePathError(
        f"{path} is {file_kind(mode)} where the store keeps a directory: nothing is read or written "
        "through it; move it out of the store, then retry"
    )
