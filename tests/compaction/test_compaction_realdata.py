"""Real transcripts (../shared/realdata) imported and compacted at 32k, 128k and 200k windows."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from sessionstore import SessionStore, Settings
from sessionstore.compaction.turns import pairs_intact
from sessionstore.formats.transcripts import read_transcript
from sessionstore.porcelain.importing.new_session import import_transcript
from sessionstore.porcelain.session import cascade
from sessionstore.summary.skeleton import validate_summary

TRANSCRIPTS = [
    "claude_code/codemie_session-3fe1b6bc.jsonl",
    "claude_code/spotter_tool_heavy.jsonl",
    "codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
]


def last_user_request(history: list) -> ModelRequest:
    return next(m for m in reversed(history) if isinstance(m, ModelRequest) and any(
        isinstance(p, UserPromptPart) for p in m.parts
    ))  # fmt: skip


@pytest.mark.parametrize("window", [32_000, 128_000, 200_000])
@pytest.mark.parametrize("relpath", TRANSCRIPTS, ids=lambda p: Path(p).name[:24])
def test_real_transcript_compacts_within_the_full_level(
    tmp_path: Path, realdata: Path, relpath: str, window: int
) -> None:
    store = SessionStore.open(tmp_path / "store", settings=Settings(context_window_tokens=window))
    session = import_transcript(store, read_transcript(realdata / relpath))
    original = session.history
    assert pairs_intact(original)
    imported = session.head
    assert imported is not None

    commit = session.compact()

    _, lv = cascade.session_levels(session)
    assert session.tokens <= lv.full, f"{session.tokens} tokens left over a full level of {lv.full}"
    assert commit.kind == "compaction" and commit.tier in (2, 3)
    assert pairs_intact(session.history), "no tool call is separated from its return"
    summary = session.history[0].parts[-1].content
    assert validate_summary(summary) == [], summary[:400]
    request = last_user_request(original)
    if commit.tier == 2:
        assert request in session.history, "the last user request survives verbatim"
    else:
        kept = last_user_request(session.history).parts[-1].content
        assert str(kept)[:200] == str(request.parts[-1].content)[:200], "tier 3 keeps its head"
    assert store.session(session.name).history == session.history, "replay from disk equals memory"
    session.checkout(f"{session.name}@{imported.seq}")
    assert session.history == original, "compaction is reversible"
