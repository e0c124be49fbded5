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

import gc
import hashlib
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..accounting.settings import Settings, find_pyproject
from ..errors import NotAStoreError, SessionStoreError, UnknownRevision
from ..plumbing.fsutil import atomic_replace, check_store_dir, fsync_dir, read_regular
from ..plumbing.locks import MEMORY_LOCK, STORE_LOCK, locked
from ..plumbing.logs import Commit, Log
from ..plumbing.names import check_name, is_valid_name
from ..plumbing.objects import ObjectStore
from ..plumbing.refs import RefStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..compaction.events import CompactionEvent

FORMAT_VERSION = "1"
DEFAULT_DIRNAME = ".sessions"
STORE_ENV = "SESSIONSTORE_DIR"
GITIGNORE = b"locks/\nindex/\n"
"""Neither travels: locks are per machine, index/ is derived from the logs (see `HeadsCache`)."""
GITATTRIBUTES = b"* -text\n"
"""Blobs are named by the sha256 of their exact bytes: git must never convert their line endings."""


def default_root(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """`SESSIONSTORE_DIR` when set, else `.sessions` at the git top level above `cwd`, else in `cwd`.

    No subprocess (start-up matters): the git top level is the nearest directory holding `.git`.
    """
    environ = os.environ if env is None else env
    if configured := environ.get(STORE_ENV):
        return Path(configured)
    here = (cwd or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory / DEFAULT_DIRNAME
    return here / DEFAULT_DIRNAME


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


@dataclass(frozen=True)
class SessionInfo:
    """What `session list` shows, read from the head line and the refs only."""

    name: str
    head: Commit | None
    checkpoints: int
    title: str | None = None
    """`derive(layout, name)` when `infos` was given one (the derived title), else None."""

    @property
    def count(self) -> int:
        return self.head.count if self.head else 0

    @property
    def tokens(self) -> int:
        return self.head.tokens if self.head else 0


class StoreLayout:
    """A store directory and its settings: blobs, logs, checkpoint refs, locks and MEMORY.md."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        """Loaded once when the store is opened (see the module docstring); every layer reads these."""
        self.objects = ObjectStore(root)
        self.refs = RefStore(root)
        self.logs_dir = root / "logs"
        self.locks_dir = root / "locks"
        self.listeners: list[Callable[[CompactionEvent], None]] = []
        """Called with every compaction event of every session opened from this store."""
        self.summarizer: Any = None
        """The summary model for tier 2, memory compression and `Session.end`: a pydantic-ai `Model` or
        model id. None means the `model` setting ("extractive", the offline summarizer, by default)."""

    @property
    def summary_model(self) -> Any:
        """What summarizes for this store: `summarizer` when set, else the `model` setting."""
        return self.summarizer if self.summarizer is not None else self.settings.model

    # -- creating and checking the directory --------------------------------------------------------

    @staticmethod
    def check(root: Path, *, create: bool) -> None:
        """Make sure `root` is a store of this format, creating it when `create` (else NotAStoreError)."""
        version = root / "VERSION"
        if not version.is_file():
            if not create:
                raise NotAStoreError(f"{root} is not a session store: run `session init` (or pass --store)")
            StoreLayout.create(root)
        elif (found := version.read_text("ascii", errors="replace").strip()) != FORMAT_VERSION:
            raise NotAStoreError(
                f"{root} has store format {found!r}, this sessionstore reads {FORMAT_VERSION!r}: upgrade it"
            )

    @staticmethod
    def create(root: Path) -> None:
        """Create the directories, `.gitignore`, `.gitattributes`, then VERSION last (it marks a store)."""
        if root.exists() and not root.is_dir():
            raise NotAStoreError(f"{root} exists and is not a directory: choose another --store path")
        try:
            for sub in ("objects", "logs", "refs/checkpoints", "locks"):
                (root / sub).mkdir(parents=True, exist_ok=True)
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
        """The team's MEMORY.md: at the git top level above the store, else beside the store."""
        here = self.root.resolve()
        for directory in here.parents:
            if (directory / ".git").exists():
                return directory / "MEMORY.md"
        return here.parent / "MEMORY.md"

    # -- sessions on disk ---------------------------------------------------------------------------

    def log(self, name: str) -> Log:
        return Log(self.logs_dir, check_name(name))

    def exists(self, name: str) -> bool:
        return self.log(name).exists()

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

    def infos(self, derive: Callable[[StoreLayout, str], str] | None = None) -> list[SessionInfo]:
        """`info` of every session, sorted by name (with `derive`'s value as `title`).

        What `session list` needs on a store of thousands: one listing of logs/ with a stat of each,
        and the heads cache (`HeadsCache`, index/sessions.json) for every log whose (size, mtime,
        inode) it recorded; only the others are read. Exactly what reading every head would give.
        """
        return HeadsCache(self).infos(derive)

    def unknown_session(self, name: str) -> SessionStoreError:
        """The error for a session that does not exist, suggesting close names."""
        import difflib  # errors only: start-up stays lean

        close = difflib.get_close_matches(name, self.sessions(), n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ": see `session list`"
        return UnknownRevision(f"no session {name!r}{hint}")

    def require(self, name: str) -> None:
        """Refuse a session name that does not exist, suggesting close ones (no message is loaded)."""
        if not self.exists(name):
            raise self.unknown_session(name)

    # -- locks --------------------------------------------------------------------------------------

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """The session's write lock (DESIGN §3): every commit of `name` is written under it."""
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


HEADS_FILE = Path("index") / "sessions.json"
_HEADS_MAGIC = b"sessionstore-heads 1 "
_RACY_NS = 2_000_000_000
"""A log changed this recently may change again within its mtime's granularity: not cached yet."""
_FIELDS = tuple(f.name for f in fields(Commit) if f.name != "session")
_FIELD_SET = frozenset(_FIELDS)
"""A cached head is its commit's fields: `Commit(**cached, session=name)` is the commit again."""
_MAX_CACHED_LINE = 4096
"""Longer head lines (a reset point's state) are read from the log each time, not copied here."""


class HeadsCache:
    """`index/sessions.json`: each session's head commit, checkpoint count and derived title, keyed by
    its log's (size, mtime_ns, inode), like git's index. Derived data, never trusted blindly:

    - an entry is used only while the log's key is unchanged and was not changing when it was read
      (mtime at least `_RACY_NS` before the read, git's "racily clean" rule); every other log is read;
    - the file carries the sha256 of its payload: damage (a flipped byte, a torn write) makes it
      empty, never an error, and the next listing rewrites it;
    - it is rewritten (temp, fsync, rename, fsync the directory) only when an entry changed, and not
      at all when the store is read-only; two listings at once both write a valid file.

    `check` compares it with the logs for `session fsck`; `rebuild` rewrites it from them.
    """

    def __init__(self, layout: StoreLayout) -> None:
        self.layout = layout
        self.path = layout.root / HEADS_FILE

    def load(self) -> dict[str, list[Any]]:
        """The cached entries, or {} when the file is missing, damaged or not in this format."""
        return self._read() or {}

    def _read(self) -> dict[str, list[Any]] | None:
        with suppress(OSError, SessionStoreError, orjson.JSONDecodeError, ValueError):
            check_store_dir(self.path.parent)
            data = read_regular(self.path, what=str(HEADS_FILE))
            header, _, payload = data.partition(b"\n")
            if header == _HEADS_MAGIC + hashlib.sha256(payload).hexdigest().encode():
                entries = orjson.loads(payload)
                if isinstance(entries, dict):
                    return entries
        return None

    def save(self, entries: dict[str, list[Any]]) -> None:
        payload = orjson.dumps(entries)
        data = _HEADS_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        directory = self.path.parent
        check_store_dir(directory)
        if not directory.is_dir():
            directory.mkdir()
            fsync_dir(self.layout.root)
        if not (directory / ".gitignore").exists():  # stores made before GITIGNORE listed index/
            atomic_replace(directory / ".gitignore", b"*\n")
        atomic_replace(self.path, data)

    def infos(
        self, derive: Callable[[StoreLayout, str], str] | None, *, cached: bool = True
    ) -> list[SessionInfo]:
        """Every session's info (see `StoreLayout.infos`), then the cache rewritten if it changed."""
        # Tens of thousands of small containers, none of them garbage: without pausing the cyclic
        # collector, its passes over them cost more than the listing itself (as in codec.decode).
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._infos(derive, cached=cached)
        finally:
            if paused:
                gc.enable()

    def _infos(self, derive: Callable[[StoreLayout, str], str] | None, *, cached: bool) -> list[SessionInfo]:
        layout = self.layout
        old = self.load() if cached else {}
        new: dict[str, list[Any]] = {}
        try:
            with_refs = set(os.listdir(layout.refs.dir))
        except FileNotFoundError:
            with_refs = set()
        out = []
        changed = False
        for name, st in _log_stats(layout, known=old):
            now = time.time_ns()
            key = [st.st_size, st.st_mtime_ns, st.st_ino]
            refs = _refs_key(layout, name) if name in with_refs else None
            entry = old.get(name)
            hit, head = _cached_head(entry, key, name, need_title=derive is not None)
            if not hit:
                head = layout.log(name).head()
            title = (entry[4] if hit else derive(layout, name)) if derive is not None else None
            if refs is None:
                checkpoints = 0
            elif hit and entry[2] == refs:
                checkpoints = entry[3]
            else:
                checkpoints = sum(1 for k in os.listdir(layout.refs.dir / name) if k.isdigit())
            out.append(SessionInfo(name, head, checkpoints, title))
            if now - st.st_mtime_ns < _RACY_NS or (head is not None and head.size > _MAX_CACHED_LINE):
                continue  # read again next time
            if refs is not None and now - refs[0] < _RACY_NS:
                refs = None  # its count is not cached yet
            kept = title if derive is not None else (entry[4] if hit else None)
            counted = checkpoints if refs is not None else None
            if hit and entry[2] == refs and entry[3] == counted and entry[4] == kept:
                new[name] = entry  # unchanged: no copy, and no deep comparison at the end
                continue
            fields = entry[1] if hit else ({k: getattr(head, k) for k in _FIELDS} if head else None)
            new[name] = [key, fields, refs, counted, kept]
            changed = True
        if changed or len(new) != len(old):
            with suppress(OSError, SessionStoreError, TypeError):  # a read-only store still lists
                self.save(new)
        return out

    def check(self) -> list[str]:
        """What is wrong with the cache (empty when it agrees with the logs, or is absent): for fsck.

        Damage, and any entry that would be used (its log's key unchanged) for another head than
        the log's own. Entries for changed or removed logs are not problems: they are never used.
        """
        if not self.path.exists():
            return []
        fix = "`session fsck --repair` rebuilds it (it is derived from the logs)"
        entries = self._read()
        if entries is None:
            return [f"{HEADS_FILE} is damaged (its checksum does not match its contents): {fix}"]
        problems = []
        for name, st in _log_stats(self.layout):
            entry = entries.get(name)
            hit, cached = _cached_head(entry, [st.st_size, st.st_mtime_ns, st.st_ino], name, need_title=False)
            if not hit:
                continue
            try:
                head = self.layout.log(name).head()
            except SessionStoreError:
                continue  # the log's own check names it
            if head != cached:
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached at another head than its log's: {fix}"
                )
        return problems

    def rebuild(self) -> None:
        """Rewrite the cache from the logs alone (`session fsck --repair`)."""
        self.path.unlink(missing_ok=True)
        self.infos(None, cached=False)


def _cached_head(entry: Any, key: list[int], name: str, *, need_title: bool) -> tuple[bool, Commit | None]:
    """(True, head) when `entry` is valid for a log with `key` (and holds a title if one is needed)."""
    try:
        if entry[0] != key or (need_title and entry[4] is None):
            return False, None
        fields = entry[1]
        if fields is None:
            return True, None
        if fields.keys() != _FIELD_SET:
            return False, None
        # `Commit(**fields, session=name)` without the frozen dataclass's 13 `object.__setattr__`
        # calls (7 us each time on 10,000 heads): the same instance state, set the way pickle does.
        commit = object.__new__(Commit)
        commit.__dict__.update(fields, session=name)
        return True, commit
    except (TypeError, IndexError, KeyError, AttributeError):
        return False, None


def _log_stats(
    layout: StoreLayout, known: Mapping[str, Any] | None = None
) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of every session log, sorted by name: exactly what `sessions` lists (a linked
    log among them is refused when `head` reads it). Names in `known` (the cache's, each checked
    when it was cached) skip the name check."""
    check_store_dir(layout.logs_dir)
    known = known or {}
    try:
        with os.scandir(layout.logs_dir) as entries:
            found = [
                (e.name[:-6], e.stat())
                for e in entries
                if e.name.endswith(".jsonl")
                and (e.name[:-6] in known or is_valid_name(e.name[:-6]))
                and e.is_file()
            ]
    except FileNotFoundError:
        return []
    return sorted(found, key=lambda item: item[0])


def _refs_key(layout: StoreLayout, name: str) -> list[int] | None:
    try:
        st = os.stat(layout.refs.dir / name)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_ino]
