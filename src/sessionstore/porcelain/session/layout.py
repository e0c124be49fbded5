"""The store's directory (DESIGN §2) and its settings (DESIGN §10): one owner for both.

`StoreLayout` knows where everything of a store lives (VERSION, objects/, logs/, refs/, locks/, the team's
MEMORY.md), which settings apply to it, and how to take its locks. Everything above it (the writer,
sessions, revisions, maintenance, the CLI) asks it; nothing else builds a store path or loads settings.

Where a store's settings come from, later wins:

1. defaults;
2. `[tool.sessionstore]` of the pyproject.toml nearest the store root (the store's own project), or, for
   a store outside any project, the one nearest the current directory;
3. `SESSIONSTORE_*` environment variables;
4. an explicit `Settings` (replaces 1-3) or CLI flags (`overrides`, on top of 1-3).

Python and the CLI both open stores through `SessionStore.open`, so for the same store and directory they
read the same values.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sessionstore.accounting.settings import Settings, find_pyproject
from sessionstore.errors import NotAStoreError, SessionStoreError, UnknownRevision
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.file_backend import FileBackend
from sessionstore.plumbing.fsutil import atomic_replace, fsync_dir, read_regular
from sessionstore.plumbing.locks import STORE_LOCK, locked
from sessionstore.plumbing.logs import Log
from sessionstore.plumbing.names import check_name
from sessionstore.plumbing.objects import ObjectStore
from sessionstore.plumbing.refs import RefStore
from sessionstore.plumbing.storedir import StoreDir

if TYPE_CHECKING:
    from collections.abc import Callable

    from sessionstore.compaction.events import CompactionEvent
    from sessionstore.plumbing.backend import Backend

FORMAT_VERSION = "1"
DEFAULT_DIRNAME = ".sessions"
STORE_ENV = "SESSIONSTORE_DIR"
GITIGNORE = b"locks/\nindex/\n"
"""Neither travels: locks are per machine, index/ is derived from the logs (see `HeadsCache`)."""
STORE_DIRS = (
    "objects", "logs", "refs", "refs/checkpoints", "locks", "locks/importing", "trash", "titles", "index",
)  # fmt: skip
"""Every directory at a fixed place in a store (DESIGN §2 and the porcelain's own: an import's staging,
the trash, titles, the caches): each checked when a store is opened, and by every use."""
GITATTRIBUTES = b"* -text\n"
"""Blobs are named by the sha256 of their exact bytes: git must never convert their line endings."""


class DefaultRoot(NamedTuple):
    """The store a command without `--store` uses, and how it was found (for the error when none is)."""

    path: Path
    where: str
    """Where it looked, said in words: `SESSIONSTORE_DIR`, the git top level, or the directories
    searched outside git."""


def locate_root(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> DefaultRoot:
    """`SESSIONSTORE_DIR` when set; else `.sessions` at the git top level above `cwd`; outside git, the
    nearest `.sessions` store in `cwd` or a directory above it (found upward, as git finds `.git`), else
    `.sessions` in `cwd` (where `session init` creates one).

    No subprocess (start-up matters): the git top level is the nearest directory holding `.git`.
    """
    environ = os.environ if env is None else env
    if configured := environ.get(STORE_ENV):
        return DefaultRoot(Path(configured), f"${STORE_ENV}")
    here = (cwd or Path.cwd()).resolve()
    nearest: Path | None = None
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return DefaultRoot(directory / DEFAULT_DIRNAME, f"at the git top level {directory}")
        if nearest is None and (directory / DEFAULT_DIRNAME / "VERSION").is_file():
            nearest = directory / DEFAULT_DIRNAME
    if nearest is not None:
        return DefaultRoot(nearest, f"the nearest {DEFAULT_DIRNAME}/ above {here} (no git repository)")
    looked = f"{here}" if here == here.parent else f"{here} and every directory above it"
    return DefaultRoot(
        here / DEFAULT_DIRNAME, f"looked for {DEFAULT_DIRNAME}/ in {looked}; not in a git repository"
    )


def default_root(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The store a command without `--store` uses (see `locate_root`)."""
    return locate_root(cwd, env).path


