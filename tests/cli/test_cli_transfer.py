"""`session import` and `session export` through click's runner: round trips, real data, refusals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolCallPart, ToolReturnPart

from helpers.cli import (
    EXAMPLE,
    EXAMPLE_MESSAGES,
    EXAMPLE_TURNS,
    assert_lock_refused,
    assert_refused,
    run,
    snapshot,
)
from sessionstore.formats.transcripts import read_transcript
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    assert run(root, "init").exit_code == 0
    return root


def _history(root: Path, name: str) -> list:
    return SessionStore.open(root, create=False).session(name, create=False).history


def test_import_the_bundled_example(root: Path) -> None:
    result = run(root, "import", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    said = f"imported {EXAMPLE} (pydantic-ai) as fix-auth: {EXAMPLE_TURNS} turns, {EXAMPLE_MESSAGES} messages"
    assert result.stdout.startswith(said)
    assert result.stderr == ""  # no progress bar off a terminal
    transcript = read_transcript(EXAMPLE)
    assert _history(root, "fix-auth") == [m for s in transcript.steps for m in s.messages]
    log = run(root, "log", "fix-auth", "--oneline").stdout.splitlines()
    assert len(log) == EXAMPLE_TURNS and log[0].split()[1:3] == ["(head)", "import"]
    assert log[-1].split()[1:3] == ["import", "+12"]
    show = run(root, "show", "fix-auth").stdout
    assert 'read_file(path="src/app/auth.py")' in show and "tool       append_file -> " in show
    assert "           run_tests -> " in show  # the second result of one request: no role repeated


def test_import_as_a_name_with_an_explicit_format(root: Path) -> None:
    result = run(root, "import", str(EXAMPLE), "--format", "pydantic-ai", "--as", "mine")
    assert result.exit_code == 0, result.output
    assert SessionStore.open(root, create=False).sessions() == ["mine"]


def test_export_then_import_round_trips(root: Path, tmp_path: Path) -> None:
    run(root, "import", str(EXAMPLE))
    out = tmp_path / "out.json"
    result = run(root, "export", "fix-auth", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"exported fix-auth@{EXAMPLE_TURNS} " in result.stderr and result.stdout == ""
    assert run(root, "export", "fix-auth").stdout_bytes == out.read_bytes()
    assert run(root, "import", str(out), "--as", "copy").exit_code == 0
    assert _history(root, "copy") == _history(root, "fix-auth")
    older = run(root, "export", "fix-auth~1").stdout
    last_turn = read_transcript(EXAMPLE).steps[-1].messages
    assert len(ModelMessagesTypeAdapter.validate_json(older)) == EXAMPLE_MESSAGES - len(last_turn)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("cut.json", b'[{"kind": "request", "parts": [', ["not valid JSON", "re-export"]),
        ("empty.jsonl", b"", ["empty", "nothing to import"]),
        ("bin.jsonl", b"\xff\xfe\x00garbage", ["not UTF-8"]),
        ("list.json", b"[1, 2, 3]", ["not pydantic-ai messages"]),
        ("prose.txt", b"hello there\n", ["neither a JSON list nor JSON lines"]),
        (
            "torn.jsonl",
            b'{"type": "user", "message": {"role": "user", "content": "hi"}}\n{"type": "ass',
            ["line 2"],
        ),
    ],
)
def test_malformed_files_are_refused_and_nothing_changes(
    root: Path, tmp_path: Path, name: str, data: bytes, words: list[str]
) -> None:
    before = snapshot(root)
    assert_refused(run(root, "import", str(_write(tmp_path, name, data))), name, *words)
    assert snapshot(root) == before


def test_import_refusals_change_nothing(root: Path, tmp_path: Path) -> None:
    run(root, "import", str(EXAMPLE))
    before = snapshot(root)
    again = run(root, "import", str(EXAMPLE))
    assert again.exit_code == 0 and again.stdout.startswith("fix-auth is up to date with ")
    other = tmp_path / "other.json"
    other.write_bytes(EXAMPLE.read_bytes().replace(b"leeway", b"grace"))
    assert_refused(
        run(root, "import", str(other), "--as", "fix-auth"), "'fix-auth' already exists", "not a prefix"
    )
    assert_refused(run(root, "import", str(EXAMPLE), "--as", "../up"), "../up")
    assert_refused(run(root, "import", str(tmp_path / "missing.json")), "no such file")
    assert_refused(run(root, "import", str(tmp_path)), "is a directory")
    assert_refused(run(root, "import", str(EXAMPLE), "--format", "claude-code", "--as", "x"), "--format")
    assert snapshot(root) == before


def test_import_into_a_locked_name_waits_then_refuses(root: Path) -> None:
    store = SessionStore.open(root, create=False)
    before = snapshot(root)
    with store.lock("fix-auth"):
        result = run(root, "import", str(EXAMPLE), env={"SESSIONSTORE_LOCK_TIMEOUT_S": "0.2"})
    assert_lock_refused(result, "session 'fix-auth' is locked")
    assert snapshot(root) == before


def test_export_refusals(root: Path, tmp_path: Path) -> None:
    run(root, "import", str(EXAMPLE))
    before = snapshot(root)
    assert_refused(run(root, "export", "fix-auht"), "did you mean 'fix-auth'")
    assert_refused(run(root, "export", "fix-auth", "-o", str(tmp_path / "no" / "x.json")), "does not exist")
    assert snapshot(root) == before and not (tmp_path / "no").exists()


REAL = [
    "claude_code/codemie_session-3fe1b6bc.jsonl",
    "claude_code/spotter_tool_heavy.jsonl",
    "codex/rollout-*.jsonl",
]


def _tool_counts(messages: list) -> tuple[int, int]:
    parts = [p for m in messages for p in m.parts]
    return sum(isinstance(p, ToolCallPart) for p in parts), sum(isinstance(p, ToolReturnPart) for p in parts)


@pytest.mark.parametrize("rel", REAL)
def test_real_transcripts_import_show_and_round_trip(
    root: Path, realdata: Path, tmp_path: Path, rel: str
) -> None:
    path = next(realdata.glob(rel))
    result = run(root, "import", str(path), "--as", "real")
    assert result.exit_code == 0, result.output
    transcript = read_transcript(path)
    history = _history(root, "real")
    assert _tool_counts(history) == _tool_counts([m for s in transcript.steps for m in s.messages])
    log = run(root, "log", "real", "--oneline")
    assert log.exit_code == 0 and len(log.stdout.splitlines()) == len(transcript.steps)
    show = run(root, "show", "real")
    assert show.exit_code == 0 and show.stdout.count("\ntool       ") > 0
    out = tmp_path / "real.json"
    assert run(root, "export", "real", "-o", str(out)).exit_code == 0
    assert run(root, "import", str(out), "--as", "again").exit_code == 0
    assert _history(root, "again") == history
    assert run(root, "fsck").exit_code == 0


def test_import_example_needs_no_path(root: Path) -> None:
    result = run(root, "import", "--example")
    assert result.exit_code == 0, result.output
    assert f"as fix-auth: {EXAMPLE_TURNS} turns, {EXAMPLE_MESSAGES} messages" in result.stdout
    before = snapshot(root)
    assert_refused(run(root, "import"), "give a transcript FILE", "--example")
    assert_refused(run(root, "import", str(EXAMPLE), "--example"), "one of them")
    assert snapshot(root) == before


def test_a_file_of_sub_agent_lines_imports_as_that_agents_session(root: Path, tmp_path: Path) -> None:
    # Claude Code writes each sub-agent to <session>/subagents/agent-<id>.jsonl, every line
    # `isSidechain` with its `agentId` (issue 28, item 4: was "no Claude Code messages found").
    from helpers.transcript_checks import CODEMIE, raw_lines

    lines = raw_lines(CODEMIE)
    for line in lines:
        if line.get("type") in ("user", "assistant", "system"):
            line.update(isSidechain=True, agentId="a9f4657")
    agent = tmp_path / "subagents" / "agent-a9f4657.jsonl"
    agent.parent.mkdir()
    agent.write_text("".join(orjson.dumps(line).decode() + "\n" for line in lines))
    result = run(root, "import", str(agent))
    assert result.exit_code == 0, result.stderr
    parent_id = lines[0].get("sessionId") or next(ln["sessionId"] for ln in lines if "sessionId" in ln)
    name = f"{parent_id}-agent-a9f4657"
    assert f"as {name}: " in result.stdout
    main = read_transcript(CODEMIE)  # the same lines, as the main conversation: the same messages
    assert _history(root, name) == [m for s in main.steps for m in s.messages]
    # In a file that holds the main conversation too, sub-agent lines stay out of it.
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(CODEMIE.read_text() + agent.read_text())
    assert [m for s in read_transcript(mixed).steps for m in s.messages] == _history(root, name)


def test_a_codex_session_is_titled_by_its_request_and_show_folds_the_injected_context(
    root: Path, tmp_path: Path
) -> None:
    # issue 28, item 10: the title was the injected AGENTS.md and `show` opened with its 270 lines.
    from helpers.transcript_checks import AGENTS_MD, CODEX, PERMISSIONS, codex_as_the_cli_writes_it

    cwd = "/Users/Sample_User/naya"
    source = tmp_path / CODEX.name
    lines = codex_as_the_cli_writes_it(CODEX, cwd)
    source.write_text("".join(orjson.dumps(line).decode() + "\n" for line in lines))
    assert run(root, "import", str(source), "--as", "cx").exit_code == 0
    listed = run(root, "list").stdout
    assert listed.rstrip().endswith("analyze trascript and summarzie action items related to…"), listed
    shown = run(root, "show", "cx@1").stdout.splitlines()
    agents = f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{AGENTS_MD.read_text()}</INSTRUCTIONS>"
    assert shown[2:5] == [
        f"system     [permissions instructions (sandbox and approvals): {len(PERMISSIONS.splitlines())} "
        "lines; --full shows it]",
        f"user       [AGENTS.md instructions for {cwd}: {len(agents.splitlines())} lines; --full shows it]",
        f"           [environment context ({cwd}): 7 lines; --full shows it]",
    ]
    assert shown[5] == "           # Files mentioned by the user:"  # then the request, whole
    assert "## Core Rules" not in "\n".join(shown)
    full = run(root, "show", "cx@1", "--full").stdout
    assert "## Core Rules" in full and "<approval_policy>on-request</approval_policy>" in full
    page = tmp_path / "cx.html"
    assert run(root, "export", "cx", "--format", "html", "-o", str(page)).exit_code == 0
    html = page.read_text()
    assert f'<details class="injected"><summary>[AGENTS.md instructions for {cwd}] ' in html  # closed
