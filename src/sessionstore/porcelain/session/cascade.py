"""The compaction cascade of DESIGN §7: policy over the writer's public API, run with the lock held.

Decisions read one measurement (the measured prefix of DESIGN §6, kept by the session's `Meter`) and
one pair of levels, and compare only through `over_threshold`:

    over full  -> tier 2 (summary + tail, persisted), then tier 3 if still over or if tier 2 failed
    over micro -> tier 1 (blank old tool output in the view, never persisted)
    otherwise  -> nothing

The window is the model's: the newest response's `model_name` resolved through pydantic-ai's profile
data (`resolve_window`), capped by `context_window_tokens`, so the gauge and the triggers agree.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

from sessionstore.accounting.thresholds import (
    TIER_FULL,
    TIER_MICRO,
    Levels,
    levels,
    model_of,
    next_tier,
    over_threshold,
    resolve_window,
    window_for_capacity,
)
from sessionstore.accounting.tokens import estimate_message, preload
from sessionstore.compaction.events import (
    CompactionEvent,
    ContextCompacted,
    ContextMicrocompacted,
    ContextUltimateCompacted,
)
from sessionstore.compaction.micro import MicroResult, MicroState, microcompact
from sessionstore.errors import CompactionError, CorruptLogError, NothingToCompact, SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.porcelain.session.writer import Lockstep
from sessionstore.summary.skeleton import is_summary_request

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from sessionstore.compaction.full import FullResult
    from sessionstore.plumbing.commits import Commit


def session_levels(session: Lockstep) -> tuple[int, Levels]:
    """The resolved window and the micro/full levels for `session` (read fresh: env may change).

    The window is the model's: `session.model` when the caller set it (run_turn sets the agent's), else
    the `capacity` the head line recorded for the model that wrote it (what `session gauge` reads, so a
    reopened session and the gauge agree even for a model only its `Model` object knew), else the
    newest response's model id resolved through pydantic-ai's profile data.
    """
    settings = session.store.settings
    head = session.head
    if session.model is None and head is not None and isinstance(head.extra.get("capacity"), int):
        window = window_for_capacity(head.extra["capacity"], settings)
    else:
        window = resolve_window(session.model or model_of(session.messages), settings)
    return window, levels(window, settings)


def summary_text(msg: ModelMessage) -> str | None:
    """The summary a checkpoint's first message carries, if it is a summary request."""
    if not is_summary_request(msg):
        return None
    return next((p.content for p in msg.parts if p.part_kind == "compaction" and p.content), None)


def checkpoint_summaries(session: Lockstep) -> list[str]:
    """Summaries of the session's checkpoints, oldest first (the tier-3 journal).

    A ref that does not point at its compaction commit (damaged; `session fsck` names it) gives no
    summary rather than failing the last-resort tier.
    """
    out: list[str] = []
    log = session.store.log(session.name)
    for ref in session.store.refs.list(session.name):
        try:
            commit = log.read_at(ref.offset)
        except CorruptLogError:
            continue
        if commit.id != ref.commit_id or not commit.blobs:
            continue
        text = summary_text(codec.decode_first(session.store.objects.read(commit.blobs[0])))
        if text:
            out.append(text)
    return out


def micro_view(session: Lockstep, level: int) -> MicroResult:
    """Tier 1 on the session's history from scratch, aiming under `level` after the measurement's bias."""
    m = session.measurement
    bias = m.tokens - m.local  # provider count minus our estimate (signed): aim in local terms
    return microcompact(
        session.messages, session.message_sizes, level=max(0, level - bias), settings=session.store.settings
    )


def micro_state(session: Lockstep, level: int, state: MicroState | None) -> MicroState:
    """Tier 1 carried across turns: `state` (the session's previous one) fed the messages appended since,
    or a new state after a reset point; then applied under `level` after the measurement's bias. The
    work is the new messages and the blanks made now, not the history (compaction.micro.MicroState)."""
    history, sizes = session.messages, session.message_sizes
    if state is None or not state.follows(history):
        state = MicroState.of(history, sizes, session.store.settings)
    elif len(state) < len(history):
        state.extend(history[len(state) :], sizes[len(state) :])
    m = session.measurement
    state.apply(max(0, level - (m.tokens - m.local)))
    return state


def with_notes(messages: list[ModelMessage], sizes: list[int], notes: list[str]) -> tuple[list, list[int]]:
    """`messages` with `notes` at the end of the summary it starts with, each once (a summary built
    on an earlier one may carry a note along: it is moved to the end, not repeated), and the
    summary's size re-estimated; unchanged without notes or without a summary."""
    if not notes or not messages or summary_text(messages[0]) is None:
        return messages, sizes
    first = messages[0]
    parts = list(first.parts)
    i = next(i for i, p in enumerate(parts) if p.part_kind == "compaction" and p.content)
    body = parts[i].content
    for note in notes:
        body = body.replace(note, "")
    content = "\n\n".join([body.rstrip(), *notes])
    if content == parts[i].content:
        return messages, sizes
    parts[i] = dataclasses.replace(parts[i], content=content)
    summary = dataclasses.replace(first, parts=parts)
    return [summary, *messages[1:]], [estimate_message(summary), *sizes[1:]]


