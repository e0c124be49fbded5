"""The `session` entry point: the click group, shared options and the one error boundary.

Command modules register themselves in `COMMAND_MODULES`; each must keep pydantic-ai imports inside
its functions, because `session log`, `list` and `gauge` must start without importing it.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from ..errors import SessionStoreError

# Modules that define click commands; each exposes `COMMANDS: list[click.Command]`.
COMMAND_MODULES = (
    "sessionstore.cli.store_cmds",
    "sessionstore.cli.history_cmds",
    "sessionstore.cli.transfer_cmds",
    "sessionstore.cli.accounting_cmds",
    "sessionstore.cli.compaction_cmds",
    "sessionstore.cli.memory_cmds",
)

EXIT_ERROR = 2
"""User mistakes and refused operations. Exit 1 is kept for 'it changed something' / 'checks failed'."""


class _Group(click.Group):
    """Turns every `SessionStoreError` into one line on stderr and exit 2: no tracebacks for users."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SessionStoreError as err:
            click.echo(f"session: {err}", err=True)
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("session: interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "store_path",
    type=click.Path(file_okay=False, path_type=str),
    envvar="SESSIONSTORE_DIR",
    help="Store directory (default: .sessions at the git top level, else in the current directory).",
)
@click.version_option(package_name="sessionstore")
@click.pass_context
def cli(ctx: click.Context, store_path: str | None) -> None:
    """Git-style, file-backed memory for pydantic-ai agents."""
    ctx.ensure_object(dict)
    ctx.obj["store_path"] = store_path


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # a real import error inside an existing module: surface it
                raise
            continue
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    """Console-script entry point."""
    if os.environ.get("NO_COLOR"):
        os.environ.setdefault("CLICK_NO_COLOR", "1")
    cli(prog_name="session")
