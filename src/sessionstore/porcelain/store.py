"""`SessionStore`: the on-disk layout of DESIGN §2 and the entry point of the public API."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..accounting.settings import Settings
from ..errors import NotAStoreError, SessionStoreError, UnknownRevision
from ..plumbing.fsutil import atomic_replace, fsync_dir
from ..plumbing.locks import MEMORY_LOCK, STORE_LOCK, locked
from ..plumbing.logs import Commit, Log
from ..plumbing.names import check_name, is_valid_name
from ..plumbing.objects import ObjectStore
from ..plumbing.refs import RefStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..compaction.events import CompactionEvent
    from .maintenance import FsckReport, GcReport
    from .session import Session

FORMAT_VERSION = "1"
DEFAULT_DIRNAME = ".sessions"


def default_root(cwd: Path | None = None) -> Path:
    """`.sessions` at the git top level above `cwd`, else in `cwd` (no subprocess: start-up matters)."""
    here = (cwd or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory / DEFAULT_DIRNAME
    return here / DEFAULT_DIRNAME


@dataclass(frozen=True)
class SessionInfo:
    """What `session list` shows, read from the head line and the refs only."""

    name: str
    head: Commit | None
    checkpoints: int

    @property
    def count(self) -> int:
        return self.head.count if self.head else 0

    @property
    def tokens(self) -> int:
        return self.head.tokens if self.head else 0


class SessionStore:
    """A directory of sessions: blobs, logs, checkpoint refs and locks."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        self.objects = ObjectStore(root)
        self.refs = RefStore(root)
        self.logs_dir = root / "logs"
        self.locks_dir = root / "locks"
        self.listeners: list[Callable[[CompactionEvent], None]] = []
        """Called with every compaction event of every session opened from this store."""
        self.summarizer: Any = None
        """The summary model for tier 2 and memory compression: a pydantic-ai `Model` or model id.
        None means the `model` setting ("extractive", the offline summarizer, by default)."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        settings: Settings | None = None,
    ) -> SessionStore:
        """Open the store at `path` (default: `default_root()`), creating it when `create`."""
        root = Path(path) if path is not None else default_root()
        version = root / "VERSION"
        if not version.is_file():
            if not create:
                raise NotAStoreError(f"{root} is not a session store: run `session init` (or pass --store)")
            cls._create(root)
        elif (found := version.read_text("ascii", errors="replace").strip()) != FORMAT_VERSION:
            raise NotAStoreError(
                f"{root} has store format {found!r}, this sessionstore reads {FORMAT_VERSION!r}: upgrade it"
            )
        return cls(root, settings or Settings())

    @staticmethod
    def _create(root: Path) -> None:
        if root.exists() and not root.is_dir():
            raise NotAStoreError(f"{root} exists and is not a directory: choose another --store path")
        try:
            for sub in ("objects", "logs", "refs/checkpoints", "locks"):
                (root / sub).mkdir(parents=True, exist_ok=True)
            atomic_replace(root / ".gitignore", b"locks/\n")
            atomic_replace(root / "VERSION", f"{FORMAT_VERSION}\n".encode())  # last: marks it complete
            fsync_dir(root.parent)
        except OSError as err:  # no VERSION was written, so nothing half-made passes for a store
            where = os.fsdecode(err.filename) if err.filename is not None else str(root)
            raise NotAStoreError(
                f"cannot create a session store at {root} ({where}: {err.strerror or err}): "
                "choose another --store path"
            ) from None

    @property
    def memory_path(self) -> Path:
        """The team's MEMORY.md: at the git top level above the store, else beside the store."""
        here = self.root.resolve()
        for directory in here.parents:
            if (directory / ".git").exists():
                return directory / "MEMORY.md"
        return here.parent / "MEMORY.md"

    # -- sessions -----------------------------------------------------------------------------------

    def log(self, name: str) -> Log:
        return Log(self.logs_dir, check_name(name))

    def exists(self, name: str) -> bool:
        return self.log(name).exists()

    def session(self, name: str, *, create: bool = True) -> Session:
        """Open session `name` (its replayed history), creating an empty one when `create`."""
        from .session import Session

        if not create and not self.exists(name):
            raise self._unknown_session(name)
        return Session(self, check_name(name))

    def sessions(self) -> list[str]:
        """Names of all sessions, sorted. A stray `.jsonl` in logs/ (a directory, or a name no session
        can have, like a copy named "x (1).jsonl") is no session: `stray_logs` lists them for fsck."""
        return sorted(name for name, is_log in self._log_entries() if is_log)

    def stray_logs(self) -> list[str]:
        """File names under logs/ that look like logs but cannot be one (see `sessions`), sorted."""
        return sorted(f"{name}.jsonl" for name, is_log in self._log_entries() if not is_log)

    def _log_entries(self) -> list[tuple[str, bool]]:
        try:
            with os.scandir(self.logs_dir) as entries:  # the file type comes with the listing: no stat
                return [
                    (e.name[:-6], is_valid_name(e.name[:-6]) and e.is_file())
                    for e in entries
                    if e.name.endswith(".jsonl")
                ]
        except FileNotFoundError:
            return []

    def info(self, name: str) -> SessionInfo:
        """Head commit and checkpoint count of `name`, without loading any message."""
        try:
            checkpoints = sum(1 for k in os.listdir(self.refs.dir / check_name(name)) if k.isdigit())
        except FileNotFoundError:
            checkpoints = 0
        return SessionInfo(name, self.log(name).head(), checkpoints)

    def infos(self) -> list[SessionInfo]:
        """`info` of every session, sorted by name: one directory listing each for logs and refs,
        then one short read per log (what `session list` needs on a store of thousands)."""
        try:
            with_refs = set(os.listdir(self.refs.dir))
        except FileNotFoundError:
            with_refs = set()
        out = []
        for name in self.sessions():
            checkpoints = 0
            if name in with_refs:
                checkpoints = sum(1 for k in os.listdir(self.refs.dir / name) if k.isdigit())
            out.append(SessionInfo(name, self.log(name).head(), checkpoints))
        return out

    def fork(self, rev: str, new_name: str) -> Session:
        """A new session whose history is the state at `rev`, sharing its blobs (nothing copied)."""
        from .session import Session

        return Session.fork_from(self, self.resolve(rev), check_name(new_name))

    # -- revisions, maintenance ---------------------------------------------------------------------

    def resolve(self, rev: str) -> Commit:
        """The commit `rev` names (DESIGN §4); `UnknownRevision` lists candidates."""
        from .revisions import resolve

        return resolve(self, rev)

    def fsck(self, *, repair: bool = False) -> FsckReport:
        from .maintenance import fsck

        return fsck(self, repair=repair)

    def gc(self, *, grace_days: float = 14.0, dry_run: bool = False) -> GcReport:
        from .maintenance import gc

        return gc(self, grace_days=grace_days, dry_run=dry_run)

    # -- locks and errors ---------------------------------------------------------------------------

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        with locked(self.locks_dir, name, self.settings.lock_timeout_s):
            yield

    @contextmanager
    def store_lock(self) -> Iterator[None]:
        with locked(self.locks_dir, STORE_LOCK, self.settings.lock_timeout_s, what=f"store {self.root}"):
            yield

    @contextmanager
    def memory_lock(self) -> Iterator[None]:
        """Held while a session rewrites MEMORY.md, so two sessions ending at once both keep their bullet."""
        with locked(self.locks_dir, MEMORY_LOCK, self.settings.lock_timeout_s, what=f"{self.memory_path}"):
            yield

    def _unknown_session(self, name: str) -> SessionStoreError:
        import difflib  # errors only: start-up stays lean

        close = difflib.get_close_matches(name, self.sessions(), n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ": see `session list`"
        return UnknownRevision(f"no session {name!r}{hint}")
