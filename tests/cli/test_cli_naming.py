"""`session rm`, `rename`, titles in `list`, `completion`, and forgiving names, through click's runner."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from helpers.cli import EXAMPLE, EXAMPLE_TURNS, assert_refused, run, snapshot
from sessionstore.cli.main import cli

REAL = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "realdata"
    / "claude_code"
    / "codemie_session-3fe1b6bc.jsonl"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    run(root, "init")
    run(root, "import", str(EXAMPLE))
    return root


def test_rm_list_and_undo(root: Path) -> None:
    before = snapshot(root)
    result = run(root, "rm", "fix-auth")
    assert result.exit_code == 0 and "`session rm --undo fix-auth` brings it back" in result.stdout
    assert run(root, "list").stdout == ""
    listed = orjson.loads(run(root, "rm", "--list", "--json").stdout)
    assert [e["name"] for e in listed] == ["fix-auth"]
    assert run(root, "rm", "--undo", "fix-auth").stdout.startswith("restored fix-auth")
    assert {k: v for k, v in snapshot(root).items() if not k.startswith("trash")} == before
    assert_refused(run(root, "rm", "--undo", "fix-auth"), "no removed session 'fix-auth'")
    assert_refused(run(root, "rm", "fix-atuh"), "did you mean 'fix-auth'")
    assert_refused(run(root, "rm"), "give the NAME")


def test_rename_and_title_show_in_list(root: Path) -> None:
    title = run(root, "list", "--json")
    assert orjson.loads(title.stdout)[0]["title"].startswith("Tokens that expired a second ago")
    assert (
        run(root, "rename", "fix-auth", "auth").stdout == "renamed fix-auth to auth (its checkpoints too)\n"
    )
    assert run(root, "rename", "auth", "--title", "leeway").exit_code == 0
    assert run(root, "list").stdout.split()[0] == "auth" and run(root, "list").stdout.rstrip().endswith(
        "leeway"
    )
    document = orjson.loads(run(root, "rename", "auth", "--title", "", "--json").stdout)
    assert document["name"] == "auth" and document["title"].startswith("Tokens that expired")
    assert_refused(run(root, "rename", "auth"), "give the NEW name, or --title")
    run(root, "import", str(EXAMPLE))
    assert_refused(run(root, "rename", "auth", "fix-auth"), "'fix-auth' already exists")


def test_mistyped_and_wrong_case_commands_suggest_the_right_one(root: Path) -> None:
    for typed, meant in (("lst", "list"), ("LOG", "log"), ("serach", "search")):
        result = CliRunner().invoke(cli, ["--store", str(root), typed])
        assert result.exit_code == 2
        assert f"no command {typed!r}; did you mean `session {meant}`?" in result.stderr


def test_completion_scripts_and_values(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for shell in ("bash", "zsh", "fish"):
        script = run(root, "completion", shell).stdout
        assert "_SESSION_COMPLETE" in script
    run(root, "fork", "fix-auth@1", "spike")

    def complete(words: str) -> list[str]:
        monkeypatch.setenv("_SESSION_COMPLETE", "bash_complete")
        monkeypatch.setenv("COMP_WORDS", f"session --store {root} {words}")
        monkeypatch.setenv("COMP_CWORD", str(len(words.split(" ")) + 2))
        result = CliRunner().invoke(cli, [], prog_name="session")
        return [line.split(",", 1)[1] for line in result.stdout.splitlines()]

    assert complete("log ") == ["fix-auth", "spike"]
    assert complete("show fix-auth@") == [f"fix-auth@{n}" for n in range(EXAMPLE_TURNS, 0, -1)]
    assert complete("search x sp") == ["spike"]


def test_imported_sessions_answer_to_their_transcripts_uuid(root: Path) -> None:
    if not REAL.exists():
        pytest.skip(f"real Claude Code transcript not found at {REAL}")
    assert run(root, "import", str(REAL)).exit_code == 0
    shown = run(root, "show", "3fe1b6bc")
    assert shown.exit_code == 0 and shown.stdout.split()[1].startswith("3fe1b6bc-dbd0-4320")
    assert run(root, "log", "3FE1B6BC", "--oneline").exit_code == 0
    listed = {r["name"]: r["title"] for r in orjson.loads(run(root, "list", "--json").stdout)}
    assert listed["3fe1b6bc-dbd0-4320-b980-4f147befa187"] == "/bmad:bmm:workflows:create-tech-spec"


def test_gc_keeps_a_removed_session_for_its_grace_period_then_says_it_deleted_it(root: Path) -> None:
    run(root, "rm", "fix-auth")
    kept = run(root, "gc")  # the default grace: the removal is minutes old
    assert kept.exit_code == 0 and "trash" not in kept.stdout
    assert run(root, "rm", "--undo", "fix-auth").exit_code == 0
    run(root, "rm", "fix-auth")
    done = run(root, "gc", "--grace", "0")
    assert done.exit_code == 0
    assert (
        "removed 1 trash entry older than 0 days (`session rm --undo` can no longer restore them)"
        in done.stdout
    )
    assert orjson.loads(run(root, "rm", "--list", "--json").stdout) == []
