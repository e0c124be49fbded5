"""`SessionStore`: the entry point of the public API (DESIGN §5).

The directory, its settings and its locks belong to `StoreLayout` (porcelain/session/layout.py); this module
adds what needs the layers above the layout: opening sessions, forks, revisions, fsck and gc.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessionstore.accounting.settings import Settings
from sessionstore.errors import NotAStoreError
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.names import check_name, refuse_mangled_url
from sessionstore.porcelain.session import heads
from sessionstore.porcelain.session.layout import (
    DEFAULT_DIRNAME,
    FORMAT_VERSION,
    STORE_ENV,
    SessionInfo,
    StoreLayout,
    default_root,
    load_settings,
    locate_root,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sessionstore.porcelain.maintenance.fsck_gc import FsckReport, GcReport, Progress
    from sessionstore.porcelain.session.session import Session

__all__ = ["DEFAULT_DIRNAME", "FORMAT_VERSION", "SessionInfo", "SessionStore", "default_root"]


def _warm_session_writes() -> None:
    """What a first `Session.append` imports lazily beyond the codec (run on the warm-up thread):
    the session module with its writer and cascade, the lock module and the blob writer's pool."""
    import concurrent.futures  # noqa: F401

    from sessionstore.plumbing import locks  # noqa: F401
    from sessionstore.porcelain.session import session  # noqa: F401


class SessionStore(StoreLayout):
    """A directory of sessions: blobs, logs, checkpoint refs, locks, and the settings that apply."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        settings: Settings | None = None,
        overrides: Mapping[str, Any] | None = None,
        warm: bool = True,
    ) -> SessionStore:
        """Open the store at `path` (default: `default_root()`, which honours SESSIONSTORE_DIR), creating
        it when `create`.

        Settings are loaded once, here: `settings` when given (used as is), else the store's project
        pyproject.toml, then SESSIONSTORE_* variables, then `overrides` (CLI flags; None values count as
        not given). See porcelain/session/layout.py for which pyproject.toml that is.

        `warm` (the default) starts loading, on daemon threads and once per process, what the first
        `Session.append` would otherwise wait for: the tokenizer's table, pydantic's message
        serializers and the session modules (`accounting.tokens.preload`). Opening itself does not
        wait; an append that comes first does what is left. Read-only callers pass `warm=False`:
        the `session` CLI does, so `session list` or `log` never load pydantic-ai or a tokenizer.
        """
        target = os.fspath(path) if path is not None else os.environ.get(STORE_ENV) or None
        if target is not None and "://" in target:  # s3://bucket/prefix and the like (DESIGN §13)
            from sessionstore.plumbing.object_storage import open_url  # only such a store loads it

            backend = open_url(target)
            backend.check(create=create, version=FORMAT_VERSION)
            if settings is None:  # the project is the current directory's: the store has no directory
                settings = load_settings(Path.cwd() / DEFAULT_DIRNAME, overrides=overrides)
            return cls._opened(backend.root, settings, warm, backend)
        if path is not None:
            root = Path(path)
        else:  # found as git finds .git; when there is none, say where it looked
            found = locate_root()
            root = found.path
            if not create and not (root / "VERSION").is_file():
                raise NotAStoreError(
                    f"no session store ({found.where}): run `session init` to create {root}, "
                    "or pass --store PATH"
                )
        refuse_mangled_url(root)  # `s3:/bucket`: a URL made into a Path
        cls.check(root, create=create)
        if settings is None:
            settings = load_settings(root, overrides=overrides)
        return cls._opened(root, settings, warm)

    @classmethod
    def _opened(cls, root: Any, settings: Settings, warm: bool, backend: Any = None) -> SessionStore:
        if warm:
            from sessionstore.accounting.tokens import (
                preload,
            )  # lazily: `warm=False` (the CLI) never imports it

            preload(_warm_session_writes)
        return cls(root, settings, backend)

    def infos(self, derive: Callable[[StoreLayout, str], str] | None = None) -> list[SessionInfo]:
        """Every session's `info`, sorted by name (with `derive`'s value as `title`): the heads cache
        (`heads.infos`) reads only the logs that changed since it last looked. On object storage the
        heads come from their hints (`ObjectBackend.heads`, O(sessions / 1000) requests), untitled:
        no titles are kept there yet."""
        if self.on_object_storage:
            return [
                SessionInfo(name, head, k, "") for name, (head, k) in sorted(self.backend.heads().items())
            ]
        return heads.infos(self, derive)

    def session(self, name: str, *, create: bool = True) -> Session:
        """Open session `name` (its replayed history), creating an empty one when `create`."""
        from sessionstore.porcelain.session.session import (
            Session,
        )  # lazily: read-only commands never import pydantic-ai

        if not create and not self.exists(name):
            raise self.unknown_session(name)
        return Session(self, check_name(name))

    def fork(self, rev: str | Commit, new_name: str) -> Session:
        """A new session whose history is the state at `rev` (a revision, or a `Commit` from
        `resolve`), sharing its blobs (nothing copied)."""
        from sessionstore.porcelain.session.session import Session

        target = rev if isinstance(rev, Commit) else self.resolve(rev)
        return Session.fork_from(self, target, check_name(new_name))

    def resolve(self, rev: str, *, within: str | None = None) -> Commit:
        """The commit `rev` names (DESIGN §4); `UnknownRevision` lists candidates. A revision naming a
        session resolves in it; a bare commit id `within` that session first (see revisions.resolve)."""
        from sessionstore.porcelain.session.revisions import resolve

        return resolve(self, rev, within=within)

    def fsck(self, *, repair: bool = False) -> FsckReport:
        from sessionstore.porcelain.maintenance.fsck_gc import fsck

        return fsck(self, repair=repair)

    def gc(
        self,
        *,
        grace_days: float = 14.0,
        dry_run: bool = False,
        include_committed: bool = False,
        progress: Progress | None = None,
    ) -> GcReport:
        """Delete unreachable blobs older than `grace_days` (`maintenance.gc`). A session removed
        with `rm` less than `grace_days` ago keeps its blobs, so `rm --undo` works for the whole grace
        period; older trash entries are deleted after their blobs."""
        from sessionstore.porcelain.history import naming
        from sessionstore.porcelain.maintenance.fsck_gc import gc

        if self.on_object_storage:  # no trash: `rm` is not available there yet
            from sessionstore.porcelain.maintenance.fsck_gc import gc as gc_objects

            return gc_objects(self, grace_days=grace_days, dry_run=dry_run, progress=progress)
        old: list[naming.Removed] = []

        def young_trash() -> list[Path]:  # listed with writers held off: an `rm` cannot slip between
            young, old[:] = naming.trash_by_age(self, grace_days)
            return [naming.removed_log(self, entry) for entry in young]

        report = gc(
            self, grace_days=grace_days, dry_run=dry_run, include_committed=include_committed,
            progress=progress, also_reaching=young_trash,
        )  # fmt: skip
        if dry_run:
            report.trash_removed = [f"{entry.name}.{entry.when}" for entry in old]
        else:
            with self.store_lock():
                report.trash_removed = naming.purge_removed(self, old)
        return report
