"""`Lockstep`: the one writer of session commits (DESIGN §3).

A `Lockstep` holds a session's replayed state (history, per-message sizes, head, measurement) and is the
only code that writes a commit line. Every write method expects the caller to hold `store.lock(name)`
and then, in this order: writes the blob(s), appends and syncs the commit line (the acknowledgement;
`Log.append` refuses a moved head with `StaleSessionError` and cuts a torn tail), creates a checkpoint
ref when it is one, and only then moves the in-memory state. An exception at any step leaves history,
sizes and `persisted_count` at the last acknowledged commit.

`Session` (the public API), the compaction cascade, `import` and `FileConversationStore` all write
through the methods here: `commit_turn`, `commit_checkpoint`, `commit_reset` and the general `commit`,
all of them through `write_commit`; `session pull` appends a remote's verified lines through
`append_verified`. Nothing else appends to a log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sessionstore.accounting import count_process, tokenizer
from sessionstore.accounting.calibration import FIELD as CALIBRATION_FIELD
from sessionstore.accounting.calibration import Calibration
from sessionstore.accounting.thresholds import Measurement, Meter, model_of
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.errors import CorruptLogError, SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.plumbing.commits import Commit, make_line
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.session import model_windows
from sessionstore.porcelain.session.arguments import check_messages, usage_dict
from sessionstore.porcelain.session.first_request import title_field
from sessionstore.porcelain.session.turn_blobs import settle, stage_turn
from sessionstore.porcelain.session.turn_fields import calibration_fields, context_fields, model_id

__all__ = ["CARRIED", "Lockstep", "append_verified", "model_id", "state_at", "state_of", "write_commit"]

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from sessionstore.plumbing.objects import ObjectStore
    from sessionstore.porcelain.session.layout import StoreLayout

CARRIED = ("model", "capacity", CALIBRATION_FIELD)
"""Fields every commit line repeats from its parent (or a reset's target), so the gauge reads the
window and the calibration from one line and a fork or checkout keeps its source's model."""


def write_commit(
    log: Log,
    parent: Commit | None,
    *,
    kind: str,
    blob: str | None,
    count: int,
    tokens: int,
    usage: dict[str, Any] | None = None,
    extra: dict[str, Any],
    time: str | None = None,
    before_append: Callable[[dict[str, Any]], None] | None = None,
    landed: Callable[[], object] | None = None,
    objects: ObjectStore | None = None,
    data: bytes | None = None,
) -> tuple[Commit, bytes]:
    """Append one commit line after `parent` (the caller holds the session lock and has written the
    blobs): the one function that writes a commit, for `Lockstep` and `FileConversationStore` alike.

    The parent's `model`/`capacity` are carried onto the line unless `extra` sets them, so every line
    gives the gauge its window. `before_append(body)` runs once the line is built (its id and time are
    known) and before it is appended: a side index that may run ahead of the log but never behind it
    notes the commit there (FileConversationStore's conversation index). `landed()` (a blob still
    syncing: `turn_blobs.StagedTurn.landed`) is waited for after that and before the append, so the line is
    built while the blob syncs and is never appended before it is durable; it is waited for on every
    path, so no write is left in flight once this returns or raises. `Log.append` refuses a moved
    head (`StaleSessionError`), cuts a torn tail and fsyncs the line before returning: the returned
    commit is acknowledged.

    With `objects` (the store's blobs), a line among the session's first that no recorded title
    precedes records the title its blobs give (`first_request.title_field`): `data` is `blob`'s
    bytes when the caller has them (a blob still landing is never read back), other blobs are read.
    """
    try:
        if parent is not None:
            carried = {k: parent.extra[k] for k in CARRIED if k in parent.extra and k not in extra}
            if carried:
                extra = {**extra, **carried}
        if objects is not None:
            titled = title_field(parent, blob, extra, objects, data)
            if titled:
                extra = {**extra, **titled}
        line, body = make_line(
            parent=parent, kind=kind, blob=blob, count=count, tokens=tokens, usage=usage, extra=extra,
            time=time,
        )  # fmt: skip
        if before_append is not None:
            before_append(body)
    except BaseException:
        settle(landed)
        raise
    if landed is not None:
        landed()
    return log.append(line, body, parent), line


def append_verified(log: Log, parent: Commit | None, lines: bytes, *, sync: bool = True) -> int:
    """Append commit lines written elsewhere, byte for byte, after `parent` (caller holds the lock).

    For `session pull`: the caller has verified that every line parses, that its id verifies and that
    the lines chain after `parent`, and has made the blobs they name durable. Refuses a moved head
    (`StaleSessionError`) and cuts a torn tail exactly as a new commit does; synced when it returns,
    or with `sync=False` only written: the caller syncs the filesystem (`fsutil.filesystem_sync`)
    before it reports the lines pulled or writes anything that points at them (a checkpoint ref). A
    crash before that sync leaves a prefix of these lines (whole verified lines, then at worst a torn
    tail), each an acknowledged-or-newer state whose blobs are durable. Returns the offset of the
    first line.
    """
    return log.extend(lines, parent, sync=sync)


def state_of(commits: Sequence[Commit]) -> tuple[list[str], list[int]]:
    """Blobs and per-message sizes of the state after the last of `commits` (oldest first, reset-led)."""
    blobs: list[str] = []
    sizes: list[int] = []
    for c in commits:
        if c.is_reset:
            blobs, sizes = list(c.blobs), list(c.sizes)
        elif c.blob is not None:
            blobs.append(c.blob)
            sizes.extend(c.sizes)
    return blobs, sizes


def state_at(store: StoreLayout, target: Commit) -> tuple[list[str], list[int]]:
    """Blobs and sizes of the state after `target`, reading its log back to its reset point only."""
    commits, _ = store.log(target.session).scan(since_reset=True, end=target.end)
    if not commits or commits[-1].id != target.id:
        raise CorruptLogError(
            f"commit {target.id[:12]} moved in the log of {target.session!r}: run `session fsck`"
        )
    return state_of(commits)


class Lockstep:
    """A session's replayed state and its one commit writer (see the module docstring)."""

    def __init__(self, store: StoreLayout, name: str) -> None:
        self.store = store
        self.name = name
        tokenizer.prefer(store.settings.tokenizer)  # before this process's first count, if it is the first
        count_process.configure(store.settings.count_process)
        model_windows.load(store)  # the windows this store looked up before: no price table to import
        self.log_file = store.log(name)
        self.model: Any = None
        """The model the agent runs on, a pydantic-ai `Model` or model id: its profile's context window
        caps the levels. Default: the newest response's model. `run_turn` sets it from the agent."""
        self.summary_notes: list[str] = []
        """Lines a compaction appends to the summary it writes, each once (the integration's toolset
        adds one saying that `recall` reaches what the summary replaced)."""
        self.load()

    # -- state --------------------------------------------------------------------------------------

    def load(self) -> None:
        """(Re)read the state from disk: the log back to its newest reset point, then those blobs."""
        commits, _ = self.log_file.scan(since_reset=True)
        self._head: Commit | None = commits[-1] if commits else None
        blobs, sizes = state_of(commits)
        self._history: list[ModelMessage] = self.store.objects.load(blobs, codec.decode)
        self._sizes: list[int] = sizes
        self._compactions: int | None = None  # compaction commits in the log: counted when first needed
        self.calibration = Calibration.of_line(self._head.extra if self._head else {})
        """Per-model factors of the local estimate (accounting.calibration), carried on every line."""
        if self._head and not (len(self._history) == len(sizes) == self._head.count):
            raise CorruptLogError(
                f"session {self.name!r} replays to {len(self._history)} messages but its head says "
                f"{self._head.count}: run `session fsck`"
            )
        # Responses before the newest reset point or import measured a context that no longer exists
        # (DESIGN §6): only responses after it may anchor the measured prefix.
        since = next((c for c in reversed(commits) if c.is_reset or c.kind == "import"), None)
        self._meter = Meter(reset_at=since.count if since else 0)
        self.sent_elided: tuple[str, int] | None = None
        """(head id, tokens elided) of the last view handed out to be sent: the next turn records it."""
        self.measure_after_turn()

    @property
    def messages(self) -> Sequence[ModelMessage]:
        """The replayed history, read-only and uncopied (for the layers above that only read it)."""
        return self._history

    @property
    def history(self) -> list[ModelMessage]:
        """The replayed history, exactly as stored (a copy: mutate it and nothing changes)."""
        return list(self._history)

    @property
    def sizes(self) -> list[int]:
        """Per-message local token estimates, parallel to `history` (persisted, never re-tokenized)."""
        return list(self._sizes)

    @property
    def message_sizes(self) -> Sequence[int]:
        """`sizes`, read-only and uncopied."""
        return self._sizes

    @property
    def persisted_count(self) -> int:
        """Messages in the stored history: always `len(history)`, also after a failed write."""
        return self._head.count if self._head else 0

    @property
    def tokens(self) -> int:
        """Local estimate of the whole history."""
        return self._head.tokens if self._head else 0

    @property
    def head(self) -> Commit | None:
        return self._head

    @property
    def head_id(self) -> str:
        return self._head.id if self._head else ""

    @property
    def measurement(self) -> Measurement:
        """What the triggers compare (DESIGN §6): the larger of the measured prefix (when a usage
        measures the history) and the calibrated local estimate."""
        if self._meter.current is None:
            return self._meter.reset(
                self._history, self._sizes, local=self.tokens, factor=self.decision_factor
            )
        return self._meter.current

    @property
    def model_key(self) -> str | None:
        """The id of the model this session runs on, as its lines record it (`model`)."""
        if self.model is not None:
            return model_id(self.model)
        recorded = self._head.extra.get("model") if self._head else None
        return recorded if isinstance(recorded, str) else model_of(self._history)

    @property
    def decision_factor(self) -> float:
        """The calibration factor decisions scale local estimates by (>= 1.0; 1.0 when unknown)."""
        return self.calibration.decision_factor(self.model_key)

    @property
    def conversation_owned(self) -> bool:
        """True when `FileConversationStore` owns this session (its head carries a record)."""
        return self._head is not None and "conversation" in self._head.extra

    def measure_after_turn(self) -> None:
        """Refresh the measurement from the newest response, adding back what tier 1 elided from the
        view that request sent (its usage measured the blanked view, not the stored history)."""
        factor = self.decision_factor
        m = self._meter.succeeded(self._history, self._sizes, local=self.tokens, factor=factor)
        elided = self._head.extra.get("elided", 0) if self._head else 0
        if m.anchor is not None and elided and m.anchor >= len(self._history) - len(self._head.sizes):
            self._meter.succeeded(self._history, self._sizes, local=self.tokens, factor=factor, elided=elided)

    def record_failure(self) -> None:
        """A model request failed: keep the previous measurement (DESIGN §6 refresh rules)."""
        self._meter.failed(self._history, self._sizes, local=self.tokens, factor=self.decision_factor)

    def note_sent(self, elided: int) -> None:
        """Record that the view about to be sent had `elided` tokens of tool output blanked: the
        response's usage then measures the blanked view, and the next turn adds them back."""
        self.sent_elided = (self.head_id, elided)

    def check_writable(self) -> None:
        """Refuse to write over a conversation that `FileConversationStore` owns (its records would break)."""
        if self.conversation_owned:
            raise SessionStoreError(
                f"session {self.name!r} holds a FileConversationStore conversation: write to it through "
                "that store (save/branch/fork), not as a session; nothing was changed"
            )

    # -- writes (the caller holds store.lock(name)) --------------------------------------------------

    def commit_turn(
        self,
        messages: Sequence[ModelMessage],
        *,
        usage: Any = None,
        kind: str = "turn",
        extra: dict[str, Any] | None = None,
        time: str | None = None,
        sizes: Sequence[int] | None = None,
        sent_local: int | None = None,
    ) -> Commit:
        """Persist one turn's new messages as a `turn` (or `import`) commit.

        `sizes`: `estimate_messages(messages)` when the caller has it already (`run_turn`'s protection
        counted every message it sent), so nothing is counted twice; else it is counted here.
        `sent_local`: the local estimate of the request that produced the turn's newest response, as
        it was sent (messages as shaped plus tool definitions): only a caller that shaped the request
        knows it (`SessionCapability`), and with it that response's usage calibrates the model
        (accounting.calibration); `append` does not know what the request carried, so it does not."""
        self.check_writable()
        new = check_messages(messages)
        stored_usage = usage_dict(usage)  # refused before the blob is written, not after
        if sizes is not None and len(sizes) != len(new):
            raise ValueError(f"commit_turn: {len(sizes)} sizes for {len(new)} messages")
        model = self.model or model_of(new) or (self._head.extra.get("model") if self._head else None)
        model_windows.before_commit(self.store, model)  # a linked index/ refused before anything is written
        staged = stage_turn(self.store.objects, new, sizes)
        oid, sizes = staged.blob, staged.sizes
        fields: dict[str, Any] = {"sizes": sizes, **(extra or {})}
        if self.sent_elided is not None and self.sent_elided[0] == self.head_id and self.sent_elided[1] > 0:
            fields["elided"] = self.sent_elided[1]  # the request that produced this turn sent a micro view
        try:  # An imported response measured the original agent's context, not ours: no measurement.
            fields.update(context_fields(new, sizes, model, fields.get("elided", 0), measured=kind == "turn"))
            if sent_local is not None and kind == "turn":
                fields.update(calibration_fields(self.calibration, new, fields.get("model"), sent_local))
        except BaseException:
            settle(staged.landed)
            raise
        commit = self.commit(kind, blob=oid, added=new, added_sizes=sizes, usage=stored_usage, extra=fields,
                             time=time, landed=staged.landed, data=staged.data)  # fmt: skip
        model_windows.save(self.store, model)  # its window kept for the next process
        return commit

    def commit_checkpoint(
        self,
        messages: Sequence[ModelMessage],
        *,
        tier: int,
        extra: dict[str, Any] | None = None,
        sizes: list[int] | None = None,
        time: str | None = None,
    ) -> Commit:
        """Persist `messages` as the new whole history: a compaction commit plus its checkpoint ref
        (`time`: when it happened, for an imported transcript's own compaction; default now).

        The checkpoint number is derived from the log (compaction commits so far + 1), and refs the log
        implies but a crash left uncreated are recreated first, so numbering never collides. The log is
        scanned once per loaded state; later compactions count on from there (every commit of this
        object passed the stale-head check, so its count stays the log's).
        """
        self.check_writable()
        new = check_messages(messages)
        sizes = sizes if sizes is not None else estimate_messages(new)
        data = codec.encode(new)
        oid = self.store.objects.write(data)
        if self._compactions is None:
            done = [c for c in self.log_file.scan(since_reset=False)[0] if c.kind == "compaction"]
            have = {r.k for r in self.store.refs.list(self.name)}
            for n, c in enumerate(done, start=1):
                if n not in have:
                    self.store.refs.create(self.name, n, c.id, c.offset)
            self._compactions = len(done)
        k = self._compactions + 1
        fields = {**(extra or {}), "blobs": [oid], "sizes": sizes, "tier": tier, "checkpoint": k}
        commit = self.commit(
            "compaction", blob=oid, added=new, added_sizes=sizes, extra=fields, reset=new, time=time,
            data=data,
        )  # fmt: skip
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

    def commit_reset(self, target: Commit, kind: str) -> Commit:
        """Move the head to the state after `target` (`checkout`, or the first commit of a `fork`),
        sharing its blobs; the source's model (and so its window) is kept."""
        blobs, sizes = state_at(self.store, target)
        messages = self.store.objects.load(blobs, codec.decode)
        extra: dict[str, Any] = {"blobs": blobs, "sizes": sizes, "target": target.id}
        extra.update({k: target.extra[k] for k in CARRIED if k in target.extra})
        if kind == "fork":
            extra["from"] = target.session
        return self.commit(kind, blob=None, added=messages, added_sizes=sizes, extra=extra, reset=messages)

    def commit(
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
        landed: Callable[[], object] | None = None,
        data: bytes | None = None,
    ) -> Commit:
        """Append one commit line (lock held, blobs written or, for `landed`, landing: see
        `write_commit`, and `data` the bytes of `blob` when known) and only then move the state.

        `reset` given: the commit replaces the whole history with it (`added_sizes` are its sizes);
        otherwise `added` extends the history. Count and tokens are computed from the parent's, so the
        cost is O(added), not O(history).
        """
        if reset is not None:
            count, tokens = len(added_sizes), sum(added_sizes)
        else:
            count, tokens = len(self._sizes) + len(added_sizes), self.tokens + sum(added_sizes)
        commit, _ = write_commit(
            self.log_file, self._head, kind=kind, blob=blob, count=count, tokens=tokens,
            usage=usage, extra=extra, time=time, landed=landed, objects=self.store.objects, data=data,
        )  # fmt: skip
        self.sent_elided = None
        self._head = commit
        self.calibration = Calibration.of_line(commit.extra)  # carried: the head line has the current one
        if reset is not None:
            self._history, self._sizes = list(reset), list(added_sizes)
            self._meter.reset(self._history, self._sizes, local=tokens, factor=self.decision_factor)
        else:
            self._history.extend(added)
            self._sizes.extend(added_sizes)
            if kind == "import":
                self._meter.reset(self._history, self._sizes, local=tokens, factor=self.decision_factor)
        return commit
