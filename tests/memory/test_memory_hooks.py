"""init, .gitattributes, hook install; real git commits with the plain hook; pre-commit try-repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.gitrepos import git_env
from sessionstore.errors import MemoryFileError
from sessionstore.memory.document import headings, split_lines, template_text
from sessionstore.memory.hooks import ensure_union_merge, hook_script, init_memory, install_git_hook

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _env(**extra: str) -> dict[str, str]:
    return git_env(**extra)


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, env=_env(), capture_output=True, text=True, check=check)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    for key, value in _env().items():
        if key.startswith("GIT_"):
            monkeypatch.setenv(key, value)
    return path


def _big_memory() -> str:
    lines = [*split_lines(template_text())]
    lines += [f"- 2026-{9 + i // 150:02d}-{1 + i % 28:02d} s{i}: worked on item {i}" for i in range(300)]
    return "\n".join(lines) + "\n"


def test_scripts_ship_as_package_data() -> None:
    assert hook_script() == (REPO / "hooks" / "pre-commit").read_text("utf-8")
    assert os.access(REPO / "hooks" / "pre-commit", os.X_OK)


def test_manifests_offer_the_offline_hook() -> None:
    import yaml  # pre-commit's own dependency

    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {k: hook[k] for k in ("id", "entry", "language", "files", "require_serial")} == {
        "id": "memory-squash",
        "entry": "session memory squash",
        "language": "python",
        "files": r"(^|/)MEMORY\.md$",
        "require_serial": True,
    }
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    # Only local hooks: nothing is fetched, so the repo's own hooks run offline.
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    local = {h["id"]: h for h in config["repos"][0]["hooks"]}
    assert {"ruff-check", "ruff-format", "memory-squash"} <= set(local)
    assert all(h["language"] == "system" for h in local.values())
    for manifest in (".pre-commit-hooks.yaml", ".pre-commit-config.yaml"):
        command = "validate-manifest" if manifest.endswith("hooks.yaml") else "validate-config"
        subprocess.run(
            [str(BIN / "pre-commit"), command, str(REPO / manifest)], check=True, capture_output=True
        )


def test_init_writes_template_and_union_merge_once(repo: Path) -> None:
    sub = repo / "src"
    sub.mkdir()
    path, changed = init_memory(sub)
    assert path == repo / "MEMORY.md" and changed
    assert path.read_text() == template_text()
    assert (repo / ".gitattributes").read_text() == "MEMORY.md merge=union\n"
    with pytest.raises(MemoryFileError, match="already exists"):
        init_memory(repo)
    assert not ensure_union_merge(repo / ".gitattributes")


def test_union_merge_appends_to_existing_attributes(tmp_path: Path) -> None:
    attributes = tmp_path / ".gitattributes"
    attributes.write_text("*.png binary")
    assert ensure_union_merge(attributes)
    assert attributes.read_text() == "*.png binary\nMEMORY.md merge=union\n"


def test_init_outside_git_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MemoryFileError, match="not inside a git repository"):
        init_memory(tmp_path)


def test_install_refuses_to_clobber_without_force(repo: Path) -> None:
    target = install_git_hook(repo)
    assert target == repo / ".git" / "hooks" / "pre-commit"
    assert os.access(target, os.X_OK) and target.read_text() == hook_script()
    assert install_git_hook(repo) == target  # ours again: a no-op, not a clobber
    target.write_text("#!/bin/sh\necho mine\n")
    with pytest.raises(MemoryFileError, match="--force"):
        install_git_hook(repo)
    assert target.read_text() == "#!/bin/sh\necho mine\n"
    install_git_hook(repo, force=True)
    assert target.read_text() == hook_script()


def test_install_honours_core_hooks_path(repo: Path) -> None:
    _git(repo, "config", "core.hooksPath", "githooks")
    assert install_git_hook(repo) == repo / "githooks" / "pre-commit"


def test_plain_hook_stops_the_commit_then_lets_it_through(repo: Path) -> None:
    install_git_hook(repo)
    (repo / "MEMORY.md").write_text(_big_memory())
    _git(repo, "add", "MEMORY.md")
    env = _env(SESSIONSTORE_BIN=str(BIN / "session"))
    first = subprocess.run(
        ["git", "commit", "-qm", "memory"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert first.returncode == 1, first.stderr
    assert "review it, git add it" in first.stderr
    squashed = split_lines((repo / "MEMORY.md").read_text())
    assert len(squashed) <= 200 and headings(squashed) == headings(split_lines(_big_memory()))
    assert _git(repo, "rev-list", "--all", check=False).stdout == ""  # nothing committed
    _git(repo, "add", "MEMORY.md")
    second = subprocess.run(
        ["git", "commit", "-qm", "memory"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert second.returncode == 0, second.stderr
    assert _git(repo, "show", "HEAD:MEMORY.md").stdout == (repo / "MEMORY.md").read_text()


@pytest.mark.slow
def test_pre_commit_framework_runs_the_hook_from_this_repo(repo: Path, tmp_path: Path) -> None:
    pre_commit = shutil.which("pre-commit", path=str(BIN))
    if pre_commit is None:
        pytest.skip("pre-commit is not installed in this environment")
    (repo / "MEMORY.md").write_text(_big_memory())
    _git(repo, "add", "MEMORY.md")
    # An isolated cache: pre-commit builds the hook's venv by pip-installing this repository.
    env = _env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    command = [pre_commit, "try-repo", str(REPO), "memory-squash", "--files", "MEMORY.md"]
    first = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert len(split_lines((repo / "MEMORY.md").read_text())) <= 200
    # A second try-repo would rebuild the hook venv from scratch (try-repo uses a throwaway store), so
    # the "re-stage and pass" half runs the same entry point directly: exit 0, nothing changed.
    _git(repo, "add", "MEMORY.md")
    staged = (repo / "MEMORY.md").read_text()
    second = subprocess.run(
        [str(BIN / "session"), "memory", "squash", "MEMORY.md"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert (repo / "MEMORY.md").read_text() == staged


def test_the_post_merge_hook_ships_too() -> None:
    assert hook_script("post-merge") == (REPO / "hooks" / "post-merge").read_text("utf-8")
    assert os.access(REPO / "hooks" / "post-merge", os.X_OK)
