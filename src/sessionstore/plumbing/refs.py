"""Checkpoint refs: `refs/checkpoints/<session>/<k>`, write-once, content `<commit-id> <offset>\\n`.

A ref names the compaction commit a resumed session replays from and the byte offset of its log line,
so reaching a checkpoint is one seek. Refs are derivable from the logs (fsck checks and repairs them)
and are never rewritten: a second create raises `ImmutableRefError` and changes nothing.

A ref is written as `refs/checkpoints/<session>/.tmp-*` (fsynced) and then linked or renamed into place,
so a kill -9 mid-write can leave that temp file behind. It is never a ref (`numbers` reads digit names
only); `stray_temps` lists such files for `session gc` to remove and `session fsck` to mention.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptObjectError, ImmutableRefError
from .fsutil import atomic_replace, create_exclusive, fsync_dir, read_regular
from .names import check_name
from .storedir import StoreDir

TEMP_PREFIX = ".tmp-"
"""How the temp file of a ref write starts (`fsutil.write_temp`'s default prefix)."""


@dataclass(frozen=True)
class CheckpointRef:
    session: str
    k: int
    commit_id: str
    offset: int

    @property
    def name(self) -> str:
        return f"checkpoints/{self.session}/{self.k}"


class RefListing(ABC):
    """`entries` and `list` of a backend's refs, built on its `numbers` and `read` (one reading for all)."""

    @abstractmethod
    def numbers(self, session: str) -> list[int]:
        """The checkpoint numbers `session` has, ascending."""

    @abstractmethod
    def read(self, session: str, k: int) -> CheckpointRef:
        """Checkpoint `k` of `session` (`CorruptObjectError` when malformed)."""

    def entries(self, session: str) -> list[tuple[int, CheckpointRef | CorruptObjectError]]:
        """Every checkpoint of `session` by number, a malformed one as its error (fsck lists them all)."""
        out: list[tuple[int, CheckpointRef | CorruptObjectError]] = []
        for k in self.numbers(session):
            try:
                out.append((k, self.read(session, k)))
            except CorruptObjectError as err:
                out.append((k, err))
        return out

    def list(self, session: str) -> list[CheckpointRef]:
        """All checkpoints of `session`, by number (`CorruptObjectError` on the first malformed one)."""
        return [self.read(session, k) for k in self.numbers(session)]


class RefStore(RefListing):
    """The `refs/checkpoints` tree of one store."""

    def __init__(self, root: Path | StoreDir) -> None:
        self.home = (root if isinstance(root, StoreDir) else StoreDir(root)) / "refs" / "checkpoints"
        """`refs/checkpoints` (every use checks it and the session's directory: `storedir`)."""
        self.dir = self.home.path

    def session_dir(self, session: str) -> StoreDir:
        """`refs/checkpoints/<session>` (not checked yet: the caller checks or makes it)."""
        return self.home / check_name(session)

    def create(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef:
        """Create checkpoint `k` of `session` exactly once (atomic, durable)."""
        if k < 1:
            raise ValueError(f"checkpoint numbers start at 1, got {k}")
        directory = self.session_dir(session).make()
        ref = CheckpointRef(session, k, commit_id, offset)
        if not create_exclusive(directory / str(k), ref_bytes(commit_id, offset)):
            raise already_exists(ref)
        return ref

    def read(self, session: str, k: int) -> CheckpointRef:
        """Checkpoint `k` of `session`; `LookupError` if absent, `CorruptObjectError` (one line, naming
        the ref) if it is not `<64 hex digits> <offset>\\n` in ASCII or not a regular file."""
        path = self.session_dir(session).check() / str(k)
        name = f"checkpoints/{session}/{k}"
        try:
            data = read_regular(path, what=f"checkpoint ref {name}")
        except FileNotFoundError:
            raise LookupError(name) from None
        except CorruptObjectError:
            raise
        except Exception as err:  # SessionStoreError for a FIFO, a directory, ...
            raise CorruptObjectError(str(err)) from None
        return parse_ref(data, session, k)

    def numbers(self, session: str) -> list[int]:
        """The numbers of `session`'s checkpoints, ascending (digit names only: no temp file)."""
        names = self.session_dir(session).listdir()
        return sorted(int(name) for name in names if name.isascii() and name.isdigit())

    def stray_temps(self) -> Iterator[Path]:
        """The `.tmp-*` files a ref write killed mid-way left in `refs/checkpoints/<session>/`: regular
        files only, and a linked session directory is refused (`sessions`), so whatever a caller
        deletes from this list is inside the store. Names, not contents: a listed file may vanish
        meanwhile (its writer finished with it)."""
        for session in self.sessions():
            yield from (self.home / session).temp_files(TEMP_PREFIX)

    def rewrite_malformed(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef:
        """Replace a ref that does not parse (a flipped byte, git's conflict markers) by the value the
        log derives: fsck --repair only. A well-formed ref is never rewritten (`ImmutableRefError`)."""
        path = self.session_dir(session).check() / str(k)
        try:
            self.read(session, k)
        except CorruptObjectError:
            atomic_replace(path, f"{commit_id} {offset}\n".encode())
            return CheckpointRef(session, k, commit_id, offset)
        except LookupError:
            return self.create(session, k, commit_id, offset)
        raise ImmutableRefError(
            f"checkpoint ref checkpoints/{session}/{k} is well-formed: refs are write-once"
        )

    def rebuild(self, session: str, wanted: list[tuple[int, str, int]]) -> list[str]:
        """Make `session`'s refs exactly `wanted` ((k, commit id, offset), derived from its log) and
        return the names of the refs written or removed. fsck's conflict split only: after a merge the
        refs directory mixes both clones' checkpoints, and the log is the truth they derive from."""
        home = self.session_dir(session)
        directory = home.make()
        changed = []
        want = {str(k): f"{cid} {offset}\n".encode() for k, cid, offset in wanted}
        for name, data in want.items():
            path = directory / name
            try:
                same = read_regular(path, what="checkpoint ref") == data
            except FileNotFoundError:
                same = False
            if not same:
                atomic_replace(path, data)
                changed.append(f"checkpoints/{session}/{name}")
        for name in home.listdir():
            if name not in want:
                (directory / name).unlink()
                changed.append(f"checkpoints/{session}/{name}")
        fsync_dir(directory)
        return changed

    def remove_all(self, session: str) -> None:
        """Delete every ref of `session` (a session being discarded: an import that never published)."""
        home = self.session_dir(session)
        if not home.exists():
            return
        for name in home.listdir():
            (home.path / name).unlink()
        home.path.rmdir()
        fsync_dir(self.dir)

    def sessions(self) -> list[str]:
        """Names with a refs directory: real directories only; a link in the place of one is refused
        (`StorePathError`), since a caller would read or change what is in it."""
        try:
            with os.scandir(self.home.check()) as entries:
                found = sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries)
        except (FileNotFoundError, NotADirectoryError):
            return []
        for name, _, link in found:
            if link:
                (self.home / name).check()  # raises, naming it
        return [name for name, is_dir, _ in found if is_dir]


def already_exists(ref: CheckpointRef) -> ImmutableRefError:
    """The error for a second create of `ref`: refs are write-once."""
    return ImmutableRefError(
        f"checkpoint ref {ref.name} already exists and refs are write-once: "
        "compaction numbers checkpoints itself; nothing was changed"
    )


def ref_bytes(commit_id: str, offset: int) -> bytes:
    """A ref's content: `<commit-id> <position>\\n` (the position a backend gives its commits)."""
    return f"{commit_id} {offset}\n".encode()


def parse_ref(data: bytes, session: str, k: int) -> CheckpointRef:
    """The ref `checkpoints/<session>/<k>` holding `data`, on any backend; `CorruptObjectError` (one
    line, naming the ref) unless it is `<64 hex digits> <position>\\n` in ASCII."""
    why = _malformed(data)
    if why:
        raise CorruptObjectError(
            f"checkpoint ref checkpoints/{session}/{k} is malformed ({why}): `session fsck --repair` "
            "rewrites it from the log"
        )
    commit_id, offset = data.decode("ascii").split()
    return CheckpointRef(session, k, commit_id, int(offset))


def _malformed(data: bytes) -> str | None:
    """Why `data` is not a ref's content, or None."""
    if not data.isascii():
        at = next(i for i, b in enumerate(data) if b > 0x7F)
        return f"a non-ASCII byte 0x{data[at]:02x} at byte {at}"
    if b"<<<<<<<" in data or b">>>>>>>" in data:
        return "git conflict markers: two clones made this checkpoint"
    parts = data.split()
    if len(parts) != 2 or not parts[1].isdigit() or len(parts[0]) != 64 or not data.endswith(b"\n"):
        return "expected '<commit id> <byte offset>' and a newline"
    if not all(c in b"0123456789abcdef" for c in parts[0]):
        return "the commit id is not 64 hex digits"
    return None
