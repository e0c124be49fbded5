"""Putting MEMORY.md and its hook into a git repository: `session memory init` and `session hooks install`."""

from __future__ import annotations

import os
import stat
import subprocess
from importlib import resources
from pathlib import Path

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


def hook_script() -> str:
    """The plain git pre-commit hook (a copy of hooks/pre-commit at the repo root)."""
    return resources.files("sessionstore").joinpath("templates/pre-commit").read_text("utf-8")


def install_git_hook(cwd: Path | None = None, *, force: bool = False) -> Path:
    """Install the pre-commit hook where git looks for hooks (honours core.hooksPath and worktrees).

    An existing hook with other content is left alone unless `force`; reinstalling ours is a no-op.
    """
    hooks_dir = git_path("--git-path", "hooks", cwd=cwd)
    target = hooks_dir / "pre-commit"
    script = hook_script()
    if target.exists() and target.read_text("utf-8", errors="replace") != script and not force:
        raise MemoryFileError(f"{target} already exists: rerun with --force to replace it")
    hooks_dir.mkdir(parents=True, exist_ok=True)
    if target.exists() and not os.access(target, os.W_OK):
        target.chmod(target.stat().st_mode | stat.S_IWUSR)
    write_atomic(target, script)
    target.chmod(0o755)
    return target
