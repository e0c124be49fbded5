"""porcelain/importing/transcript_locations.py: where Claude Code and Codex keep this project's
transcripts."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from sessionstore.porcelain.importing.transcript_locations import (
    claude_code_dir,
    claude_code_transcripts,
    codex_transcripts,
)


def test_claude_code_names_the_project_folder_after_its_path(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    project = Path("/home/me/my.app")
    folder = claude_code_dir(project, env)
    assert folder == tmp_path / "claude" / "projects" / "-home-me-my-app"
    assert claude_code_transcripts(project, env) == []
    folder.mkdir(parents=True)
    old, new = folder / "b.jsonl", folder / "a.jsonl"
    old.write_text("{}\n")
    new.write_text("{}\n")
    os.utime(old, (1, 1))
    (folder / "notes.txt").write_text("x")
    assert claude_code_transcripts(project, env) == [old, new]  # oldest first, transcripts only


def test_codex_rollouts_are_picked_by_the_cwd_they_record(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "codex")}
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    for name, cwd in (("here", "/w/app"), ("below", "/w/app/sub"), ("elsewhere", "/w/other"), ("none", None)):
        meta = {"type": "session_meta", "payload": {"cwd": cwd} if cwd else {}}
        (day / f"rollout-{name}.jsonl").write_bytes(orjson.dumps(meta) + b"\n")
    (day / "rollout-broken.jsonl").write_bytes(b"not json\n")
    found = {p.name for p in codex_transcripts(Path("/w/app"), env)}
    assert found == {"rollout-here.jsonl", "rollout-below.jsonl"}
    assert codex_transcripts(Path("/w/app"), {"CODEX_HOME": str(tmp_path / "nothing")}) == []
