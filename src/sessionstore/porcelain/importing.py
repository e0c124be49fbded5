"""Persisting an `ImportedTranscript` as a new session, all or nothing, even across kill -9.

Each turn step becomes an `import` commit and each compaction step a tier-2 `compaction` commit with
its checkpoint ref (marked `source: import`), so an imported history replays from its last compaction
exactly as the original agent resumed. The compaction cascade never runs: an import stores what was
said, it does not summarise it.

All or nothing: the session is built under `locks/importing/<name>/` (a staging store sharing the
real store's objects; git ignores locks/), with the session lock held throughout, and published only
at the end: its checkpoint refs are moved into `refs/checkpoints/<name>` by one rename, then its log is
linked into `logs/<name>.jsonl`, which is the moment the session appears. A failure, Ctrl-C or kill -9
before that leaves nothing a reader sees as a session: the next import of the name, or `session fsck
--repair`, removes the staging directory and refs without a log. Blobs already written stay as
unreachable orphans; `session gc` prunes them.

Ctrl-C: pydantic-core can swallow a KeyboardInterrupt raised while it serializes, so during the import
SIGINT only records that it came, and the import checks between steps: it always stops, within one
step, with `KeyboardInterrupt` (the CLI exits 130) and nothing published.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ImportFormatError, SessionStoreError
from ..plumbing.codec import UnreadableMessages
from ..plumbing.fsutil import fsync_dir
from ..plumbing.names import check_name, is_valid_name
from .session import Session

if TYPE_CHECKING:
    from ..formats.transcripts import ImportedTranscript
    from .store import SessionStore

Progress = Callable[[int, int], None]
STAGING = "importing"
"""`locks/importing/<name>/`: where an import builds its session before publishing it."""


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
        remove_leftover_import(store, name, locked=True)  # what an interrupted import left
        staging = _staging_store(store, name)
        try:
            with interrupt_checks() as interrupted:
                session = Session(staging, name)
                total = len(transcript.steps)
                for done, step in enumerate(transcript.steps, start=1):
                    interrupted()
                    try:
                        if step.kind == "compaction":
                            session._checkpoint_locked(step.messages, tier=2, extra={"source": "import"})
                        else:
                            session._append_locked(step.messages, usage=step.usage, kind="import")
                    except UnreadableMessages as err:
                        raise ImportFormatError(
                            f"{transcript.source}: {step.kind} {done} of {total} cannot be stored: {err} "
                            "(nothing was imported)"
                        ) from None
                    if progress:
                        progress(done, total)
                interrupted()
                _publish(store, staging, name)
        except BaseException:
            remove_leftover_import(store, name, locked=True)
            raise
        _remove_staging(staging.root)
    return store.session(name)


def _remove_staging(root: Path) -> None:
    shutil.rmtree(root)
    with contextlib.suppress(OSError):  # locks/importing/ goes once empty (another import may be in it)
        root.parent.rmdir()


def _staging_root(store: SessionStore, name: str) -> Path:
    return store.locks_dir / STAGING / name


def _staging_store(store: SessionStore, name: str) -> SessionStore:
    """A store over `locks/importing/<name>/` that writes blobs into the real store's objects."""
    root = _staging_root(store, name)
    for sub in ("logs", "refs/checkpoints"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    staging = type(store)(root, store.settings)
    staging.objects = store.objects  # blobs go where the published log will reach them
    return staging


def _publish(store: SessionStore, staging: SessionStore, name: str) -> None:
    """Refs first (invisible without a log), then the log: its link is when the session appears."""
    refs = staging.refs.dir / name
    if refs.is_dir():
        store.refs.dir.mkdir(parents=True, exist_ok=True)
        os.rename(refs, store.refs.dir / name)
        fsync_dir(store.refs.dir)
    os.link(staging.log(name).path, store.log(name).path)  # never replaces: the lock says it is new
    fsync_dir(store.logs_dir)


def leftover_imports(store: SessionStore) -> list[tuple[str, str]]:
    """(session name, what) for each thing an interrupted import left: a staging directory, or
    checkpoint refs whose session has no log."""
    out: list[tuple[str, str]] = []
    staging = store.locks_dir / STAGING
    if staging.is_dir():
        out += [(p.name, f"locks/{STAGING}/{p.name}/") for p in sorted(staging.iterdir())]
    sessions = set(store.sessions())
    out += [(n, f"refs/checkpoints/{n}/ (no log)") for n in store.refs.sessions() if n not in sessions]
    return out


def remove_leftover_import(store: SessionStore, name: str, *, locked: bool = False) -> bool:
    """Remove what an interrupted import of `name` left (see `leftover_imports`); True if anything
    was. Takes the session lock unless the caller holds it (`locked`), so a running import is never
    disturbed."""
    if not is_valid_name(name):
        target = store.locks_dir / STAGING / name
        if target.is_dir() and not target.is_symlink():
            _remove_staging(target)
            return True
        return False
    if not locked:
        with store.lock(name):
            return remove_leftover_import(store, name, locked=True)
    removed = False
    root = _staging_root(store, name)
    if root.is_dir() and not root.is_symlink():
        _remove_staging(root)
        removed = True
    if not store.exists(name) and name in store.refs.sessions():
        store.refs.remove_all(name)
        removed = True
    return removed


@contextmanager
def interrupt_checks() -> Iterator[Callable[[], None]]:
    """Defer SIGINT for the block: the yielded function raises `KeyboardInterrupt` once one came.

    Call it between steps of a long job. Outside the main thread (where no handler can be set) the
    function does nothing and SIGINT behaves as usual.
    """
    came: list[int] = []

    def check() -> None:
        if came:
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
    check()  # one came during the very last step: the work is whole, but the user asked to stop
