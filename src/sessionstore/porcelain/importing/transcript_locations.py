"""Where Claude Code and Codex keep this project's transcripts (`session import --claude-code/--codex`).

- Claude Code: `$CLAUDE_CONFIG_DIR` (default `~/.claude`) `/projects/<dir>/*.jsonl`, where `<dir>` is
  the project's absolute path with every character other than a letter or digit replaced by `-`
  (`/home/me/my.app` -> `-home-me-my-app`), as Claude Code names it.
- Codex: `$CODEX_HOME` (default `~/.codex`) `/sessions/YYYY/MM/DD/rollout-*.jsonl`; a rollout belongs
  to the project when the `cwd` of its first line (`session_meta`) is the project directory or
  inside it.

Only paths are found here; reading is formats/'s job. Oldest first (by modification time), so
imports happen in the order the sessions were held.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import orjson


def _home(env: Mapping[str, str], variable: str, default: str) -> Path:
    value = env.get(variable)
    return Path(value).expanduser() if value else Path.home() / default


def claude_code_dir(project: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The folder Claude Code keeps `project`'s transcripts in (whether or not it exists)."""
    return (
        _home(env, "CLAUDE_CONFIG_DIR", ".claude") / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project))
    )


def codex_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Codex's sessions folder (whether or not it exists)."""
    return _home(env, "CODEX_HOME", ".codex") / "sessions"


def _by_age(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: (p.stat().st_mtime, p.name))


def claude_code_transcripts(project: Path, env: Mapping[str, str] = os.environ) -> list[Path]:
    """`project`'s Claude Code transcripts, oldest first ([] when Claude Code has none)."""
    folder = claude_code_dir(project, env)
    return _by_age([p for p in folder.glob("*.jsonl") if p.is_file()]) if folder.is_dir() else []


def codex_cwd(path: Path) -> str | None:
    """The `cwd` a Codex rollout records in its first line, if it has one."""
    try:
        with open(path, "rb") as f:
            first = orjson.loads(f.readline())
    except (OSError, orjson.JSONDecodeError):
        return None
    payload = first.get("payload") if isinstance(first, dict) else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else None


def codex_transcripts(project: Path, env: Mapping[str, str] = os.environ) -> list[Path]:
    """Codex rollouts held in `project` or below it, oldest first."""
    folder = codex_dir(env)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.rglob("rollout-*.jsonl"):
        cwd = codex_cwd(path)
        if cwd is not None and (Path(cwd) == project or project in Path(cwd).parents):
            found.append(path)
    return _by_age(found)
