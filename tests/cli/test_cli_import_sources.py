"""`session import` of OpenAI chat files and `--claude-code` / `--codex` discovery, through the runner."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from helpers.cli import assert_refused, run, snapshot
from sessionstore.porcelain.importing.transcript_locations import claude_code_dir

REAL = Path(__file__).resolve().parents[3] / "shared" / "realdata"
CHAT = [
    {"role": "user", "content": "Book me a flight."},
    {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "find", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "HAT136"},
    {"role": "assistant", "content": "Booked HAT136."},
]


def test_openai_chat_files_import_one_session_per_conversation(tmp_path: Path) -> None:
    root = tmp_path / "store"
    run(root, "init")
    chat = tmp_path / "chat.json"
    chat.write_bytes(orjson.dumps(CHAT))
    result = run(root, "import", str(chat))
    assert result.exit_code == 0, result.output
    assert "(openai-chat) as chat: 1 turn, 4 messages" in result.stdout
    records = tmp_path / "runs.json"
    records.write_bytes(orjson.dumps([{"task_id": 7, "traj": CHAT}, {"task_id": 9, "traj": CHAT[:1]}]))
    document = orjson.loads(run(root, "import", str(records), "--json").stdout)
    assert [r["session"] for r in document["imported"]] == ["runs-7", "runs-9"]
    before = snapshot(root)
    again = run(root, "import", str(records))
    assert again.exit_code == 0 and "(2 up to date)" in again.stdout and snapshot(root) == before
    grown = [
        {"task_id": 7, "traj": [*CHAT, {"role": "user", "content": "thanks"}]},
        {"task_id": 9, "traj": CHAT},
    ]
    records.write_bytes(orjson.dumps(grown))
    assert "(2 appended)" in run(root, "import", str(records)).stdout
    counts = [orjson.loads(run(root, "show", n, "--json").stdout)["count"] for n in ("runs-7", "runs-9")]
    assert counts == [5, 4]
    records.write_bytes(orjson.dumps([{"task_id": 7, "traj": CHAT[:1]}]))
    before = snapshot(root)
    assert_refused(run(root, "import", str(records)), "'runs-7' already exists and is not a prefix")
    assert snapshot(root) == before
    records.write_bytes(orjson.dumps([{"task_id": 7, "traj": CHAT}, {"task_id": 9, "traj": CHAT}]))
    assert run(root, "import", str(records), "--as", "tau").stdout.startswith(
        f"{records} (openai-chat): 2 sessions"
    )
    names = {r["name"] for r in orjson.loads(run(root, "list", "--json").stdout)}
    assert names == {"chat", "runs-7", "runs-9", "tau-7", "tau-9"}


def test_claude_code_and_codex_transcripts_of_this_project_are_found_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = REAL / "claude_code" / "spotter_tool_heavy.jsonl"
    codex = next((REAL / "codex").glob("rollout-*.jsonl"), None)
    if not claude.exists() or codex is None:
        pytest.skip(f"real Claude Code / Codex transcripts not found under {REAL}")
    project = (tmp_path / "app").resolve()
    project.mkdir()
    monkeypatch.chdir(project)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "codex")}
    folder = claude_code_dir(project, env)
    folder.mkdir(parents=True)
    shutil.copy(claude, folder / claude.name)
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    lines = codex.read_bytes().splitlines(keepends=True)
    meta = orjson.loads(lines[0])
    meta["payload"]["cwd"] = str(project)  # held in this project
    (day / codex.name).write_bytes(orjson.dumps(meta) + b"\n" + b"".join(lines[1:]))
    root = tmp_path / "store"
    run(root, "init")
    first = run(root, "import", "--claude-code", "--codex", env=env)
    assert first.exit_code == 0, first.output
    assert (
        first.stdout.count("imported ") == 2
        and "2 new transcripts imported, 0 grown, 0 up to" in first.stderr
    )
    again = orjson.loads(run(root, "import", "--claude-code", "--codex", "--json", env=env).stdout)
    assert again["imported"] == [] and len(again["skipped"]) == 2
    nothing = run(root, "import", "--claude-code", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})
    assert nothing.exit_code == 0 and "no transcripts found in " in nothing.stderr
    assert_refused(run(root, "import", "--codex", "--as", "x", env=env), "--as names one session")
