"""A second sweep of user mistakes at the `session` CLI (after test_cli_errors.py): each test is a case
that printed a traceback, several lines, or left half of its work on disk, and now gives one line
and exit 2 (130 for Ctrl-C) with nothing changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers.cli import EXAMPLE, assert_refused, run, snapshot
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


def _long_transcript(path: Path, turns: int) -> Path:
    """A pydantic-ai JSON transcript of `turns` short turns (each one commit when imported)."""
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        TextPart,
        UserPromptPart,
    )

    messages = []
    for i in range(turns):
        messages.append(ModelRequest(parts=[UserPromptPart(f"question {i}")]))
        messages.append(ModelResponse(parts=[TextPart(f"answer {i}")], model_name="gpt-4o"))
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(messages))
    return path


def _terminal_sigint() -> None:
    """In the child, SIGINT as at a terminal: a job started in the background (`cmd &`, some CI
    runners) inherits it ignored, and Python then never raises `KeyboardInterrupt`."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_an_import_is_one_line_exit_130_and_nothing_published(
    root: Path, tmp_path: Path
) -> None:
    big = _long_transcript(tmp_path / "big.json", 3000)
    before = snapshot(root / "logs")
    code = "from sessionstore.cli.main import main; main()"
    child = subprocess.Popen(
        [sys.executable, "-c", code, "--store", str(root), "import", str(big), "--as", "big"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_terminal_sigint,
    )
    staging = root / "locks" / "importing" / "big"
    deadline = time.monotonic() + 60
    while not staging.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # until the import is writing commits
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert (child.returncode, err, out) == (130, "session: interrupted\n", "")  # was: an empty line first
    assert snapshot(root / "logs") == before and not staging.exists()
    checked = run(root, "fsck")
    assert checked.exit_code == 0, checked.stdout


def test_ctrl_c_that_a_library_turns_into_another_error_is_still_an_interrupt(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionstore.cli import transfer_cmds

    def wrapped(source: Path, fmt: str) -> None:  # as pydantic-core does while it builds a schema
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the signal is handled before this returns
        except KeyboardInterrupt:
            raise RuntimeError("Error building 'literal' validator: KeyboardInterrupt") from None

    monkeypatch.setattr(transfer_cmds, "read_transcripts", wrapped)
    before = snapshot(root)
    # Ctrl-C as at a terminal: a job started in the background (`cmd &`, some CI runners) inherits
    # SIGINT ignored, and then no interrupt comes at all
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = run(root, "import", str(EXAMPLE), "--as", "again")  # was: the RuntimeError's traceback
        assert (result.exit_code, result.stderr) == (130, "session: interrupted\n")
        assert snapshot(root) == before
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, previous)


def test_chat_with_stdin_closed_is_one_line(root: Path) -> None:
    before = snapshot(root)
    closed = ["sh", "-c", 'exec "$@" <&-', "sh"]  # `session chat fix-auth <&-`: sys.stdin is None
    code = "from sessionstore.cli.main import main; main()"
    done = subprocess.run(
        [*closed, sys.executable, "-c", code, "--store", str(root), "chat", "fix-auth"],
        capture_output=True,
        text=True,
        check=False,
    )  # was: AttributeError: 'NoneType' object has no attribute 'readline'
    _one_line(done, "stdin is closed", "pipe lines in")
    assert snapshot(root) == before


def test_a_missing_choice_argument_is_one_line() -> None:
    done = _session("completion")  # click lists the choices one per line
    _one_line(done, "Missing argument", "Choose from: bash, zsh, fish", "(see `session completion --help`)")


@pytest.mark.parametrize("args", [["export", "fix-auth"], ["list", "--json"], ["log", "fix-auth", "--jsonl"]])
def test_stdout_closed_is_one_line(root: Path, args: list[str]) -> None:
    closed = ["sh", "-c", 'exec "$@" >&-', "sh"]  # `session export fix-auth >&-`: sys.stdout is None
    code = "from sessionstore.cli.main import main; main()"
    done = subprocess.run(
        [*closed, sys.executable, "-c", code, "--store", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )  # was: AttributeError: 'NoneType' object has no attribute 'flush'
    _one_line(done, "stdout is closed", "> FILE")


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["import", ""], "'[FILE]'"),
        (["memory", "squash", ""], "'[FILES]...'"),
        (["memory", "append", "fix-auth", "a note", "--file", ""], "'--file'"),
    ],
)
def test_an_empty_file_argument_is_named_not_shown_as_dot(root: Path, args: list[str], hint: str) -> None:
    before = snapshot(root)
    done = _session("--store", str(root), *args)  # was: ". is a directory"
    _one_line(done, f"Invalid value for {hint}: is empty: give a file name")
    assert snapshot(root) == before


