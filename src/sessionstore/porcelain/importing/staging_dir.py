"""Where `session import` builds a session before it exists: `locks/importing/<name>/` (git ignores
locks/), a staging store with its own logs/ and refs/ that writes blobs into the real store's objects.

`publish` moves it in: the refs by one rename (invisible without a log), then the log by one link,
which is the moment the session appears. Anything else under `locks/importing/`, and checkpoint refs
of a session with no log, are what an interrupted import left: `leftover_imports` lists them (fsck
reports them) and `remove_leftover_import` removes them under the session lock (fsck --repair, and the
next import of the name).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from sessionstore.plumbing.fsutil import fsync_dir
from sessionstore.plumbing.names import is_valid_name
from sessionstore.porcelain.session.layout import StoreLayout

STAGING = "importing"
"""`locks/importing/<name>/`: where an import builds its session before publishing it."""


def remove_staging(root: Path) -> None:
    shutil.rmtree(root)
    with contextlib.suppress(OSError):  # locks/importing/ goes once empty (another import may be in it)
        root.parent.rmdir()


def _staging_root(store: StoreLayout, name: str) -> Path:
    return store.locks_dir / STAGING / name


def staging_store(store: StoreLayout, name: str) -> StoreLayout:
    """A store over `locks/importing/<name>/` that writes blobs into the real store's objects."""
    root = _staging_root(store, name)
    for sub in ("logs", "refs/checkpoints"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    staging = StoreLayout(root, store.settings)
    staging.objects = store.objects  # blobs go where the published log will reach them
    return staging


def publish(store: StoreLayout, staging: StoreLayout, name: str) -> None:
    """Refs first (invisible without a log), then the log: its link is when the session appears."""
    refs = staging.refs.dir / name
    if refs.is_dir():
        store.refs.dir.mkdir(parents=True, exist_ok=True)
        os.rename(refs, store.refs.dir / name)
        fsync_dir(store.refs.dir)
    os.link(staging.log(name).path, store.log(name).path)  # never replaces: the lock says it is new
    fsync_dir(store.logs_dir)


def leftover_imports(store: StoreLayout) -> list[tuple[str, str]]:
    """(session name, what) for each thing an interrupted import left: a staging directory, or
    checkpoint refs whose session has no log."""
    out: list[tuple[str, str]] = []
    staging = store.locks_dir / STAGING
    if staging.is_dir():
        out += [(p.name, f"locks/{STAGING}/{p.name}/") for p in sorted(staging.iterdir())]
    sessions = set(store.sessions())
    out += [(n, f"refs/checkpoints/{n}/ (no log)") for n in store.refs.sessions() if n not in sessions]
    return out


def remove_leftover_import(store: StoreLayout, name: str, *, locked: bool = False) -> bool:
    """Remove what an interrupted import of `name` left (see `leftover_imports`); True if anything
    was. Takes the session lock unless the caller holds it (`locked`), so a running import is never
    disturbed."""
    if not is_valid_name(name):
        target = store.locks_dir / STAGING / name
        if target.is_dir() and not target.is_symlink():
            remove_staging(target)
            return True
        return False
    if not locked:
        with store.lock(name):
            return remove_leftover_import(store, name, locked=True)
    removed = False
    root = _staging_root(store, name)
    if root.is_dir() and not root.is_symlink():
        remove_staging(root)
        removed = True
    if not store.exists(name) and name in store.refs.sessions():
        store.refs.remove_all(name)
        removed = True
    return removed
