"""Codex `compacted` records (with and without `replacement_history`) import as compaction commits.

Variants of the real rollout are written to a temp dir with a `compacted` line inserted mid-way, the
way codex-rs writes them (`{"type": "compacted", "payload": {"message", "replacement_history"}}`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai.messages import CompactionPart, ModelRequest, SystemPromptPart, UserPromptPart

from helpers.transcript_checks import CODEX, assert_pairs, flat
from sessionstore.formats.codex import SUMMARY_PREFIX
from sessionstore.formats.transcripts import read_transcript
from sessionstore.porcelain.importing.new_session import import_transcript
from sessionstore.porcelain.session.cascade import checkpoint_summaries, summary_text
from sessionstore.porcelain.store import SessionStore

PREFIX = (
    f"{SUMMARY_PREFIX} of its thinking process. You also have access to the state of the tools that were "
    "used by that language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the information in "
    "this summary to assist with your own analysis:"
)

SUMMARY = "The demo is capped at 8 min. Owner is Vadym."


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _variant(tmp_path: Path, payload: dict[str, Any], at: int = 50) -> Path:
    lines = CODEX.read_text().splitlines()
    stamp = json.loads(lines[at])["timestamp"]
    record = json.dumps({"timestamp": stamp, "type": "compacted", "payload": payload})
    path = tmp_path / "rollout-variant.jsonl"
    path.write_text("\n".join([*lines[:at], record, *lines[at:]]) + "\n")
    return path


def _import(tmp_path: Path, path: Path) -> tuple[SessionStore, str]:
    store = SessionStore.open(tmp_path / "store")
    session = import_transcript(store, read_transcript(path), "codex-run")
    return store, session.name


def test_replacement_history_summary_becomes_a_checkpoint(tmp_path: Path) -> None:
    history = [
        _message("developer", "sandbox: workspace-write"),
        _message("user", "analyze the transcript, focus on the demo"),
        _message("user", f"{PREFIX}\n{SUMMARY}"),
    ]
    path = _variant(tmp_path, {"message": "", "replacement_history": history})
    transcript = read_transcript(path)
    kinds = [s.kind for s in transcript.steps]
    assert kinds.count("compaction") == 1
    step = transcript.steps[kinds.index("compaction")]
    head = step.messages[0]
    assert isinstance(head, ModelRequest) and summary_text(head) == SUMMARY
    assert [type(p) for p in head.parts] == [SystemPromptPart, CompactionPart]
    kept = [p.content for m in flat(transcript) for p in m.parts if isinstance(p, UserPromptPart)]
    assert "analyze the transcript, focus on the demo" in kept and not any(SUMMARY_PREFIX in k for k in kept)
    assert_pairs(flat(transcript))
    store, name = _import(tmp_path, path)
    session = store.session(name)
    compaction = next(c for c in session.log() if c.kind == "compaction")
    assert compaction.extra["source"] == "import"
    assert store.resolve(f"checkpoints/{name}/1").id == compaction.id
    assert checkpoint_summaries(session) == [SUMMARY]
    assert summary_text(session.history[0]) == SUMMARY
    assert store.fsck().ok


def test_local_compaction_message_is_the_summary(tmp_path: Path) -> None:
    path = _variant(tmp_path, {"message": "Local summary: tests pass on Python 3.11."})
    store, name = _import(tmp_path, path)
    assert checkpoint_summaries(store.session(name)) == ["Local summary: tests pass on Python 3.11."]


def test_encrypted_remote_compaction_is_named_not_empty(tmp_path: Path) -> None:
    history = [_message("user", "prepare the demo"), {"type": "compaction", "encrypted_content": "gAAAA"}]
    path = _variant(tmp_path, {"message": "", "replacement_history": history})
    store, name = _import(tmp_path, path)
    (summary,) = checkpoint_summaries(store.session(name))
    assert "encrypted summary" in summary and "1 kept messages" in summary
    assert any(
        isinstance(p, UserPromptPart) and p.content == "prepare the demo"
        for m in store.session(name).history
        for p in m.parts
    )
