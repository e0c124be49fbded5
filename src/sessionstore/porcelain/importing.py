"""Persisting an `ImportedTranscript` as a new session, all or nothing.

Each turn step becomes an `import` commit and each compaction step a tier-2 `compaction` commit with
its checkpoint ref (marked `source: import`), so an imported history replays from its last compaction
exactly as the original agent resumed. The compaction cascade never runs: an import stores what was
said, it does not summarise it.

All or nothing: the session lock is held for the whole import, and if any step fails the session's
log and checkpoint refs are removed before the lock is released, so no reader ever sees a partial
session after the failure. Blobs already written stay as unreachable orphans; `session gc` prunes them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ImportFormatError, SessionStoreError, StaleSessionError
from ..plumbing.fsutil import fsync_dir
from ..plumbing.names import check_name
from .session import Session

if TYPE_CHECKING:
    from ..formats.transcripts import ImportedStep, ImportedTranscript
    from .layout import StoreLayout as SessionStore

Progress = Callable[[int, int], None]


def import_transcript(
    store: SessionStore,
    transcript: ImportedTranscript,
    name: str | None = None,
    *,
    progress: Progress | None = None,
) -> Session:
    """Write `transcript` into the new session `name` (default: its suggested name) and return it.

    Refuses an existing session name before writing anything. `progress(done, total)` is called after
    each step.
    """
    name = check_name(name or transcript.suggested_name)
    if not transcript.steps:
        raise ImportFormatError(f"{transcript.source}: the transcript has no messages; nothing to import")
    with store.lock(name):
        if store.exists(name):
            raise SessionStoreError(
                f"session {name!r} already exists: import with --as NEW_NAME (nothing was written; "
                f"`session log {name}` shows what {name!r} holds)"
            )
        _discard(store, name)  # refs an interrupted import left without their log: never valid
        session = Session(store, name)
        try:
            _write_steps(session, transcript.steps, progress)
        except BaseException:
            _discard(store, name)
            raise
    return session


def _write_steps(session: Session, steps: list[ImportedStep], progress: Progress | None) -> None:
    """One commit per step, in order (the session lock held); a turn's commit carries the
    transcript's own time (`step_time`), not the time of the import."""
    from .reimport import step_time

    for done, step in enumerate(steps, start=1):
        if step.kind == "compaction":
            session.commit_checkpoint(step.messages, tier=2, extra={"source": "import"})
        else:
            session.commit_turn(step.messages, usage=step.usage, kind="import", time=step_time(step))
        if progress:
            progress(done, len(steps))


def append_steps(
    store: SessionStore, name: str, steps: list[ImportedStep], head: str, *, progress: Progress | None = None
) -> Session:
    """Append `steps` to the imported session `name` whose head is `head` (porcelain/reimport.py
    decides which steps are new); `StaleSessionError` if the session moved since. Not all or
    nothing: each step is one acknowledged commit, and a failure keeps the steps before it."""
    with store.lock(name):
        session = Session(store, name)
        if session.head is None or session.head.id != head:
            raise StaleSessionError(f"session {name!r} changed while it was compared: import again")
        _write_steps(session, steps, progress)
    return session


def _discard(store: SessionStore, name: str) -> None:
    """Remove a half-imported session's log, then its refs (lock held); its blobs are left to gc.

    The log goes first: without it the session is invisible, and leftover refs are cleared by the
    next import of the same name.
    """
    log = store.log(name)
    if log.exists():
        log.remove()
        fsync_dir(store.logs_dir)
    refs = store.refs.dir / name
    if refs.is_dir():
        shutil.rmtree(refs)
        fsync_dir(store.refs.dir)
