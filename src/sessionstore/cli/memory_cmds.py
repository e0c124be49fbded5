"""`session memory init|squash|append` and `session hooks install`: the team MEMORY.md from the shell."""

from __future__ import annotations

from pathlib import Path

import click

from ..accounting.settings import Settings
from ..errors import SessionStoreError
from ..memory.append import append_session_summary
from ..memory.compress import compress_memory_file
from ..memory.driver import merge_memory_files
from ..memory.fileio import MemoryUpdate
from ..memory.hooks import (
    DRIVER_ATTRIBUTE,
    HOOKS,
    check_hooks_free,
    default_memory_path,
    init_memory,
    install_git_hook,
    install_merge_driver,
    session_command,
)
from .output import FilePath, error_line

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


def init() -> int:
    """`session memory init`: write MEMORY.md from the template; exit 0."""
    path, attributes_changed = init_memory()
    click.echo(f"wrote {path}")
    if attributes_changed:
        click.echo(f"added 'MEMORY.md merge=union' to {path.parent / '.gitattributes'}")
    return 0


@memory.command("init")
def init_cmd() -> int:
    """Write MEMORY.md from the template at the git top level; mark it merge=union in .gitattributes.

    \b
    Example:  session memory init && git add MEMORY.md .gitattributes
    """
    return init()


def squash(paths: list[Path], settings: Settings, *, check: bool = False, verbose: bool = False) -> int:
    """`session memory squash`: exit 0 unchanged, 1 if a file changed (or would, with `check`), 2 if
    a file was refused. A refused file (binary, a directory, read-only) does not stop the others: its
    line is the one the error boundary would print (`output.error_line`), and the exit code says it."""
    changed = failed = False
    for path in paths:
        try:
            update = compress_memory_file(path, settings, check=check, only_past_caps=True)
        except SessionStoreError as err:  # per file, so the other files still get squashed
            click.echo(error_line(err), err=True)
            failed = True
            continue
        changed |= update.changed
        if update.changed or verbose:
            _report(update, verbose, check)
    return EXIT_ERROR if failed else EXIT_CHANGED if changed else 0


@memory.command("squash")
@click.argument("files", nargs=-1, type=FilePath(path_type=Path))
@click.option("--check", is_flag=True, help="Change nothing; report and exit 1 if a file would change.")
@click.option("--max-lines", type=click.IntRange(min=1), help="Line cap (default: memory_max_lines, 200).")
@click.option("--max-bytes", type=click.IntRange(min=1), help="Byte cap (default: memory_max_bytes, 25000).")
@click.option("--verbose", "-v", is_flag=True, help="List every removed line.")
def squash_cmd(
    files: tuple[Path, ...], check: bool, max_lines: int | None, max_bytes: int | None, verbose: bool
) -> int:
    """Rewrite each MEMORY.md past its caps (and remove duplicates); exit 1 if a file changed.

    With no FILES, squashes MEMORY.md at the git top level. A second run changes nothing. Errors
    (binary, directory, read-only) leave the file unchanged and exit 2.

    \b
    Example:  session memory squash --check MEMORY.md
    """
    paths = list(files) or [default_memory_path()]
    return squash(paths, _settings(max_lines, max_bytes), check=check, verbose=verbose)


def append(session_name: str, summary: str, path: Path | None, *, verbose: bool = False) -> int:
    """`session memory append`: one dated bullet under Session notes; exit 0."""
    if not summary.strip():  # an empty argument (an unset shell variable) would add "(no summary)"
        raise SessionStoreError("SUMMARY is empty: say in one line what the session did")
    update = append_session_summary(
        path or default_memory_path(), session_name, summary, _settings(None, None), compress=True
    )
    _report(update, verbose, check=False)
    return 0


@memory.command("append")
@click.argument("session_name")
@click.argument("summary")
@click.option(
    "--file", "path", type=FilePath(path_type=Path), help="MEMORY.md (default: at the git top level)."
)
@click.option("--verbose", "-v", is_flag=True, help="List every removed line.")
def append_cmd(session_name: str, summary: str, path: Path | None, verbose: bool) -> int:
    """Add a dated bullet for SESSION_NAME under Session notes, compressing at the caps.

    \b
    Example:  session memory append fix-auth "expired tokens now return 401"
    """
    return append(session_name, summary, path, verbose=verbose)


@click.group()
def hooks() -> None:
    """Git hooks for repositories without the pre-commit framework."""


@hooks.command("install")
@click.option(
    "--force", is_flag=True, help="Install over existing hooks, keeping each as NAME.local (run first)."
)
def install_cmd(force: bool) -> int:
    """Install the MEMORY.md hooks (pre-commit squash, post-merge squash) and the merge driver.

    A hook already there is kept as NAME.local and runs before ours (with --force; without it,
    nothing is changed). The driver (git config plus .git/info/attributes, this clone only) merges
    MEMORY.md per heading; it runs this `session`, else the one on PATH, else git's union merge.

    \b
    Example:  session hooks install --force
    """
    check_hooks_free(force=force)
    for name in HOOKS:
        installed = install_git_hook(force=force, name=name)
        kept = f" (your hook is now {installed.kept}, and runs first)" if installed.kept else ""
        click.echo(f"installed {installed.path}{kept}")
    attributes, changed = install_merge_driver()
    said = f"added '{DRIVER_ATTRIBUTE}' to {attributes}" if changed else f"{attributes} already has it"
    click.echo(f"registered the MEMORY.md merge driver ({session_command()}, else `session` on PATH): {said}")
    return 0


@memory.command("merge-driver", hidden=True)
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("ours", type=click.Path(path_type=Path))
@click.argument("theirs", type=click.Path(path_type=Path))
@click.argument("name", required=False)
def merge_driver_cmd(base: Path, ours: Path, theirs: Path, name: str | None) -> int:
    """What git runs to merge MEMORY.md (%O %A %B %P): the result replaces OURS; exit 0 is clean.

    \b
    Example:  git config merge.sessionstore-memory.driver 'session memory merge-driver %O %A %B %P'
    """
    memory = Path(name) if name else None  # git runs the driver at the work tree's top, where %P is
    update = merge_memory_files(base, ours, theirs, _settings(None, None), memory=memory)
    if update.removed:
        click.echo(f"sessionstore: merged {name or 'MEMORY.md'} past its caps and squashed it", err=True)
    return 0
