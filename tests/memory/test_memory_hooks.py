"""init, .gitattributes, hook install; real git commits with the plain hook; pre-commit try-repo."""

from __future__ import annotations

import os
import re
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
    installed = install_git_hook(repo)
    target = repo / ".git" / "hooks" / "pre-commit"
    assert installed == (target, None)
    assert os.access(target, os.X_OK) and target.read_text() == hook_script()
    assert install_git_hook(repo) == (target, None)  # ours again: a no-op, not a clobber
    target.write_text("#!/bin/sh\necho mine\n")
    with pytest.raises(MemoryFileError, match="--force"):
        install_git_hook(repo)
    assert target.read_text() == "#!/bin/sh\necho mine\n"


def test_force_keeps_the_users_hook_as_local_and_runs_it_first(repo: Path) -> None:
    # issue 28, item 6: --force used to delete the user's own hook.
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    mine = '#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/mine.log"\n[ ! -f STOP ]\n'
    (hooks / "pre-commit").write_text(mine)
    (hooks / "pre-commit").chmod(0o755)
    installed = install_git_hook(repo, force=True)
    assert installed == (hooks / "pre-commit", hooks / "pre-commit.local")
    assert (hooks / "pre-commit.local").read_text() == mine and os.access(hooks / "pre-commit.local", os.X_OK)
    assert (hooks / "pre-commit").read_text() == hook_script()
    env = _env(SESSIONSTORE_BIN=str(BIN / "session"))
    (repo / "MEMORY.md").write_text(_big_memory())
    (repo / "STOP").write_text("")  # the user's hook refuses: the commit stops, ours never ran
    _git(repo, "add", "MEMORY.md")
    refused = subprocess.run(["git", "commit", "-qm", "m"], cwd=repo, env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and (repo / "mine.log").read_text() == "ran\n"
    assert (repo / "MEMORY.md").read_text() == _big_memory()
    (repo / "STOP").unlink()
    first = subprocess.run(["git", "commit", "-qm", "m"], cwd=repo, env=env, capture_output=True, text=True)
    assert first.returncode == 1 and "squashed" in first.stderr  # both ran: the user's, then ours
    assert (repo / "mine.log").read_text() == "ran\nran\n"
    # A second --force over another hook of the user's would need the .local name again: refused.
    (hooks / "pre-commit").write_text("#!/bin/sh\necho other\n")
    with pytest.raises(MemoryFileError, match=r"pre-commit.local .* exists too"):
        install_git_hook(repo, force=True)
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho other\n"
    assert (hooks / "pre-commit.local").read_text() == mine


def test_install_honours_core_hooks_path(repo: Path) -> None:
    _git(repo, "config", "core.hooksPath", "githooks")
    assert install_git_hook(repo).path == repo / "githooks" / "pre-commit"


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


def _documented_snippet() -> dict:
    """The `.pre-commit-config.yaml` docs/memory.md gives for the pre-commit framework."""
    import yaml  # pre-commit's own dependency

    text = (REPO / "docs" / "memory.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    (snippet,) = [b for b in blocks if "github.com/<owner>/sessionstore" in b]
    return yaml.safe_load(snippet)


def _copy_of_this_repository(path: Path) -> Path:
    """What a user's pre-commit clones: this repository's files (as they are in the work tree, so a
    test of a change tests the change) committed on `main` in a repository of its own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, env=_env(), capture_output=True, check=True,
    ).stdout  # fmt: skip
    for rel in filter(None, listed.decode().split("\0")):
        if (REPO / rel).is_file():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, path / rel)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "sessionstore")
    return path


def test_every_documented_snippet_gives_the_same_rev() -> None:
    rev = _documented_snippet()["repos"][0]["rev"]
    comment = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert f"#     rev: {rev}\n" in comment
    assert "v0.1.0" not in comment + (REPO / "docs" / "memory.md").read_text()  # a tag that never was


@pytest.mark.slow
def test_the_documented_pre_commit_snippet_resolves_and_runs(repo: Path, tmp_path: Path) -> None:
    # issue 28, item 5: the docs said `rev: v0.1.0`, which the repository does not have.
    pre_commit = shutil.which("pre-commit", path=str(BIN))
    if pre_commit is None:
        pytest.skip("pre-commit is not installed in this environment")
    upstream = _copy_of_this_repository(tmp_path / "sessionstore")
    config = _documented_snippet()
    documented = config["repos"][0]["rev"]
    assert (
        _git(upstream, "rev-parse", "--verify", "-q", f"{documented}^{{commit}}", check=False).returncode == 0
    )
    config["repos"][0]["repo"] = str(upstream)  # the one change: a local copy instead of GitHub
    import yaml

    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (repo / "MEMORY.md").write_text(_big_memory())
    _git(repo, "add", "MEMORY.md", ".pre-commit-config.yaml")
    # An isolated cache: pre-commit clones the repository at the rev and pip-installs it into a venv.
    env = _env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    command = [pre_commit, "run", "memory-squash", "--files", "MEMORY.md"]
    first = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert len(split_lines((repo / "MEMORY.md").read_text())) <= 200
    _git(repo, "add", "MEMORY.md")
    again = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr  # re-staged: passes, nothing changed
    # How the docs say to pin a commit: `pre-commit autoupdate` writes main's head commit id.
    pinned = subprocess.run(
        [pre_commit, "autoupdate"], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    rev = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())["repos"][0]["rev"]
    assert rev == _git(upstream, "rev-parse", "main").stdout.strip() and re.fullmatch(r"[0-9a-f]{40}", rev)


def test_the_post_merge_hook_ships_too() -> None:
    assert hook_script("post-merge") == (REPO / "hooks" / "post-merge").read_text("utf-8")
    assert os.access(REPO / "hooks" / "post-merge", os.X_OK)
