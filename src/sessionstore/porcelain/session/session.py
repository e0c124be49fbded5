"""`Session`: one conversation whose log, in-memory history and persisted count move in lockstep.

Every write takes the session lock and goes through the one commit writer (`writer.Lockstep`, which
`Session` extends): it checks the on-disk head is the one this object loaded, writes the blob, appends and
syncs the commit line (the acknowledgement), creates a checkpoint ref when it is one, and only then
updates `history`, `sizes` and `persisted_count`. An exception at any step leaves all three at the last
acknowledged state; a crash leaves at most an orphan blob (gc) or a torn line (repaired by the next
writer).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessionstore.accounting.thresholds import over_threshold
from sessionstore.errors import LockTimeout as LockTimeoutError
from sessionstore.errors import SessionBusy, SessionStoreError, UnknownRevision
from sessionstore.plumbing import codec
from sessionstore.plumbing.commits import Commit
from sessionstore.porcelain.session import cascade
from sessionstore.porcelain.session.arguments import check_focus
from sessionstore.porcelain.session.recall import Recalled, recall
from sessionstore.porcelain.session.revisions import resolve
from sessionstore.porcelain.session.writer import Lockstep, state_at

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.messages import ModelMessage

    from sessionstore.compaction.events import CompactionEvent
    from sessionstore.compaction.micro import MicroState
    from sessionstore.memory.fileio import MemoryUpdate
    from sessionstore.porcelain.session.layout import StoreLayout

__all__ = ["Session", "state_at"]


class Session(Lockstep):
    """A named session of a `SessionStore` (see DESIGN §3 and §5)."""

    def __init__(self, store: StoreLayout, name: str) -> None:
        self.listeners: list[Callable[[CompactionEvent], None]] = list(store.listeners)
        self._entered_at: str | None = None
        self.checkpoint_request: str | None = None
        """A checkpoint asked for before the next request ("" without a focus; None: none asked):
        set by `request_checkpoint`, honoured and cleared by `SessionCapability` (and `run_turn`)."""
        super().__init__(store, name)

    def load(self) -> None:
        super().load()
        self._view_cache: tuple[str, MicroState] | None = None
        """The tier-1 state of the head it was applied at; carried to the next turn (MicroState)."""

    def reload(self) -> None:
        """Re-read the session from disk (after a `StaleSessionError`)."""
        self.load()

    def view(self) -> list[ModelMessage]:
        """What the next request sends: the history, with tier 1 applied when over the micro level."""
        if not self.store.settings.compaction_enabled or not self.messages:
            return self.history
        _, lv = cascade.session_levels(self)
        if not over_threshold(self.measurement.tokens, lv.micro):
            self.sent_elided = None
            return self.history
        if self._view_cache is None or self._view_cache[0] != self.head_id:
            previous = self._view_cache[1] if self._view_cache else None
            self._view_cache = (self.head_id, cascade.micro_state(self, lv.micro, previous))
        view = self._view_cache[1]
        self.note_sent(view.tokens_before - view.tokens_after)
        return view.view()

    def recall(self, query: str, *, limit: int = 5) -> list[Recalled]:
        """The `limit` messages of this session's whole log that best match `query`, verbatim, each
        with the revision that first stored it, including every message a summary replaced (see
        `porcelain.recall`). The agent's `recall` tool (`integrations.SessionToolset`) calls this."""
        return recall(self.store, self.name, query, limit=limit)

    def log(self) -> list[Commit]:
        """Every commit of this session, newest first."""
        commits, _ = self.log_file.scan(since_reset=False)
        return commits[::-1]

    def __repr__(self) -> str:
        head = self.head_id[:7] if self.head else None
        return f"Session({self.name!r}, messages={self.persisted_count}, head={head})"

    # -- writes -------------------------------------------------------------------------------------

    def append(self, messages: Sequence[ModelMessage], *, usage: Any = None, compact: bool = True) -> Commit:
        """Persist one turn's new messages (`result.new_messages()`, never `all_messages()`), then run
        the compaction cascade (unless `compact=False`). Returns the turn's commit: a compaction that
        follows is a later commit (see `head`), and a failed compaction never undoes the turn."""
        self._refuse_replayed_history(messages)
        events: list[CompactionEvent] = []
        with self.store.lock(self.name):
            commit = self.commit_turn(messages, usage=usage)
            self.measure_after_turn()
            if compact:
                events = self.run_cascade()
        self._emit(events)
        return commit

    def run_cascade(self) -> list[CompactionEvent]:
        """The cascade of DESIGN §7 on the current head (the caller holds the lock): tier 2 (and 3)
        persisted over the full level; over the micro level the tier-1 view is kept for `view()`."""
        events, view = cascade.after_append(self, self._view_cache[1] if self._view_cache else None)
        if view is not None:
            self._view_cache = (self.head_id, view)
        return events

    def _refuse_replayed_history(self, messages: Sequence[ModelMessage]) -> None:
        """The `result.all_messages()` mistake: a list that starts with the stored history would store
        it twice. Cheap: the first and the last stored message are compared, by identity or by their
        stored bytes; only when both match is the whole prefix compared, to be sure."""
        history = self.messages
        if not history or not isinstance(messages, Sequence) or len(messages) < len(history):
            return
        n = len(history)
        first, last = messages[0], messages[n - 1]
        if first is history[0] and last is history[-1]:
            same = all(a is b for a, b in zip(messages[:n], history, strict=True))
        elif len(messages) > n and type(first) is type(history[0]):
            # By bytes only when more follows: a run's all_messages() always adds its own messages.
            try:
                encode = codec.encode_unchecked  # compared, never stored: no read-back
                same = encode([first, last]) == encode([history[0], history[-1]]) and (
                    encode(messages[:n]) == encode(history)
                )
            except Exception:  # not messages: check_messages names what is wrong
                return
        else:
            return
        if same:
            raise SessionStoreError(
                f"session {self.name!r}: these messages start with the stored history "
                f"({len(history)} messages): pass result.new_messages(), not all_messages(); "
                "nothing was saved"
            )

    def compact(self, *, focus: str | None = None) -> Commit:
        """Full compaction now (the manual `/compact`), whatever the levels and the switch; then tier 3
        if the result is still over the full level. `SessionBusy` if a turn holds the lock."""
        check_focus(focus)
        try:
            with self.store.lock(self.name):
                self.check_writable()
                if not self.messages:
                    raise SessionStoreError(f"session {self.name!r} is empty: nothing to compact")
                events = cascade.full_then_ultimate(self, focus=focus, raise_errors=True)
        except SessionBusy:
            raise
        except LockTimeoutError as err:
            raise SessionBusy(
                f"session {self.name!r} is busy (another process holds its lock): nothing changed; "
                "retry when its turn finishes"
            ) from err
        self._emit(events)
        assert self.head is not None
        return self.head

    def request_checkpoint(self, focus: str | None = None) -> None:
        """Ask for a full compaction (a checkpoint) before the next model request of a run on this
        session: the agent's `compact` tool (`integrations.SessionToolset`). `focus` as for `compact`."""
        self.checkpoint_request = check_focus(focus) or ""

    def checkout(self, rev: str | Commit) -> Commit:
        """Rewind (or move) the head to the state at `rev`; the log keeps everything after it.

        `rev` is a revision (a bare commit id is looked up in this session first, so a commit another
        session also holds still names this one's) or a `Commit` of this session from `store.resolve`.
        """
        target = rev if isinstance(rev, Commit) else resolve(self.store, rev, within=self.name)
        if target.session != self.name:
            raise UnknownRevision(
                f"{rev!r} is a commit of session {target.session!r}, not {self.name!r}: "
                f"use `session fork {rev} NEW` to start a session from it"
            )
        with self.store.lock(self.name):
            self.check_writable()
            commit = self.commit_reset(target, "checkout")
            self._view_cache = None
            return commit

    @classmethod
    def fork_from(cls, store: StoreLayout, target: Commit, new_name: str) -> Session:
        """A new session `new_name` whose history is the state after `target`, sharing its blobs."""
        with store.lock(new_name):
            if store.exists(new_name):
                raise SessionStoreError(
                    f"session {new_name!r} already exists: choose another name for the fork"
                )
            session = cls(store, new_name)
            session.commit_reset(target, "fork")
        return session

    # -- session end: project memory ---------------------------------------------------------------

    def __enter__(self) -> Session:
        self._entered_at = self.head_id
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._entered_at is not None and self._entered_at != self.head_id:
            try:
                self.end()
            except SessionStoreError as err:  # memory must never mask the block's own outcome
                warnings.warn(f"session {self.name!r}: MEMORY.md not updated: {err}", stacklevel=2)
        self._entered_at = None

    def end(self) -> MemoryUpdate:
        """Record this session in the team's MEMORY.md (DESIGN §8): one dated bullet from the latest
        checkpoint summary, else from the offline summarizer; compressed past the caps with the
        store's summary model. No MEMORY.md, nothing written."""
        from sessionstore.memory.append import record_session_end
        from sessionstore.summary.offline import summarize_offline

        summary = (cascade.summary_text(self.messages[0]) if self.messages else None) or summarize_offline(
            self.messages, settings=self.store.settings
        )
        store = self.store  # record_session_end holds MEMORY.md's lock (memory.lock) while it rewrites
        return record_session_end(
            store.memory_path, self.name, summary, store.settings, model=store.summary_model
        )

    def subscribe(self, listener: Callable[[CompactionEvent], None]) -> None:
        """Call `listener` with every compaction event of this session."""
        self.listeners.append(listener)

    def _emit(self, events: Sequence[CompactionEvent]) -> None:
        for event in events:
            for listener in self.listeners:
                listener(event)
