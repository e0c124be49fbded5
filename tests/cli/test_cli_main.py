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
        (["log"], "Missing argument 'NAME'"),
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
