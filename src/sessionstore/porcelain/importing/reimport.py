"""Re-importing a transcript that grew: append only its new turns when the stored session is its prefix.

An import writes one commit per transcript step (porcelain/importing/new_session.py): an `import` commit
whose blob is the step's messages, or a `compaction` commit (`source: import`) whose one blob is the
compaction's state. So a stored session is a prefix of a transcript exactly when its log holds only such
commits and the i-th commit's blob holds the messages of the transcript's i-th step. Messages are
compared as stored JSON without their `timestamp` fields: a format that carries no times (OpenAI chat
messages) is stamped at import, so the same message imported twice differs only there. Then the steps
after it are the new turns. Anything else (the session was continued as an agent session, checked out,
compacted by us, or the transcript was edited) is no prefix, and nothing is written.

The stored side is read from the blobs with orjson; pydantic-ai is used (through the codec) only to
encode the transcript's steps, which already are pydantic-ai objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.plumbing import codec
from sessionstore.plumbing.objects import hash_bytes

if TYPE_CHECKING:
    from sessionstore.formats.transcripts import ImportedStep, ImportedTranscript
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore


@dataclass(frozen=True)
class Growth:
    """How a transcript relates to the session imported from it."""

    stored: int
    """Steps the session already holds (its commits)."""
    new: list[ImportedStep]
    """The transcript's steps after those (empty: up to date)."""
    head: str
    """The session's head commit id when compared (the append refuses if it moved)."""


class NotAPrefix(Exception):
    """The stored session is not a prefix of the transcript; `str()` says where they part."""


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def fingerprints(blob: bytes) -> list[str]:
    """One sha256 per message of a blob, over its JSON without timestamps (sorted keys, compact)."""
    return [
        hash_bytes(orjson.dumps(_untimed(orjson.loads(line)), option=orjson.OPT_SORT_KEYS))
        for line in blob.splitlines()
        if line
    ]


def growth(store: SessionStore, name: str, transcript: ImportedTranscript) -> Growth:
    """The steps of `transcript` beyond what session `name` holds; `NotAPrefix` saying why not.

    A step the session holds only the start of (a turn still running when it was imported) is
    continued: its remaining messages come first, as one more step."""
    from sessionstore.formats.transcripts import ImportedStep

    commits, _ = store.log(name).scan(since_reset=False)
    if not commits:
        raise NotAPrefix(f"session {name!r} has no commits")
    steps = transcript.steps
    prints = [fingerprints(codec.encode(step.messages)) for step in steps]
    j = m = 0  # the transcript position the stored commits have reached: step j, message m of it
    for commit in commits:
        if (
            commit.kind == "compaction"
            and commit.extra.get("source") == "import"
            and m == 0
            and j < len(steps)
        ):
            if (
                steps[j].kind != "compaction"
                or fingerprints(store.objects.read(commit.blobs[0])) != prints[j]
            ):
                raise NotAPrefix(f"commit {commit.seq} of {name!r} is not step {j + 1} of the transcript")
            j += 1
            continue
        if commit.kind != "import" or commit.blob is None:
            raise NotAPrefix(f"commit {commit.seq} of {name!r} is a {commit.kind}, not part of this import")
        stored = fingerprints(store.objects.read(commit.blob))
        if j >= len(steps) or steps[j].kind != "turn" or prints[j][m : m + len(stored)] != stored:
            raise NotAPrefix(f"commit {commit.seq} of {name!r} differs from step {j + 1} of the transcript")
        m += len(stored)
        if m == len(prints[j]):
            j, m = j + 1, 0
    rest = list(steps[j + (1 if m else 0) :])
    if m:
        rest.insert(0, ImportedStep("turn", steps[j].messages[m:]))  # usage: already in the stored part
    return Growth(len(commits), rest, commits[-1].id)


def step_time(step: ImportedStep) -> str | None:
    """When a transcript step happened: its newest message timestamp, as a commit `time` (ISO-8601
    UTC with `Z`), or None when its messages carry none. For the import writer to stamp the step's
    commit with the transcript's own time instead of the time of the import."""
    from datetime import UTC

    stamps = [m.timestamp for m in step.messages if getattr(m, "timestamp", None) is not None]
    if not stamps:
        return None
    newest = max(s if s.tzinfo else s.replace(tzinfo=UTC) for s in stamps)
    return newest.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