def test_a_pyproject_whose_tool_is_not_a_table_is_not_a_crash(root: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("tool = 5  # sessionstore goes under [tool]\n")
    listed = run(root, "list")  # was: AttributeError: 'int' object has no attribute 'get'
    assert listed.exit_code == 0 and "fix-auth" in listed.stdout, listed.stderr


def test_a_remote_that_is_no_repository_names_it_in_the_one_line(root: Path, tmp_path: Path) -> None:
    project = root.parent
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    missing = tmp_path / "gone.git"
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", str(missing)], check=True)
    for verb in ("push", "pull"):  # was: "... failed: and the repository exists." (git's advice's last line)
        assert_refused(run(root, verb), "'origin'", f"'{missing}' does not appear to be a git repository")
    for verb in ("push", "pull"):  # was: "no git remote '/x/gone.git' ...: `git remote add /x/gone.git URL`"
        assert_refused(run(root, verb, str(missing)), "is not a git remote's name", f"NAME {missing}`")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["gauge", "fix-auth", "--model", ""], ["--model is empty"]),  # was: exit 0, "unknown model ''"
        (["rename", ""], ["unknown revision ''"]),  # was: "e.g. `session rename  -v2`"
    ],
)
def test_empty_names_and_values_are_refused(root: Path, args: list[str], words: list[str]) -> None:
    before = snapshot(root)
    assert_refused(run(root, *args), *words)
    assert snapshot(root) == before


def test_ctrl_c_while_the_cli_itself_loads_is_one_line_exit_130(root: Path) -> None:
    stop_at_click = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal (a background job ignores it)
class Stop:  # a real SIGINT, the moment `import click` starts: a Ctrl-C typed as `session` starts up
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            os.kill(os.getpid(), signal.SIGINT)
sys.meta_path.insert(0, Stop())
from sessionstore.cli import main  # the console script's entry point (pyproject [project.scripts])
main()
"""
    done = subprocess.run(
        [sys.executable, "-c", stop_at_click, "--store", str(root), "list"],
        capture_output=True,
        text=True,
        check=False,
    )  # was: a traceback through click's imports, and death by SIGINT
    assert (done.returncode, done.stderr, done.stdout) == (130, "session: interrupted\n", "")


def test_an_unreadable_log_says_check_its_permissions_not_move_it_aside(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = root / "logs" / "fix-auth.jsonl"
    log.chmod(0)
    if os.geteuid() == 0:  # root reads it anyway: refuse it as the kernel refuses everyone else
        real_open = os.open

        def refused(path: object, flags: int, *args: object, **kwargs: object) -> int:
            if os.fspath(path) == str(log):  # type: ignore[call-overload]
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", refused)
    try:
        # was: "... is not a regular file (Permission denied): move it aside"
        assert_refused(run(root, "show", "fix-auth"), f"cannot read log of session 'fix-auth' at {log}")
        assert_refused(run(root, "log", "fix-auth"), "Permission denied; check its permissions")
    finally:
        log.chmod(0o644)
