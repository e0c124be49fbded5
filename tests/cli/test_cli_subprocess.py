"""The installed `session` script in real processes: the main flow, start-up imports, terminals."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import EXAMPLE, EXAMPLE_MESSAGES, EXAMPLE_TURNS

SCRIPT = Path(sys.executable).with_name("session")
pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason=f"no installed `session` script at {SCRIPT}")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTORE_") and k != "NO_COLOR"}
    return {**env, **extra}


def session(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(SCRIPT), "--store", str(root), *args], capture_output=True, text=True, env=_env(), timeout=60
    )
    if check:
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def test_main_flow_through_the_installed_script(tmp_path: Path) -> None:
    """The README's flow; the rest of each command is covered in-process (each process here costs ~1 s)."""
    root = tmp_path / "store"
    assert "Initialized empty session store" in session(root, "init").stdout
    said = f"as fix-auth: {EXAMPLE_TURNS} turns, {EXAMPLE_MESSAGES} messages"
    assert said in session(root, "import", str(EXAMPLE)).stdout
    assert session(root, "list").stdout.split()[:3] == ["fix-auth", str(EXAMPLE_MESSAGES), "msgs"]
    log = session(root, "log", "fix-auth", "--oneline").stdout.splitlines()
    assert len(log) == EXAMPLE_TURNS and "(head) import" in log[0]
    assert "read_file(path=" in session(root, "show", "fix-auth").stdout
    assert (
        f"into spike: {EXAMPLE_MESSAGES - 4} messages" in session(root, "fork", "fix-auth~1", "spike").stdout
    )
    assert session(root, "fsck").stdout.rstrip().endswith(": ok")
    assert "would remove 0 unreachable objects" in session(root, "gc", "--dry-run").stdout
    refused = session(root, "show", "fix-atuh", check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "session: no session 'fix-atuh'; did you mean 'fix-auth'?\n"


def test_log_and_list_never_import_pydantic_ai(tmp_path: Path) -> None:
    root = tmp_path / "store"
    session(root, "init")
    session(root, "import", str(EXAMPLE))
    probe = (
        "import sys\n"
        "from sessionstore.cli.main import cli\n"
        "for args in (['list'], ['list', '--json'], ['log', 'fix-auth'], ['log', 'fix-auth', '--oneline'],\n"
        "             ['log', 'fix-auth', '--json']):\n"
        f"    cli(['--store', {str(root)!r}, *args], standalone_mode=False)\n"
        "heavy = {'pydantic_ai', 'tiktoken', 'pydantic'}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "assert not heavy, heavy\n"
        "print('clean')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("clean")
    assert "fix-auth" in result.stdout and "(head) import" in result.stdout


def _on_a_terminal(args: list[str], lines: int = 200, **env: str) -> tuple[int, str]:
    """Run the script with stdout and stderr on a pseudo-terminal; (exit code, everything written)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [str(SCRIPT), *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=_env(**{"LINES": str(lines), "COLUMNS": "120", "PAGER": "cat", **env}),
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(controller)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


@pytest.mark.skipif(shutil.which("true") is None, reason="needs a POSIX system")
def test_colour_and_progress_only_on_a_terminal(tmp_path: Path) -> None:
    root = tmp_path / "store"
    session(root, "init")
    code, text = _on_a_terminal(["--store", str(root), "import", str(EXAMPLE)])
    assert code == 0 and "importing fix-auth.json" in text  # the progress bar, on the terminal's stderr
    code, text = _on_a_terminal(["--store", str(root), "log", "fix-auth", "--oneline"])
    assert code == 0 and "\x1b[" in text
    code, text = _on_a_terminal(["--store", str(root), "log", "fix-auth", "--oneline"], NO_COLOR="1")
    assert code == 0 and "\x1b[" not in text and "(head) import" in text
    code, text = _on_a_terminal(["--store", str(root), "fsck"])
    assert code == 0 and "checking sessions" in text


def test_long_output_goes_through_the_pager_on_a_terminal(tmp_path: Path) -> None:
    root = tmp_path / "store"
    session(root, "init")
    session(root, "import", str(EXAMPLE))
    pager = "sed -e s/^/paged:/"
    short = ["--store", str(root), "log", "fix-auth", "--oneline", "-n", "5"]
    code, text = _on_a_terminal(short, lines=10, PAGER=pager)
    assert code == 0 and "paged:" not in text  # five lines fit on the screen
    code, text = _on_a_terminal(["--store", str(root), "log", "fix-auth"], lines=10, PAGER=pager)
    assert code == 0 and "paged:" in text and "commit " in text


def test_pager_gets_less_frx_and_no_pager_turns_it_off(tmp_path: Path) -> None:
    root = tmp_path / "store"
    session(root, "init")
    session(root, "import", str(EXAMPLE))
    pager = "sh -c 'echo LESS=$LESS; sed -e s/^/paged:/'"
    code, text = _on_a_terminal(["--store", str(root), "log", "fix-auth"], lines=10, PAGER=pager)
    assert code == 0 and "LESS=FRX" in text and "paged:\x1b[33mcommit " in text
    for args in (["--no-pager", "log", "fix-auth"], ["show", "fix-auth", "--no-pager"]):
        code, text = _on_a_terminal(["--store", str(root), *args], lines=10, PAGER=pager)
        assert code == 0 and "paged:" not in text and "LESS=" not in text


def test_new_commands_through_the_installed_script(tmp_path: Path) -> None:
    """search, diff, rename, rm, completion and a did-you-mean, one real process each."""
    root = tmp_path / "store"
    session(root, "init")
    session(root, "import", str(EXAMPLE))
    found = session(root, "search", "leeway", "--role", "user", "-n", "1").stdout
    assert found.startswith("fix-auth@1 user: ") and "leeway" in found
    diff = session(root, "diff", "fix-auth@1", "fix-auth@2").stdout
    assert diff.startswith("fix-auth@1 (") and "\n-0 messages (0 tok), +" in diff and "\n+ " in diff
    assert session(root, "rename", "fix-auth", "auth").stdout.startswith("renamed fix-auth to auth")
    assert "session rm --undo auth" in session(root, "rm", "auth").stdout
    assert session(root, "completion", "bash").stdout.startswith("_session_completion()")
    typo = session(root, "lst", check=False)
    assert typo.returncode == 2 and typo.stderr == (
        "session: no command 'lst'; did you mean `session list`? (see `session --help`)\n"
    )
