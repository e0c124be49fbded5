"""The `session` entry point: lazy command table, one-line usage errors."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import click
import pytest

from sessionstore.cli.main import COMMANDS, cli


def _commands() -> dict[str, click.Command]:
    """Every command the table names, loaded."""
    return {name: cli.get_command(click.Context(cli), name) for name in COMMANDS}  # type: ignore[misc]


def test_the_table_names_every_command_of_every_module() -> None:
    """Each entry loads a command of its own name, and no module defines a top-level command the table
    leaves out (one defined but never listed could not be run)."""
    loaded = _commands()
    assert all(isinstance(c, click.Command) and c.name == n for n, c in loaded.items()), loaded
    cli_dir = Path(importlib.import_module("sessionstore.cli").__file__).parent  # type: ignore[arg-type]
    defined = set()
    for path in [*cli_dir.glob("*_cmds.py"), cli_dir / "chat.py"]:
        module = importlib.import_module(f"sessionstore.cli.{path.stem}")
        objects = [v for v in vars(module).values() if isinstance(v, click.Command)]
        subs = {id(s) for g in objects if isinstance(g, click.Group) for s in g.commands.values()}
        defined |= {f"{path.stem}:{k}" for k, v in vars(module).items() if v in objects and id(v) not in subs}
    assert defined == set(COMMANDS.values())


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
    for name, command in sorted(_commands().items()):
        if name in NOT_YET:
            continue
        subs = getattr(command, "commands", None)
        out += [(f"{name} {n}", c) for n, c in subs.items()] if subs else [(name, command)]
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


def test_store_is_taken_after_every_command_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`session list --store P` (issue 28 item 8): every command and subcommand takes `--store`, the
    same option as the group's; given after the command it wins over one before it or SESSIONSTORE_DIR."""
    from click.testing import CliRunner

    from helpers.cli import EXAMPLE

    every = [c for _, c in _leaf_commands()] + [c for c in _commands().values() if isinstance(c, click.Group)]
    assert all("--store" in {o for p in c.params for o in p.opts} for c in every)  # type: ignore[attr-defined]

    store, other = tmp_path / "s", tmp_path / "other"
    for args in (["init", "--store", str(store)], ["import", str(EXAMPLE), "--store", str(store)]):
        done = subprocess.run(
            [sys.executable, "-c", "from sessionstore.cli.main import main; main()", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    runner = CliRunner()
    for args, env in (
        (["list", "--store", str(store), "--json"], {}),
        (["--store", str(other), "list", "--json", "--store", str(store)], {}),
        (["list", "--json", "--store", str(store)], {"SESSIONSTORE_DIR": str(other)}),
    ):
        listed = runner.invoke(cli, args, env=env)
        assert listed.exit_code == 0 and '"fix-auth"' in listed.stdout, (args, listed.output)
    memory = tmp_path / "MEMORY.md"
    memory.write_text("# Memory\n\n## Session notes\n\n- one line\n")
    squashed = runner.invoke(cli, ["memory", "squash", "--check", str(memory), "--store", str(store)])
    assert squashed.exit_code == 0, squashed.output  # a subcommand takes it too
    assert not other.exists()
    refused = runner.invoke(cli, ["list", "--store", str(tmp_path / "s" / "VERSION")])
    assert refused.exit_code == 2 and "is a file, not a store directory" in refused.stderr

    monkeypatch.setenv("_SESSION_COMPLETE", "bash_complete")  # completion reads it there too
    monkeypatch.setenv("COMP_WORDS", f"session log --store {store} fix")
    monkeypatch.setenv("COMP_CWORD", "4")
    completed = runner.invoke(cli, [], prog_name="session")
    assert completed.stdout.splitlines() == ["plain,fix-auth"]
