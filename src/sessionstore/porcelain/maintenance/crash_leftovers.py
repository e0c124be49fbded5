"""What a crash leaves outside the logs and blobs, and what `session fsck` and `session gc` do with it.

- **Temp files** (`.tmp-*`) of writes killed mid-way: a checkpoint ref's in
  `refs/checkpoints/<session>/` (written, fsynced, then linked into place: `RefStore.stray_temps`), a
  title's in `titles/` and a move journal's in `trash/` (`file_moves.stray_temps`). None is ever read. fsck
  mentions them in a note, not a problem; gc deletes those older than its grace period, the rule it
  applies to blobs. Every writer of them holds a session lock, which holds the writers' side of the gc
  lock, so while gc runs (writers held off) none is in use, even at grace 0. (`objects/`' own temp
  files are the object store's: `ObjectStore.stray_temps`.)
- **Interrupted moves**: a `session rm`, `rm --undo` or `rename` a crash cut between its renames
  (`file_moves`): fsck names each, `--repair` finishes it from its journal.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.fsutil import fsync_dir
from sessionstore.porcelain.session import file_moves

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore


def leftover_temps(store: SessionStore) -> list[Path]:
    """Every leftover temp file outside `objects/` (see above): regular files only, none reached
    through a symlinked directory, so whatever a caller deletes from this list is inside the store."""
    return [*store.refs.stray_temps(), *file_moves.stray_temps(store)]


def temps_note(store: SessionStore) -> str | None:
    """fsck's one line about the leftover temp files, or None when there are none."""
    temps = [str(t.relative_to(store.root)) for t in leftover_temps(store)]
    if not temps:
        return None
    more = f" (and {len(temps) - 1} more)" if len(temps) > 1 else ""
    return (
        f"{temps[0]}{more}: temp file of a write a crash interrupted, never read; `session gc` removes it "
        "once older than its grace period"
    )


def prune_temps(store: SessionStore, cutoff: float, *, dry_run: bool) -> tuple[list[str], int]:
    """Delete the leftover temp files last changed at or before `cutoff` (a Unix time); returns their
    store-relative paths (deleted, or in a dry run only listed) and how many younger ones were kept.
    Call with writers held off (`gc_exclusive`)."""
    removed: list[str] = []
    kept = 0
    touched: set[Path] = set()
    for tmp in leftover_temps(store):
        try:
            young = tmp.lstat().st_mtime > cutoff
        except FileNotFoundError:
            continue
        if young:
            kept += 1
            continue
        if not dry_run:
            tmp.unlink(missing_ok=True)
            touched.add(tmp.parent)
        removed.append(str(tmp.relative_to(store.root)))
    for directory in touched:
        fsync_dir(directory)
    return removed, kept


def check_moves(store: SessionStore, repair: bool, problems: list[str], repaired: list[str]) -> None:
    """fsck's part for interrupted moves: one problem each, or with `repair` each finished (a line in
    `repaired`; one it cannot finish stays a problem, naming where its files wait)."""
    for found in file_moves.interrupted(store):
        if not repair:
            problems.append(
                f"`{found.what}` was interrupted (its journal is {file_moves.TRASH}/{found.journal.name}); "
                "`session fsck --repair` finishes it"
            )
            continue
        try:
            if said := file_moves.finish(store, found):
                repaired.append(said)
        except SessionStoreError as err:
            problems.append(str(err))
