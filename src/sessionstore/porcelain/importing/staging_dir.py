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

from sessionstore.plumbing.fsutil import fsync_dir
from sessionstore.plumbing.names import is_valid_name
from sessionstore.plumbing.storedir import StoreDir
from sessionstore.porcelain.session.layout import StoreLayout

STAGING = "importing"
"""`locks/importing/<name>/`: where an import builds its session before publishing it."""


def remove_staging(root: StoreDir) -> None:
    """Delete a staging directory (checked first: a link in its place, or on the way, is refused)."""
    shutil.rmtree(root.check_tree())
    with contextlib.suppress(OSError):  # locks/importing/ goes once empty (another import may be in it)
        root.path.parent.rmdir()


def _staging_root(store: StoreLayout, name: str) -> StoreDir:
    return store.locks / STAGING / name


def staging_store(store: StoreLayout, name: str) -> StoreLayout:
    """A store over `locks/importing/<name>/` that writes blobs into the real store's objects; its
    paths are checked from the real store's root."""
    staging = StoreLayout(_staging_root(store, name), store.settings)
    staging.logs.make()
    staging.refs.home.make()
    staging.objects = store.objects  # blobs go where the published log will reach them
    return staging


def publish(store: StoreLayout, staging: StoreLayout, name: str) -> None:
    """Refs first (invisible without a log), then the log: its link is when the session appears."""
    refs = staging.refs.session_dir(name)
    if refs.exists():
        os.rename(refs.path, store.refs.home.make() / name)
        fsync_dir(store.refs.dir)
    os.link(staging.log(name).path, store.log(name).path)  # never replaces: the lock says it is new
    fsync_dir(store.logs_dir)


def leftover_imports(store: StoreLayout) -> list[tuple[str, str]]:
    """(session name, what) for each thing an interrupted import left: a staging directory, or
    checkpoint refs whose session has no log."""
    staging = store.locks / STAGING
    out = [(name, f"locks/{STAGING}/{name}/") for name in sorted(staging.listdir())]
    sessions = set(store.sessions())
    out += [(n, f"refs/checkpoints/{n}/ (no log)") for n in store.refs.sessions() if n not in sessions]
    return out


def remove_leftover_import(store: StoreLayout, name: str, *, locked: bool = False) -> bool:
    """Remove what an interrupted import of `name` left (see `leftover_imports`); True if anything
    was. Takes the session lock unless the caller holds it (`locked`), so a running import is never
    disturbed."""
    root = _staging_root(store, name)  # checks nothing yet: a name no session has is no path either
    if not is_valid_name(name):
        if root.exists():
            remove_staging(root)
            return True
        return False
    if not locked:
        with store.lock(name):
            return remove_leftover_import(store, name, locked=True)
    removed = False
    if root.exists():
        remove_staging(root)
        removed = True
    if not store.exists(name) and name in store.refs.sessions():
        store.refs.remove_all(name)
        removed = True
    return removed