def _persist(session: Lockstep, result: FullResult, tier: int, focus: str | None) -> Commit:
    extra: dict[str, Any] = {
        "tokens_before": result.tokens_before,
        "messages_before": session.persisted_count,
    }
    if focus:
        extra["focus"] = focus
    messages, sizes = with_notes(result.messages, result.sizes, session.summary_notes)
    return session.commit_checkpoint(messages, tier=tier, sizes=sizes, extra=extra)


def _event(kind: type[CompactionEvent], before: tuple[int, int], commit: Commit) -> CompactionEvent:
    return kind(
        tokens_before=before[0],
        tokens_after=commit.tokens,
        messages_before=before[1],
        messages_after=commit.count,
        checkpoint=f"checkpoints/{commit.session}/{commit.extra['checkpoint']}",
    )


def ultimate(session: Lockstep, budget: int) -> CompactionEvent | None:
    """Tier 3 when enabled and the session has a checkpoint; None when it may not run.

    `ultimate_compact` keeps the newest summary and the last `ultimate_keep_checkpoints` earlier ones
    of the journal it is given, so the whole journal is passed. Raises `CompactionError` when even
    tier 3 cannot fit (a budget under its minimum); nothing is persisted then.
    """
    settings = session.store.settings
    if not settings.ultimate_compaction_enabled:
        return None
    journal = checkpoint_summaries(session)
    if not journal:
        return None
    before = (session.tokens, session.persisted_count)
    from sessionstore.compaction.ultimate import ultimate_compact  # tier 3: loaded when it first runs

    result = ultimate_compact(
        session.messages, session.message_sizes, budget=budget, summaries=journal, settings=settings
    )
    commit = _persist(session, result, 3, None)
    return _event(ContextUltimateCompacted, before, commit)


def full_then_ultimate(session: Lockstep, *, focus: str | None, raise_errors: bool) -> list[CompactionEvent]:
    """Tier 2, then tier 3 when the result is still over the full level or tier 2 failed.

    `raise_errors` (manual compaction) raises a failure; the cascade after an acknowledged turn warns
    instead (a failed summary, a full disk, a damaged checkpoint), because the turn itself is safely
    stored whatever compaction does.
    """
    from sessionstore.compaction.full import (
        full_compact,
    )  # tier 2 and its summarizers: loaded when it first runs

    _, lv = session_levels(session)
    events: list[CompactionEvent] = []
    before = (session.tokens, session.persisted_count)
    try:
        try:
            result = full_compact(
                session.messages,
                session.message_sizes,
                settings=session.store.settings,
                full_level=lv.full,
                focus=focus,
                model=session.store.summarizer,
                recall=f"{session.name}@{session.head.seq}" if session.head is not None else None,
            )
        except CompactionError:
            event = ultimate(session, lv.full)
            if event is None:
                raise
            return [event]
        commit = _persist(session, result, 2, focus)
        events.append(_event(ContextCompacted, before, commit))
        if over_threshold(commit.tokens, lv.full) and (event := ultimate(session, lv.full)) is not None:
            events.append(event)
    except (SessionStoreError, OSError) as err:
        # After an acknowledged turn, nothing may make `append` raise: the caller would retry and store
        # the turn twice. A full disk or a damaged checkpoint is reported like a failed summary.
        if raise_errors:
            raise
        what = "not compacted" if isinstance(err, NothingToCompact) else "compaction failed"  # no failure
        warnings.warn(f"session {session.name!r}: {what}, history kept: {err}", stacklevel=3)
    return events


def _import_tiers_two_and_three() -> None:
    """Tiers 2 and 3 and the summarizer: ~0.1-0.3 s of imports (the summary's value patterns compile
    at import), loaded on the warm-up thread once a session is over the micro level, so its first
    tier-2 compaction does not pay them on top of the summary (issue 30's compacting-append p99)."""
    import sessionstore.compaction.full
    import sessionstore.compaction.ultimate  # noqa: F401


def after_append(
    session: Lockstep, state: MicroState | None = None
) -> tuple[list[CompactionEvent], MicroState | None]:
    """The cascade after a turn was acknowledged (lock held): persisted tiers run here; over the micro
    level the tier-1 state (`state`, the session's previous one, carried forward) is returned for the
    session to send next."""
    settings = session.store.settings
    if not settings.compaction_enabled:
        return [], None
    _, lv = session_levels(session)
    tier = next_tier(session.measurement, lv)
    if tier == TIER_FULL:
        return full_then_ultimate(session, focus=None, raise_errors=False), None
    if tier == TIER_MICRO:
        preload(_import_tiers_two_and_three)  # tier 2 is next: its imports load while the agent works
        view = micro_state(session, lv.micro, state)
        if view.blanked:
            return [
                ContextMicrocompacted(
                    tokens_before=view.tokens_before,
                    tokens_after=view.tokens_after,
                    messages_before=len(view),
                    messages_after=len(view),
                )
            ], view
        return [], view
    return [], None
