"""Putting MEMORY.md and its hook into a git repository: `session memory init` and `session hooks install`."""

from __future__ import annotations

import os
import stat
import subprocess
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from ..errors import MemoryFileError
from .document import template_text
from .fileio import write_atomic

MEMORY_FILE = "MEMORY.md"
UNION_ATTRIBUTE = "MEMORY.md merge=union"
"""Both sides of a conflict are kept; compression and squash then remove the duplicates."""


def git_path(*args: str, cwd: Path | None = None) -> Path:
    """A path git reports (`rev-parse` ARGS), absolute; `MemoryFileError` outside a git repository."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", *args], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
    except FileNotFoundError:
        raise MemoryFileError(
            "git is not installed: install git, or pass the MEMORY.md path explicitly"
        ) from None
    except subprocess.CalledProcessError:
        where = cwd or Path.cwd()
        raise MemoryFileError(f"{where} is not inside a git repository: run `git init` first") from None
    path = Path(out)
    return path if path.is_absolute() else (cwd or Path.cwd()) / path


def git_toplevel(cwd: Path | None = None) -> Path:
    """The top level of the git work tree containing `cwd`."""
    return git_path("--show-toplevel", cwd=cwd)


def default_memory_path(cwd: Path | None = None) -> Path:
    """MEMORY.md at the git top level."""
    return git_toplevel(cwd) / MEMORY_FILE


def init_memory(cwd: Path | None = None) -> tuple[Path, bool]:
    """Write MEMORY.md from the template at the git top level and mark it `merge=union`.

    Refuses to overwrite an existing MEMORY.md (nothing is changed then). Returns the path and whether
    `.gitattributes` was changed.
    """
    top = git_toplevel(cwd)
    memory = top / MEMORY_FILE
    if memory.exists() or memory.is_symlink():
        raise MemoryFileError(f"{memory} already exists: edit it, or move it away to start from the template")
    write_atomic(memory, template_text())
    return memory, ensure_union_merge(top / ".gitattributes")


def ensure_union_merge(attributes: Path) -> bool:
    """Add `MEMORY.md merge=union` to `attributes` unless a line already says so; True if added."""
    existing = attributes.read_text("utf-8") if attributes.exists() else ""
    if any(line.split() == UNION_ATTRIBUTE.split() for line in existing.splitlines()):
        return False
    separator = "" if not existing or existing.endswith("\n") else "\n"
    write_atomic(attributes, f"{existing}{separator}{UNION_ATTRIBUTE}\n")
    return True


def hook_script(name: str = "pre-commit") -> str:
    """A plain git hook we ship (a copy of hooks/NAME at the repo root): pre-commit or post-merge."""
    return resources.files("sessionstore").joinpath(f"templates/{name}").read_text("utf-8")


class InstalledHook(NamedTuple):
    """Where a hook went, and where the hook that was there before went (`NAME.local`), if anywhere."""

    path: Path
    kept: Path | None = None


def install_git_hook(
    cwd: Path | None = None, *, force: bool = False, name: str = "pre-commit"
) -> InstalledHook:
    """Install hook `name` where git looks for hooks (honours core.hooksPath and worktrees).

    An existing hook with other content is left alone unless `force`; with `force` it is kept, renamed
    to `NAME.local`, and ours runs it first (its exit status still counts for pre-commit), so nothing the
    user had stops running. Reinstalling ours is a no-op. Refused, changing nothing, when `NAME.local`
    is taken too (see `check_hooks_free`).
    """
    hooks_dir = git_path("--git-path", "hooks", cwd=cwd)
    target = hooks_dir / name
    script = hook_script(name)
    _check_free(target, script, force)
    hooks_dir.mkdir(parents=True, exist_ok=True)
    kept = None
    if _foreign(target, script):
        kept = target.with_name(f"{name}.local")
        os.rename(target, kept)  # its mode and content as they were: git ran it, ours now does
    elif target.exists() and not os.access(target, os.W_OK):
        target.chmod(target.stat().st_mode | stat.S_IWUSR)
    write_atomic(target, script)
    target.chmod(0o755)
    return InstalledHook(target, kept)


def _foreign(target: Path, script: str) -> bool:
    """Whether `target` is a hook (file or link, even a dangling one) other than ours."""
    if not (target.exists() or target.is_symlink()):
        return False
    try:
        return target.read_text("utf-8", errors="replace") != script
    except OSError:  # a dangling link, a directory: not ours either
        return True


def _check_free(target: Path, script: str, force: bool) -> None:
    if not _foreign(target, script):
        return
    if not force:
        raise MemoryFileError(
            f"{target} already exists: rerun with --force to keep it as {target.name}.local and run it "
            "before ours"
        )
    local = target.with_name(f"{target.name}.local")
    if local.exists() or local.is_symlink():
        raise MemoryFileError(
            f"{target} is not ours and {local} (a hook an earlier install kept) exists too: merge one into "
            "the other or move one away, then rerun; nothing was changed"
        )


def check_hooks_free(cwd: Path | None = None, *, force: bool = False) -> None:
    """Refuse (changing nothing) when any hook we install exists with other content, unless `force`;
    with `force`, when its `NAME.local` is taken too."""
    hooks_dir = git_path("--git-path", "hooks", cwd=cwd)
    for name in HOOKS:
        _check_free(hooks_dir / name, hook_script(name), force)


HOOKS = ("pre-commit", "post-merge")
MERGE_DRIVER = "sessionstore-memory"
DRIVER_ATTRIBUTE = f"MEMORY.md merge={MERGE_DRIVER}"
"""In .git/info/attributes, which overrides the repository's `merge=union` in this clone only."""


