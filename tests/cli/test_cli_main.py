"""The `session` entry point: lazy command table, one-line usage errors."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from sessionstore.cli.main import COMMANDS, cli


def test_the_lazy_table_names_every_command_of_every_module() -> None:
    defined = {}
    for module in set(COMMANDS.values()):
        for command in importlib.import_module(f"sessionstore.cli.{module}").COMMANDS:
            defined[command.name] = module
    assert defined == COMMANDS


def test_help_lists_every_command() -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(cli, ["--help"]).stdout
    for name in COMMANDS:
        assert f"  {name}" in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["log"], "Missing argument 'NAME' (or --last for the most recent session)"),
        (["show", "x", "--last"], "give REV or --last, not both"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
        (["log", "x", "--bogus"], "No such option '--bogus'"),
        (["gc", "--grace", "soon"], "'soon' is not a valid float"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from sessionstore.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("session: ") and expected in lines[0], done.stderr
    assert "--help" in lines[0]


NOT_YET: set[str] = set()
"""Commands of modules other helpers own that do not follow the convention yet (cli/chat.py: its help
has no example and its function returns None); the lead brings them in line."""


def _leaf_commands() -> list[tuple[str, object]]:
    out = []
    for module in sorted({m for c, m in COMMANDS.items() if c not in NOT_YET}):
        for command in importlib.import_module(f"sessionstore.cli.{module}").COMMANDS:
            subs = getattr(command, "commands", None)
            out += (
                [(f"{command.name} {n}", c) for n, c in subs.items()] if subs else [(command.name, command)]
            )
    return out


@pytest.mark.parametrize(("name", "command"), _leaf_commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_command_has_an_example_and_returns_an_exit_code(name: str, command: object) -> None:
    import inspect
    import typing

    assert "Example" in (command.help or ""), f"`session {name} --help` shows no example"  # type: ignore[attr-defined]
    hints = typing.get_type_hints(command.callback)  # type: ignore[attr-defined]
    assert hints.get("return") is int, f"`session {name}` returns {hints.get('return')}, not an exit code"
    assert inspect.signature(command.callback)  # type: ignore[attr-defined]


def test_only_main_catches_errors() -> None:
    """One error boundary: no command module swallows SessionStoreError or OSError (translating one
    into a better refusal is fine), except memory squash's per-file loop, which prints through
    output.error_line and goes on with the other files."""
    import ast
    from pathlib import Path

    cli_dir = Path(importlib.import_module("sessionstore.cli").__file__).parent
    catchers = {}
    for path in sorted(cli_dir.glob("*_cmds.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                reraises = any(
                    isinstance(n, ast.Raise) for n in ast.walk(node)
                )  # a translation, not a boundary
                if names & {"SessionStoreError", "OSError", "Exception"} and not reraises:
                    catchers.setdefault(path.name, []).append(node.lineno)
    assert set(catchers) <= {"memory_cmds.py"} and len(catchers.get("memory_cmds.py", [])) <= 1, catchers
