"""A second sweep of user mistakes at the `session` CLI (after test_cli_errors.py): each test is a case
that printed a traceback, several lines, or left half of its work on disk, and now gives one line
and exit 2 (130 for Ctrl-C) with nothing changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from helpers.cli import assert_refused, run, snapshot
from sessionstore.cli.main import EXIT_ERROR

CHAT = [
    {"role": "user", "content": "Book me a flight."},
    {"role": "assistant", "content": "Booked HAT136."},
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store holding the bundled example session, fix-auth."""
    assert run(tmp_path / "store", "init").exit_code == 0
    assert run(tmp_path / "store", "import", "--example").exit_code == 0
    return tmp_path / "store"


def _session(
    *args: str, stdin: object = subprocess.DEVNULL, stdout: object = subprocess.PIPE, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a subprocess."""
    return subprocess.run(
        [sys.executable, "-c", "from sessionstore.cli.main import main; main()", *args],
        stdin=stdin,  # type: ignore[arg-type]
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        cwd=cwd,
    )


def _one_line(done: subprocess.CompletedProcess[str], *words: str, code: int = EXIT_ERROR) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("session: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_a_tau_bench_file_that_runs_each_task_several_times_imports_every_run(
    root: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.json"  # tau-bench: each task_id once per trial
    runs.write_bytes(orjson.dumps([{"task_id": t, "trial": k, "traj": CHAT} for k in (0, 1) for t in (0, 1)]))
    result = run(root, "import", str(runs))
    assert result.exit_code == 0, result.stderr  # was: runs-0 and runs-1 written, then "already exists"
    names = {r["name"] for r in orjson.loads(run(root, "list", "--json").stdout)}
    assert names == {"fix-auth", "runs-0", "runs-1", "runs-0.1", "runs-1.1"}


def test_an_import_whose_conversations_would_share_a_name_writes_none_of_them(
    root: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.json"  # `--as x` keeps the part after the last '-': both become x-1
    runs.write_bytes(orjson.dumps([{"task_id": "a-1", "traj": CHAT}, {"task_id": "b-1", "traj": CHAT}]))
    before = snapshot(root)
    assert_refused(run(root, "import", str(runs), "--as", "x"), "2 of its conversations", "'x-1'", "task_id")
    assert snapshot(root) == before
