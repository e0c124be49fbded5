"""User mistakes and a hostile environment at the `session` CLI: one line on stderr, exit 2, no traceback,
nothing on disk changed (a first-time user's tour, one regression test per problem it found)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import EXAMPLE, EXAMPLE_MESSAGES, assert_refused, run, snapshot
from sessionstore.cli.main import EXIT_BROKEN_PIPE, EXIT_ERROR


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    assert run(root, "init").exit_code == 0
    assert run(root, "import", str(EXAMPLE)).exit_code == 0
    return root


def _session(*args: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess (stdout may be a file or a pipe to another one)."""
    return subprocess.run(
        [sys.executable, "-c", "from sessionstore.cli.main import main; main()", *args],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )


def test_bare_session_prints_the_help_not_an_error_line() -> None:
    done = _session()
    assert done.returncode == EXIT_ERROR
    assert done.stderr.startswith("Usage: session [OPTIONS] COMMAND")
    assert "session: Usage" not in done.stderr and "Traceback" not in done.stderr


def test_init_where_no_store_can_be_made_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert_refused(run(blocker / "store", "init"), "cannot create a session store", "Not a directory")
    assert blocker.read_text() == "x"


def test_export_to_an_unwritable_path_is_one_line_and_leaves_no_temp_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionstore.plumbing import fsutil

    def read_only(path: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(fsutil, "atomic_replace", read_only)
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(
        run(root, "export", "fix-auth", "-o", str(out / "x.json")), "cannot write", "Permission denied"
    )
    assert list(out.iterdir()) == []


def test_export_to_an_empty_output_path_is_refused(root: Path) -> None:
    assert_refused(run(root, "export", "fix-auth", "-o", ""), "-o needs a file name")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line(root: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _session("--store", str(root), "log", "fix-auth", stdout=full)
    assert done.returncode == EXIT_ERROR
    assert done.stderr.strip().splitlines() == [
        "session: cannot write: No space left on device; check free disk space and where the output goes"
    ]


def test_a_closed_pipe_ends_quietly(root: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write (`session log | head`, later)
    with os.fdopen(write_end, "w") as pipe:
        done = _session("--store", str(root), "log", "fix-auth", stdout=pipe)
    assert done.returncode == EXIT_BROKEN_PIPE
    assert done.stderr == ""


def test_a_store_whose_locks_cannot_be_taken_refuses_writes_in_one_line(root: Path) -> None:
    locks = root / "locks"
    for lock in locks.iterdir():
        lock.unlink()
    locks.rmdir()
    locks.write_text("")  # stands in for a read-only store: the lock file cannot be created
    before = snapshot(root)
    refused = ("/locks is a regular file where the store keeps a directory", "move it out of the store")
    assert_refused(run(root, "checkout", "fix-auth@1"), *refused)  # refused as the store is opened
    assert_refused(run(root, "import", str(EXAMPLE), "--as", "again"), *refused)
    assert snapshot(root) == before


def test_an_os_error_inside_any_command_is_one_line(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstore.porcelain.session import revisions
    from sessionstore.porcelain.store import SessionStore

    def refused(self: SessionStore, rev: str) -> None:  # every reading of a revision goes through it
        raise PermissionError(1, "Operation not permitted", str(self.root / "logs" / "x.jsonl"))

    monkeypatch.setattr(revisions, "resolve", refused)
    assert_refused(run(root, "show", "fix-auth"), "logs/x.jsonl", "Operation not permitted")


def test_temp_file_names_are_not_shown(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionstore.porcelain.session import revisions
    from sessionstore.porcelain.store import SessionStore

    tmp = str(root / "objects" / ".tmp-abc123")

    def refused(self: SessionStore, rev: str) -> None:
        raise OSError(16, "Device or resource busy", tmp, None, str(root / "objects" / "ab"))

    monkeypatch.setattr(revisions, "resolve", refused)
    result = run(root, "show", "fix-auth")
    assert_refused(result, str(root / "objects" / "ab"))
    assert ".tmp-" not in result.stderr


def test_gc_refuses_a_nan_grace_period(root: Path) -> None:
    before = snapshot(root)
    assert_refused(run(root, "gc", "--grace", "nan"), "grace period", "nan")
    assert snapshot(root) == before


def test_checkout_of_the_current_state_writes_no_commit(root: Path) -> None:
    before = snapshot(root)
    result = run(root, "checkout", "fix-auth")  # a git user's "switch to fix-auth"
    assert result.exit_code == 0 and "already at" in result.stdout and "nothing changed" in result.stdout
    assert snapshot(root) == before
    assert run(root, "checkout", "fix-auth@1").exit_code == 0
    after_first = snapshot(root)
    again = run(root, "checkout", "fix-auth@1")  # the head is a checkout of that very commit
    assert again.exit_code == 0 and "already at" in again.stdout
    assert snapshot(root) == after_first
    as_json = run(root, "checkout", "fix-auth@1", "--json")  # the same, as one JSON document
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["changed"] is False
    assert snapshot(root) == after_first


def test_an_empty_store_option_is_named_not_shown_as_dot() -> None:
    done = _session("--store", "", "list")
    assert done.returncode == EXIT_ERROR
    assert done.stderr.strip().splitlines() == [
        "session: Invalid value for '--store': is empty: give the store directory, or leave it out "
        "(see `session --help`)"
    ]


def test_config_warns_about_variables_that_do_nothing(root: Path) -> None:
    env = {
        "SESSIONSTORE_CONTEXT_WINDOW": "50000",  # the setting is ..._TOKENS
        "SESSIONSTORE_COMPACT_THRESHOLD": "50k",
        "SESSIONSTORE_BIN": "/usr/bin/session",  # the git hook's: known, not a setting
    }
    result = run(root, "config", env=env)
    assert result.exit_code == 0
    warnings = result.stderr.strip().splitlines()
    assert warnings == [
        "session: SESSIONSTORE_CONTEXT_WINDOW is not a sessionstore variable and is ignored; "
        "did you mean SESSIONSTORE_CONTEXT_WINDOW_TOKENS?",
        "session: SESSIONSTORE_COMPACT_THRESHOLD='50k' is ignored: "
        "set a positive number of tokens, or unset it",
    ]
    quiet = run(root, "config", env={"SESSIONSTORE_COMPACT_THRESHOLD": "50000", "SESSIONSTORE_BIN": "x"})
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_a_stray_file_in_logs_does_not_break_every_command(root: Path) -> None:
    (root / "logs" / "fix-auth (copy).jsonl").write_text("copied by a file manager\n")
    listed = run(root, "list")
    assert listed.exit_code == 0 and "fix-auth" in listed.stdout and "copy" not in listed.stdout
    assert run(root, "show", "fix-auth@1").exit_code == 0
    assert_refused(run(root, "show", "abcdef12"), "no commit id starts with 'abcdef12'")
    checked = run(root, "fsck")
    assert checked.exit_code == 1 and "logs/fix-auth (copy).jsonl is not a session log" in checked.stdout


def test_demo_refuses_to_write_into_an_existing_session(root: Path) -> None:
    before = snapshot(root)
    assert_refused(run(root, "demo", "--name", "fix-auth"), "session 'fix-auth' already exists", "'demo'")
    assert snapshot(root) == before


def test_memory_append_refuses_an_empty_summary(tmp_path: Path) -> None:
    memory = tmp_path / "MEMORY.md"
    memory.write_text("# Project memory\n\n## Session notes\n")
    result = run(tmp_path / "store", "memory", "append", "fix-auth", "  ", "--file", str(memory))
    assert_refused(result, "SUMMARY is empty")
    assert memory.read_text() == "# Project memory\n\n## Session notes\n"


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["log", "fix-auth", "-n"], "session log --help"),
        (["--store", "x", "compact", "y", "--focus"], "session compact --help"),
        (["memory", "squash", "--max-lines"], "session memory squash --help"),
        (["--store"], "session --help"),
    ],
)
def test_a_missing_option_value_points_at_the_commands_help(args: list[str], where: str) -> None:
    done = _session(*args)
    assert done.returncode == EXIT_ERROR
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "requires an argument" in lines[0] and lines[0].endswith(f"(see `{where}`)")


def test_dash_means_stdout_for_export_and_is_explained_for_import(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.chdir(tmp_path)  # where a file named "-" would appear
    result = run(root, "export", "fix-auth", "-o", "-")
    assert result.exit_code == 0 and len(json.loads(result.stdout)) == EXAMPLE_MESSAGES
    assert not Path("-").exists()
    assert_refused(run(root, "import", "-", "--as", "piped"), "give /dev/stdin")


def test_a_store_path_that_is_a_file_names_where_it_was_set(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    flag = _session("--store", str(tmp_path / "afile"), "list")
    assert flag.returncode == EXIT_ERROR and "Invalid value for '--store'" in flag.stderr
    env = subprocess.run(
        [sys.executable, "-c", "from sessionstore.cli.main import main; main()", "list"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "SESSIONSTORE_DIR": str(tmp_path / "afile")},
    )
    assert env.returncode == EXIT_ERROR
    assert env.stderr.strip().splitlines() == [
        f"session: Invalid value for SESSIONSTORE_DIR: {tmp_path / 'afile'} is a file, not a store directory "
        "(see `session --help`)"
    ]


def test_a_warning_is_one_line_naming_the_fix_not_pythons_format(tmp_path: Path) -> None:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from sessionstore import SessionStore

    store = tmp_path / "st"
    with pytest.warns(UserWarning, match="mystery-9"):  # from Python, it stays a Python warning
        SessionStore.open(store).session("a").append(
            [
                ModelRequest(parts=[UserPromptPart("hi")]),
                ModelResponse(parts=[TextPart("yo")], model_name="mystery-9"),
            ]
        )
    done = _session("--store", str(store), "compact", "a")
    lines = done.stderr.splitlines()
    warning = [line for line in lines if "mystery-9" in line]
    assert warning == [
        line for line in lines if line.startswith("session: warning: unknown model 'mystery-9'")
    ]
    assert len(warning) == 1 and "context_window_tokens" in warning[0]
    assert "UserWarning" not in done.stderr and ".py:" not in done.stderr
