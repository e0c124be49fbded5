"""`Session`: one conversation whose log, in-memory history and persisted count move in lockstep.

Every write takes the session lock, checks the on-disk head is the one this object loaded, writes the
blob, appends and syncs the commit line (the acknowledgement), creates a checkpoint ref when it is one,
and only then updates `history`, `sizes` and `persisted_count`. An exception at any step leaves all
three at the last acknowledged state; a crash leaves at most an orphan blob (gc) or a torn line
(repaired by the next writer).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..accounting.thresholds import Measurement, Meter, measure, model_capacity, over_threshold
from ..accounting.tokens import estimate_messages
from ..errors import CorruptLogError, SessionBusy, SessionStoreError, UnknownRevision
from ..errors import LockTimeout as LockTimeoutError
from ..plumbing import codec
from ..plumbing.logs import Commit, make_line
from .inputs import check_focus, check_messages, usage_dict

if TYPE_CHECKING:
    from collections.abc import Callable

    from pydantic_ai.messages import ModelMessage

    from ..compaction.events import CompactionEvent
    from ..compaction.micro import MicroResult
    from ..memory.fileio import MemoryUpdate
    from .store import SessionStore


class Session:
    """A named session of a `SessionStore` (see DESIGN §3 and §5)."""

    def __init__(self, store: SessionStore, name: str) -> None:
        self.store = store
        self.name = name
        self.model: Any = None
        """The model the agent runs on, a pydantic-ai `Model` or model id: its profile's context window
        caps the levels. Default: the newest response's model. `run_turn` sets it from the agent."""
        self.listeners: list[Callable[[CompactionEvent], None]] = list(store.listeners)
        self._log = store.log(name)
        self._entered_at: str | None = None
        self._load()

    # -- state --------------------------------------------------------------------------------------

    def _load(self) -> None:
        commits, _ = self._log.scan(since_reset=True)
        self._head: Commit | None = commits[-1] if commits else None
        blobs, sizes = _state(commits)
        self._history: list[ModelMessage] = self.store.objects.load(blobs, codec.decode)
        self._sizes: list[int] = sizes
        self._compactions: int | None = None  # compaction commits in the log: counted when first needed
        if self._head and not (len(self._history) == len(sizes) == self._head.count):
            raise CorruptLogError(
                f"session {self.name!r} replays to {len(self._history)} messages but its head says "
                f"{self._head.count}: run `session fsck`"
            )
        # Responses before the newest reset point or import measured a context that no longer exists
        # (DESIGN §6): only responses after it may anchor the measured prefix.
        since = next((c for c in reversed(commits) if c.is_reset or c.kind == "import"), None)
        self._meter = Meter(reset_at=since.count if since else 0)
        self._view_cache: tuple[str, MicroResult] | None = None
        self._sent: tuple[str, int] | None = None
        """(head id, tokens elided) of the last view handed out to be sent: the next turn records it."""
        self._measure_after_turn()

    def reload(self) -> None:
        """Re-read the session from disk (after a `StaleSessionError`)."""
        self._load()

    @property
    def history(self) -> list[ModelMessage]:
        """The replayed history, exactly as stored (a copy: mutate it and nothing changes)."""
        return list(self._history)

    @property
    def sizes(self) -> list[int]:
        """Per-message local token estimates, parallel to `history` (persisted, never re-tokenized)."""
        return list(self._sizes)

    @property
    def persisted_count(self) -> int:
        return self._head.count if self._head else 0

    @property
    def tokens(self) -> int:
        """Local estimate of the whole history."""
        return self._head.tokens if self._head else 0

    @property
    def head(self) -> Commit | None:
        return self._head

    @property
    def measurement(self) -> Measurement:
        """What the triggers compare (DESIGN §6): the measured prefix, or the local estimate."""
        if self._meter.current is None:
            return self._meter.reset(self._history, self._sizes)
        return self._meter.current

    def _measure_after_turn(self) -> None:
        """Refresh the measurement from the newest response, adding back what tier 1 elided from the
        view that request sent (its usage measured the blanked view, not the stored history)."""
        m = self._meter.succeeded(self._history, self._sizes)
        elided = self._head.extra.get("elided", 0) if self._head else 0
        if m.anchor is not None and elided and m.anchor >= len(self._history) - len(self._head.sizes):
            self._meter.current = Measurement(
                tokens=m.tokens + elided,
                local=m.local,
                anchor=m.anchor,
                anchor_tokens=m.anchor_tokens + elided,
            )

    def _context_fields(
        self, new: list[ModelMessage], sizes: list[int], elided: int, *, measured: bool
    ) -> dict[str, Any]:
        """What `session gauge` needs from a turn's line, so it never loads messages or pydantic-ai:
        the model, its known capacity, and (when `measured`) the measured prefix if the turn's response
        has usage."""
        from .cascade import model_id, model_of

        fields: dict[str, Any] = {}
        model = self.model or model_of(new) or (self._head.extra.get("model") if self._head else None)
        if model:
            fields["model"] = model_id(model)
            capacity = model_capacity(model)
            if capacity:
                fields["capacity"] = capacity
        m = measure(new, sizes)
        if measured and m.anchor is not None:
            fields["measured"] = m.tokens + elided
        return fields

    def record_failure(self) -> None:
        """A model request failed: keep the previous measurement (DESIGN §6 refresh rules)."""
        self._meter.failed(self._history, self._sizes)

    def view(self) -> list[ModelMessage]:
        """What the next request sends: the history, with tier 1 applied when over the micro level."""
        from . import cascade

        if not self.store.settings.compaction_enabled or not self._history:
            return self.history
        _, lv = cascade.session_levels(self)
        head = self._head.id if self._head else ""
        if not over_threshold(self.measurement.tokens, lv.micro):
            self._sent = None
            return self.history
        if self._view_cache is None or self._view_cache[0] != head:
            self._view_cache = (head, cascade.micro_view(self, lv.micro))
        view = self._view_cache[1]
        self.note_sent(view.tokens_before - view.tokens_after)
        return list(view.messages)

    def note_sent(self, elided: int) -> None:
        """Record that the view about to be sent had `elided` tokens of tool output blanked: the
        response's usage then measures the blanked view, and the next turn adds them back."""
        self._sent = (self._head.id if self._head else "", elided)

    def log(self) -> list[Commit]:
        """Every commit of this session, newest first."""
        commits, _ = self._log.scan(since_reset=False)
        return commits[::-1]

    def __repr__(self) -> str:
        head = self._head.id[:7] if self._head else None
        return f"Session({self.name!r}, messages={self.persisted_count}, head={head})"

    # -- writes -------------------------------------------------------------------------------------

    def append(self, messages: Sequence[ModelMessage], *, usage: Any = None, compact: bool = True) -> Commit:
        """Persist one turn's new messages (`result.new_messages()`, never `all_messages()`), then run
        the compaction cascade (unless `compact=False`). Returns the turn's commit: a compaction that
        follows is a later commit (see `head`), and a failed compaction never undoes the turn."""
        from . import cascade

        events: list[CompactionEvent] = []
        with self.store.lock(self.name):
            commit = self._append_locked(messages, usage=usage, kind="turn")
            self._measure_after_turn()
            if compact:
                events = cascade.after_append(self)
        self._emit(events)
        return commit

    def compact(self, *, focus: str | None = None) -> Commit:
        """Full compaction now (the manual `/compact`), whatever the levels and the switch; then tier 3
        if the result is still over the full level. `SessionBusy` if a turn holds the lock."""
        from . import cascade

        check_focus(focus)
        try:
            with self.store.lock(self.name):
                self._writable()
                if not self._history:
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
        assert self._head is not None
        return self._head

    # -- session end: project memory ---------------------------------------------------------------

    def __enter__(self) -> Session:
        self._entered_at = self._head.id if self._head else ""
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._entered_at is not None and self._entered_at != (self._head.id if self._head else ""):
            try:
                self.end()
            except SessionStoreError as err:  # memory must never mask the block's own outcome
                warnings.warn(f"session {self.name!r}: MEMORY.md not updated: {err}", stacklevel=2)
        self._entered_at = None

    def end(self) -> MemoryUpdate:
        """Record this session in the team's MEMORY.md (DESIGN §8): one dated bullet from the latest
        checkpoint summary, else from the extractive summarizer. No MEMORY.md, nothing written."""
        from ..compaction.extractive import summarize_extractive
        from ..memory.append import record_session_end
        from .cascade import summary_text

        summary = (summary_text(self._history[0]) if self._history else None) or summarize_extractive(
            self._history
        )
        with self.store.memory_lock():  # read-modify-write: a concurrent end would lose one bullet
            return record_session_end(self.store.memory_path, self.name, summary, self.store.settings)

    def subscribe(self, listener: Callable[[CompactionEvent], None]) -> None:
        """Call `listener` with every compaction event of this session."""
        self.listeners.append(listener)

    def _emit(self, events: Sequence[CompactionEvent]) -> None:
        for event in events:
            for listener in self.listeners:
                listener(event)

    def _writable(self) -> None:
        """Refuse to write over a conversation that `FileConversationStore` owns (its records would break)."""
        if self._head is not None and "conversation" in self._head.extra:
            raise SessionStoreError(
                f"session {self.name!r} holds a FileConversationStore conversation: write to it through "
                "that store (save/branch/fork), not as a session; nothing was changed"
            )

    def _append_locked(self, messages: Sequence[ModelMessage], *, usage: Any, kind: str) -> Commit:
        self._writable()
        new = check_messages(messages)
        stored_usage = usage_dict(usage)  # refused before the blob is written, not after
        writing = self.store.objects.write_in_background(codec.encode(new))
        sizes = estimate_messages(new)  # tokenize while the blob is written and synced
        oid = writing.result()
        extra: dict[str, Any] = {"sizes": sizes}
        head = self._head.id if self._head else ""
        if self._sent is not None and self._sent[0] == head and self._sent[1] > 0:
            extra["elided"] = self._sent[1]  # the request that produced this turn sent a micro view
        # An imported response measured the original agent's context, not ours: no measurement.
        extra.update(self._context_fields(new, sizes, extra.get("elided", 0), measured=kind == "turn"))
        return self._commit(kind, blob=oid, added=new, added_sizes=sizes, usage=stored_usage, extra=extra)

    def _commit(
        self,
        kind: str,
        *,
        blob: str | None,
        added: list[ModelMessage],
        added_sizes: list[int],
        usage: dict[str, Any] | None = None,
        extra: dict[str, Any],
        reset: list[ModelMessage] | None = None,
        time: str | None = None,
    ) -> Commit:
        """Append one commit line (lock held) and only then move the in-memory state."""
        if self._head is not None and "model" not in extra and "model" in self._head.extra:
            # carry the model forward so every line (compactions too) gives the gauge its window
            extra = {
                **extra,
                **{k: self._head.extra[k] for k in ("model", "capacity") if k in self._head.extra},
            }
        sizes = added_sizes if reset is not None else self._sizes + added_sizes
        line, body = make_line(
            parent=self._head, kind=kind, blob=blob, count=len(sizes), tokens=sum(sizes),
            usage=usage, extra=extra, time=time,
        )  # fmt: skip
        commit = self._log.append(line, body, self._head)
        if reset is not None:
            self._history, self._sizes = list(reset), list(added_sizes)
            self._meter.reset(self._history, self._sizes)
            self._view_cache = None
        else:
            self._history.extend(added)
            self._sizes.extend(added_sizes)
            if kind == "import":
                self._meter.reset(self._history, self._sizes)
        self._sent = None
        self._head = commit
        return commit

    def _checkpoint_locked(
        self,
        messages: Sequence[ModelMessage],
        *,
        tier: int,
        extra: dict[str, Any] | None = None,
        sizes: list[int] | None = None,
    ) -> Commit:
        """Persist `messages` as the new whole history: a compaction commit plus its checkpoint ref.

        The checkpoint number is derived from the log (compaction commits so far + 1), and refs the log
        implies but a crash left uncreated are recreated first, so numbering never collides. The log is
        scanned once per loaded session; later compactions count on from there (every commit of this
        object passed the stale-head check, so its count stays the log's).
        """
        new = check_messages(messages)
        sizes = sizes if sizes is not None else estimate_messages(new)
        oid = self.store.objects.write(codec.encode(new))
        if self._compactions is None:
            done = [c for c in self._log.scan(since_reset=False)[0] if c.kind == "compaction"]
            have = {r.k for r in self.store.refs.list(self.name)}
            for n, c in enumerate(done, start=1):
                if n not in have:
                    self.store.refs.create(self.name, n, c.id, c.offset)
            self._compactions = len(done)
        k = self._compactions + 1
        fields = {**(extra or {}), "blobs": [oid], "sizes": sizes, "tier": tier, "checkpoint": k}
        commit = self._commit("compaction", blob=oid, added=new, added_sizes=sizes, extra=fields, reset=new)
        self._compactions = k
        try:
            self.store.refs.create(self.name, k, commit.id, commit.offset)
        except OSError as err:  # the commit is acknowledged; the ref is derivable from it
            self._compactions = None  # the next compaction rescans the log and recreates it
            ref = f"checkpoints/{self.name}/{k}"
            raise SessionStoreError(
                f"compaction {commit.id[:7]} is saved, but {ref} could not be written "
                f"({err.strerror or err}): fix the store's permissions, then run `session fsck --repair`"
            ) from None
        return commit

    def checkout(self, rev: str) -> Commit:
        """Rewind (or move) the head to the state at `rev`; the log keeps everything after it."""
        target = self.store.resolve(rev)
        if target.session != self.name:
            raise UnknownRevision(
                f"{rev!r} is a commit of session {target.session!r}, not {self.name!r}: "
                f"use `session fork {rev} NEW` to start a session from it"
            )
        with self.store.lock(self.name):
            self._writable()
            return self._reset_to(target, "checkout")

    def _reset_to(self, target: Commit, kind: str) -> Commit:
        blobs, sizes = state_at(self.store, target)
        messages = self.store.objects.load(blobs, codec.decode)
        extra = {"blobs": blobs, "sizes": sizes, "target": target.id}
        if kind == "fork":
            extra["from"] = target.session
        return self._commit(kind, blob=None, added=messages, added_sizes=sizes, extra=extra, reset=messages)

    @classmethod
    def fork_from(cls, store: SessionStore, target: Commit, new_name: str) -> Session:
        with store.lock(new_name):
            if store.exists(new_name):
                raise SessionStoreError(
                    f"session {new_name!r} already exists: choose another name for the fork"
                )
            session = cls(store, new_name)
            session._reset_to(target, "fork")
        return session


def _state(commits: Sequence[Commit]) -> tuple[list[str], list[int]]:
    """Blobs and per-message sizes of the state after the last of `commits` (oldest first, reset-led)."""
    blobs: list[str] = []
    sizes: list[int] = []
    for c in commits:
        if c.is_reset:
            blobs, sizes = c.blobs, c.sizes
        elif c.blob is not None:
            blobs.append(c.blob)
            sizes.extend(c.sizes)
    return blobs, sizes


def state_at(store: SessionStore, target: Commit) -> tuple[list[str], list[int]]:
    """Blobs and sizes of the state after `target`, reading its log back to its reset point only."""
    commits, _ = store.log(target.session).scan(since_reset=True, end=target.end)
    if not commits or commits[-1].id != target.id:
        raise CorruptLogError(
            f"commit {target.id[:12]} moved in the log of {target.session!r}: run `session fsck`"
        )
    return _state(commits)