def session_command() -> str:
    """The `session` executable beside this interpreter when there is one, else on PATH, else `session`."""
    import shutil
    import sys

    beside = Path(sys.executable).with_name("session")
    return str(beside) if beside.is_file() else shutil.which("session") or "session"


def driver_command(executable: str | None = None) -> str:
    """The merge driver's command line (git substitutes %O %A %B %P and runs it with sh).

    It survives a new or moved virtualenv: the `executable` that installed it (default
    `session_command()`) when it still exists, else `$SESSIONSTORE_BIN` or `session` on PATH, else git's
    own union merge (what the repository's `.gitattributes` gives clones without the driver), saying
    so on stderr. A merge never fails because the venv that registered the driver is gone.
    """
    import shlex

    first = shlex.quote(executable or session_command())
    return (
        f'for s in {first} "${{SESSIONSTORE_BIN:-session}}"; do '
        'if command -v "$s" >/dev/null 2>&1; then exec "$s" memory merge-driver %O %A %B %P; fi; done; '
        "echo \"sessionstore: no 'session' executable (rerun 'session hooks install' from its venv); "
        'MEMORY.md merged line by line (union)" >&2; exec git merge-file --union %A %O %B'
    )


def install_merge_driver(cwd: Path | None = None, *, executable: str | None = None) -> tuple[Path, bool]:
    """Register the structured MEMORY.md merge driver in this clone: git config plus info/attributes.

    Returns the attributes file and whether it changed. Reinstalling changes nothing but the command
    (re-registered, so a rerun from a new venv points the driver at it).
    """
    driver = driver_command(executable)
    for key, value in (("name", "sessionstore MEMORY.md merge (per heading)"), ("driver", driver)):
        subprocess.run(
            ["git", "config", f"merge.{MERGE_DRIVER}.{key}", value], cwd=cwd, check=True, capture_output=True
        )
    attributes = git_path("--git-path", "info/attributes", cwd=cwd)
    existing = attributes.read_text("utf-8") if attributes.exists() else ""
    lines = existing.splitlines()
    if any(line.split() == DRIVER_ATTRIBUTE.split() for line in lines):
        return attributes, False
    attributes.parent.mkdir(parents=True, exist_ok=True)
    separator = "" if not existing or existing.endswith("\n") else "\n"
    write_atomic(attributes, f"{existing}{separator}{DRIVER_ATTRIBUTE}\n")  # any depth: no slash
    return attributes, True
