"""`session memory init|squash|append` and `session hooks install`: the team MEMORY.md from the shell."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..accounting.settings import Settings
from ..errors import SessionStoreError
from ..memory.append import append_session_summary
from ..memory.compress import compress_memory_file
from ..memory.fileio import MemoryUpdate
from ..memory.hooks import default_memory_path, init_memory, install_git_hook

EXIT_CHANGED = 1
EXIT_ERROR = 2


def _settings(max_lines: int | None, max_bytes: int | None) -> Settings:
    """The store's settings (its project's pyproject, the environment) with the command's flags on top."""
    from .output import store_settings

    ctx = click.get_current_context()
    return store_settings(ctx, {"memory_max_lines": max_lines, "memory_max_bytes": max_bytes})


def _report(update: MemoryUpdate, verbose: bool, check: bool) -> None:
    click.echo(update.describe(dry_run=check))
    for note in update.notes:
        click.echo(f"  note: {note}")
    if verbose:
        for removed in update.removed:
            click.echo(f"  - removed: {removed}")


@click.group()
def memory() -> None:
    """Team-shared MEMORY.md: start it, append to it, squash it under its caps."""


@memory.command("init")
def init_cmd() -> None:
    """Write MEMORY.md from the template at the git top level; mark it merge=union in .gitattributes."""
    path, attributes_changed = init_memory()
    click.echo(f"wrote {path}")
    if attributes_changed:
        click.echo(f"added 'MEMORY.md merge=union' to {path.parent / '.gitattributes'}")


@memory.command("squash")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="Change nothing; report and exit 1 if a file would change.")
@click.option("--max-lines", type=click.IntRange(min=1), help="Line cap (default: memory_max_lines, 200).")
@click.option("--max-bytes", type=click.IntRange(min=1), help="Byte cap (default: memory_max_bytes, 25000).")
@click.option("--verbose", "-v", is_flag=True, help="List every removed line.")
def squash_cmd(
    files: tuple[Path, ...], check: bool, max_lines: int | None, max_bytes: int | None, verbose: bool
) -> None:
    """Rewrite each MEMORY.md past its caps (and remove duplicates); exit 1 if a file changed.

    With no FILES, squashes MEMORY.md at the git top level. A second run changes nothing. Errors
    (binary, directory, read-only) leave the file unchanged and exit 2.
    """
    settings = _settings(max_lines, max_bytes)
    paths = list(files) or [default_memory_path()]
    changed = failed = False
    for path in paths:
        try:
            update = compress_memory_file(path, settings, check=check, only_past_caps=True)
        except SessionStoreError as err:
            click.echo(f"session: {err}", err=True)
            failed = True
            continue
        changed |= update.changed
        if update.changed or verbose:
            _report(update, verbose, check)
    if failed:
        sys.exit(EXIT_ERROR)
    if changed:
        sys.exit(EXIT_CHANGED)


@memory.command("append")
@click.argument("session_name")
@click.argument("summary")
@click.option(
    "--file", "path", type=click.Path(path_type=Path), help="MEMORY.md (default: at the git top level)."
)
@click.option("--verbose", "-v", is_flag=True, help="List every removed line.")
def append_cmd(session_name: str, summary: str, path: Path | None, verbose: bool) -> None:
    """Add a dated bullet for SESSION_NAME under Session notes, compressing at the caps."""
    if not summary.strip():  # an empty argument (an unset shell variable) would add "(no summary)"
        raise SessionStoreError("SUMMARY is empty: say in one line what the session did")
    settings = _settings(None, None)
    update = append_session_summary(
        path or default_memory_path(), session_name, summary, settings, compress=True
    )
    _report(update, verbose, check=False)


@click.group()
def hooks() -> None:
    """Git hooks for repositories without the pre-commit framework."""


@hooks.command("install")
@click.option("--force", is_flag=True, help="Replace an existing pre-commit hook.")
def install_cmd(force: bool) -> None:
    """Install the MEMORY.md squash hook as .git/hooks/pre-commit."""
    target = install_git_hook(force=force)
    click.echo(f"installed {target}")


COMMANDS: list[click.Command] = [memory, hooks]
