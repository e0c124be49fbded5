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

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sessionstore.errors import ImportFormatError, SessionStoreError, StaleSessionError
from sessionstore.plumbing.codec import UnreadableMessages
from sessionstore.plumbing.names import check_name
from sessionstore.porcelain.importing.reimport import step_time
from sessionstore.porcelain.importing.staging_dir import (
    publish,
    remove_leftover_import,
    remove_staging,
    staging_store,
)
from sessionstore.porcelain.session.session import Session

if TYPE_CHECKING:
    from sessionstore.formats.transcripts import ImportedStep, ImportedTranscript
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

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
    store.directory_only(
        "`session import`",
        "an import is published all at once by renaming its staged log, which a bucket cannot do",
    )
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
        try:  # from the staging directory's first mkdir: a Ctrl-C in it leaves nothing behind
            staging = staging_store(store, name)
            with interrupt_checks() as interrupted:
                session = Session(staging, name)
                total = len(transcript.steps)
                for done, step in enumerate(transcript.steps, start=1):
                    interrupted()
                    try:
                        commit_step(session, step)
                    except UnreadableMessages as err:
                        raise ImportFormatError(
                            f"{transcript.source}: {step.kind} {done} of {total} cannot be stored: {err} "
                            "(nothing was imported)"
                        ) from None
                    if progress:
                        progress(done, total)
                interrupted()
                publish(store, staging, name)
        except BaseException:
            remove_leftover_import(store, name, locked=True)
            raise
        remove_staging(staging.top)
    return store.session(name)


def append_steps(
    store: SessionStore, name: str, steps: list[ImportedStep], head: str, *, progress: Progress | None = None
) -> Session:
    """Append `steps` to the imported session `name` whose head is `head` (porcelain/importing/reimport.py
    decides which steps are new); `StaleSessionError` if the session moved since. Not all or
    nothing: each step is one acknowledged commit, and a failure keeps the steps before it."""
    with store.lock(name):
        session = Session(store, name)
        if session.head is None or session.head.id != head:
            raise StaleSessionError(f"session {name!r} changed while it was compared: import again")
        for done, step in enumerate(steps, start=1):
            commit_step(session, step)
            if progress:
                progress(done, len(steps))
    return session


def commit_step(session: Session, step: ImportedStep) -> None:
    """One transcript step as one commit (lock held): a turn as an `import` commit, a compaction as a
    tier-2 checkpoint marked `source: import` with the local estimate it started from (`tokens_before`,
    as our own compactions record it) and what the source agent recorded about it (`recorded`)."""
    if step.kind != "compaction":
        session.commit_turn(step.messages, usage=step.usage, kind="import", time=step_time(step))
        return
    extra: dict[str, Any] = {"source": "import"}
    if session.head is not None:
        extra.update(tokens_before=session.tokens, messages_before=session.persisted_count)
    if step.recorded:
        extra["recorded"] = step.recorded
    session.commit_checkpoint(step.messages, tier=2, extra=extra, time=step_time(step))


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