def project_pyproject(root: Path, cwd: Path | None = None) -> Path | None:
    """The pyproject.toml whose `[tool.sessionstore]` configures the store at `root` (see the module doc)."""
    return find_pyproject(root) or find_pyproject(cwd or Path.cwd())


def load_settings(
    root: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings of the store at `root`: its project's pyproject.toml < `env` < `overrides`."""
    pyproject = project_pyproject(root, cwd)
    start = pyproject.parent if pyproject is not None else root  # None: no project above either
    return Settings.load(start=start, env=env, overrides=overrides)


class SessionInfo(NamedTuple):
    """What `session list` shows, read from the head line and the refs only.

    Immutable, compared field by field. A named tuple rather than a frozen dataclass: `session list`
    makes one per session (10,000 in a big store), and a tuple is built in a third of the time and
    defined without the dataclass machinery's start-up cost. (Its `count` is the head's message count,
    not `tuple.count`.)"""

    name: str
    head: Commit | None
    checkpoints: int
    title: str | None = None
    """`derive(layout, name)` when `infos` was given one (the derived title), else None."""

    @property
    def count(self) -> int:  # type: ignore[override]
        return self.head.count if self.head else 0

    @property
    def tokens(self) -> int:
        return self.head.tokens if self.head else 0


class StoreLayout:
    """A store directory and its settings: blobs, logs, checkpoint refs, locks and MEMORY.md."""

    def __init__(self, root: Path | StoreDir, settings: Settings, backend: Backend | None = None) -> None:
        self.backend: Any = backend if backend is not None else FileBackend(root)
        """Where blobs, commit chains and refs are kept (plumbing/backend.py's interfaces): the
        directory `root` by default, or object storage (`root` is then the store's URL). An import's
        staging store is a `StoreDir` below the real store's root, so its paths are checked from there."""
        self.root = root.path if isinstance(root, StoreDir) else root
        self.settings = settings
        """Loaded once when the store is opened (see the module docstring); every layer reads these."""
        self.objects: ObjectStore = self.backend.objects
        self.refs: RefStore = self.backend.refs
        self.listeners: list[Callable[[CompactionEvent], None]] = []
        """Called with every compaction event of every session opened from this store."""
        self.summarizer: Any = None
        """The summary model for tier 2, memory compression and `Session.end`: a pydantic-ai `Model` or
        model id. None means the `model` setting ("extractive", the offline summarizer, by default)."""

    @property
    def on_object_storage(self) -> bool:
        """True for a store on object storage (`s3://...`): no directory, no locks (DESIGN §13)."""
        return not isinstance(self.backend, FileBackend)

    def directory_only(self, what: str, why: str) -> None:
        """Refuse `what` on object storage in one line, saying `why` it needs a store directory, before
        anything is changed (`SessionStoreError`, CLI exit 2)."""
        if self.on_object_storage:
            raise SessionStoreError(
                f"{what} needs a store directory: {self.root} is on object storage, where {why}; "
                "nothing was changed"
            )

    @property
    def top(self) -> StoreDir:
        """The store's directory as a `StoreDir`: every path below it is reached from it (`top /
        "trash"`) and checked on use (plumbing/storedir.py). A one-line error on object storage."""
        return self.backend.top

    @property
    def logs(self) -> StoreDir:
        return self.backend.logs

    @property
    def locks(self) -> StoreDir:
        return self.backend.locks

    @property
    def logs_dir(self) -> Path:
        """The directory of the log files (refused with a one-line error on object storage)."""
        return self.backend.logs_dir

    @property
    def locks_dir(self) -> Path:
        return self.backend.locks_dir

    @property
    def summary_model(self) -> Any:
        """What summarizes for this store: `summarizer` when set, else the `model` setting."""
        return self.summarizer if self.summarizer is not None else self.settings.model

    # -- creating and checking the directory --------------------------------------------------------

    @staticmethod
    def check(root: Path, *, create: bool) -> None:
        """Make sure `root` is a store of this format, creating it when `create` (else NotAStoreError)."""
        version: bytes | None = None
        if root.is_dir():  # never through a link: a VERSION that is one is refused, not followed
            with contextlib.suppress(FileNotFoundError):
                version = read_regular(root / "VERSION", what="the store's VERSION file")
        if version is None:
            if not create:
                raise NotAStoreError(f"{root} is not a session store: run `session init` (or pass --store)")
            StoreLayout.create(root)
        elif (found := version.decode("ascii", errors="replace").strip()) != FORMAT_VERSION:
            raise NotAStoreError(
                f"{root} has store format {found!r}, this sessionstore reads {FORMAT_VERSION!r}: upgrade it"
            )
        top = StoreDir(root)
        for sub in STORE_DIRS:  # ~10 lstats: a command never starts on a store with a linked directory
            top.below(sub).check()

    @staticmethod
    def create(root: Path) -> None:
        """Create the directories, `.gitignore`, `.gitattributes`, then VERSION last (it marks a store)."""
        if root.exists() and not root.is_dir():
            raise NotAStoreError(f"{root} exists and is not a directory: choose another --store path")
        try:
            root.mkdir(parents=True, exist_ok=True)
            for sub in ("objects", "logs", "refs/checkpoints", "locks"):
                StoreDir(root).below(sub).make(sync=False)  # VERSION's rename below syncs the root
            atomic_replace(root / ".gitignore", GITIGNORE)
            atomic_replace(root / ".gitattributes", GITATTRIBUTES)
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
        """The team's MEMORY.md: at the git top level above the store, else beside the store (for a
        store on object storage: at the git top level above the current directory, else in it)."""
        here = Path.cwd() / DEFAULT_DIRNAME if self.on_object_storage else self.root.resolve()
        for directory in here.parents:
            if (directory / ".git").exists():
                return directory / "MEMORY.md"
        return here.parent / "MEMORY.md"

    # -- sessions on disk ---------------------------------------------------------------------------

    def log(self, name: str) -> Log:
        return self.backend.log(check_name(name))

    def exists(self, name: str) -> bool:
        return self.log(name).exists()

    def sessions(self) -> list[str]:
        """Names of all sessions, sorted. A stray `.jsonl` in logs/ (a directory, or a name no session
        can have, like a copy named "x (1).jsonl") is no session: `stray_logs` lists them for fsck."""
        return self.backend.sessions()

    def stray_logs(self) -> list[str]:
        """File names under logs/ that look like logs but cannot be one (see `sessions`), sorted."""
        if self.on_object_storage:
            return []
        return sorted(f"{name}.jsonl" for name, is_log in self.backend.log_entries() if not is_log)

    def info(self, name: str) -> SessionInfo:
        """Head commit and checkpoint count of `name`, without loading any message."""
        if self.on_object_storage:
            return SessionInfo(name, self.log(name).head(), len(self.refs.numbers(name)))
        checkpoints = sum(1 for k in self.refs.session_dir(name).listdir() if k.isdigit())
        return SessionInfo(name, self.log(name).head(), checkpoints)

    def close_names(self, name: str) -> list[str]:
        """Up to three session names close to `name` (a typo's did-you-mean), closest first."""
        import difflib  # errors only: start-up stays lean

        return difflib.get_close_matches(name, self.sessions(), n=3)

    def unknown_session(self, name: str) -> SessionStoreError:
        """The error for a session that does not exist, suggesting close names."""
        close = self.close_names(name)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ": see `session list`"
        return UnknownRevision(f"no session {name!r}{hint}")

    def require(self, name: str) -> None:
        """Refuse a session name that does not exist, suggesting close ones (no message is loaded)."""
        if not self.exists(name):
            raise self.unknown_session(name)

    # -- locks --------------------------------------------------------------------------------------

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """The session's write lock (DESIGN §3): every commit of `name` is written under it. On object
        storage nothing is held: the conditional create of the next commit excludes (DESIGN §13)."""
        with self.backend.exclusion.session(name, self.settings.lock_timeout_s):
            yield

    @contextmanager
    def store_lock(self) -> Iterator[None]:
        """The store-wide lock (gc, rm); none on object storage, where gc relies on its grace period."""
        if self.on_object_storage:
            yield
            return
        with locked(self.locks, STORE_LOCK, self.settings.lock_timeout_s, what=f"store {self.root}"):
            yield
