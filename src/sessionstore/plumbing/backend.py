"""The plumbing floor's interfaces: what the layers above ask of a store's storage (DESIGN §1, §13).

Like dulwich's `BaseObjectStore` and `RefsContainer`, each is the set of methods its callers already
use, so a backend is swapped under them without their noticing:

- `Blobs`: immutable blobs named by the sha256 of their bytes (`objects.ObjectStore` on files).
- `CommitChain`: one session's hash-chained commits (`logs.Log` on files).
- `CheckpointRefs`: write-once checkpoint refs (`refs.RefStore` on files).
- `Exclusion`: how one writer of a session excludes another (flocks on files; on object storage the
  conditional create of the next commit is the exclusion, so its lock is empty).
- `Backend`: the four of one store, plus the names of its sessions.

Two backends implement them: the directory (`file_backend.FileBackend`, the default, whose on-disk
format is DESIGN §2's) and object storage through obstore (`object_storage.ObjectBackend`: S3, GCS,
Azure, MinIO, and obstore's in-memory store for fast tests). tests/plumbing/test_backend_contract.py
runs one contract suite over every backend.

Positions: a commit's `offset` is where it sits in its chain and `end` where the next one starts: the
byte offset of its line in a log file, or its seq on object storage (one object per commit, `size` 1).
A checkpoint ref stores that position, so on either backend reaching a checkpoint is one read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .commits import Commit
    from .objects import Writing
    from .refs import CheckpointRef

T = TypeVar("T")


class Blobs(Protocol):
    """Content-addressed blobs: a name is a promise about the bytes.

    A caller may rely on: `write` is idempotent and durable when it returns; every read but the
    `read_unverified*` ones verifies the sha256 and raises `CorruptObjectError` naming a missing or
    bad object, never returning it."""

    def write(self, data: bytes, gate: Callable[[], object] | None = None) -> str:
        """Store `data` durably; its id. `gate()` runs before the bytes get their name: if it raises,
        nothing is stored."""
        ...

    def write_in_background(self, data: bytes, check: Callable[[bytes], None] | None = None) -> Writing:
        """`write` whose waiting happens on a worker: the id at once, `Writing.result()` to wait for."""
        ...

    def exists(self, oid: str) -> bool: ...

    def read(self, oid: str) -> bytes:
        """The verified bytes of `oid`."""
        ...

    def read_unverified(self, oid: str) -> bytes:
        """The bytes of `oid` as found, NOT verified (`CorruptObjectError` if it is missing): for a
        reader that verifies only what it uses (`session search`: blobs with a hit)."""
        ...

    def read_unverified_many(self, oids: Sequence[str]) -> list[bytes]:
        """`read_unverified` of each of `oids`, in order (fetched together where the backend can)."""
        ...

    def load(self, oids: Sequence[str], decode: Callable[[list[bytes]], T]) -> T:
        """`decode` of the bytes of `oids`, returned only once every blob verified."""
        ...

    def __iter__(self) -> Iterator[str]:
        """Every object id present."""
        ...

    def prune(self, oid: str, cutoff: float) -> int | None:
        """Delete `oid` if it was last written at or before `cutoff` (epoch seconds): bytes freed, or None."""
        ...


class CommitChain(Protocol):
    """One session's commits, oldest first, each naming its parent (DESIGN §2).

    A caller may rely on: what `head`, `scan` and `read_at` return verified (ids and chain links);
    `append` acknowledges a commit only once it is durable, and refuses with `StaleSessionError` when
    the chain's head is no longer `expected`: of two writers racing for one seq, one wins."""

    session: str

    def exists(self) -> bool: ...

    def head(self) -> Commit | None:
        """The newest acknowledged commit (None: no commit yet)."""
        ...

    def scan(self, *, since_reset: bool, end: int | None = None) -> tuple[list[Commit], int]:
        """Commits oldest first (all, or from the newest reset point), those before position `end`
        only when given, and the position after the last whole commit."""
        ...

    def read_at(self, offset: int) -> Commit:
        """The commit at position `offset` (what a checkpoint ref points at)."""
        ...

    def append(self, line: bytes, body: dict[str, Any], expected: Commit | None) -> Commit:
        """Append one commit line after `expected`; the acknowledged commit."""
        ...

    def extend(self, lines: bytes, expected: Commit | None) -> int:
        """Append verified commit lines after `expected`; the position of the first."""
        ...


class CheckpointRefs(Protocol):
    """Write-once checkpoint refs `checkpoints/<session>/<k>` (DESIGN §2): a second create of one
    raises `ImmutableRefError` and changes nothing."""

    def create(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef: ...

    def read(self, session: str, k: int) -> CheckpointRef:
        """Checkpoint `k`; `LookupError` if absent, `CorruptObjectError` if malformed."""
        ...

    def list(self, session: str) -> list[CheckpointRef]: ...

    def sessions(self) -> list[str]: ...


class Exclusion(Protocol):
    """How writers of one store exclude each other."""

    def session(self, name: str, timeout: float) -> AbstractContextManager[None]:
        """Held around every commit of session `name`."""
        ...


class Backend(Protocol):
    """A store's storage: blobs, commit chains, refs and exclusion, and where it is."""

    objects: Blobs
    refs: CheckpointRefs
    exclusion: Exclusion

    @property
    def url(self) -> str:
        """Where the store is, as a user names it (a directory, or `s3://bucket/prefix`)."""
        ...

    def log(self, session: str) -> CommitChain:
        """The commit chain of `session` (a valid name: the caller checked it)."""
        ...

    def sessions(self) -> list[str]:
        """Names of all sessions with at least one commit, sorted."""
        ...
