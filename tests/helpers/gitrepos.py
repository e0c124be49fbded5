"""Real git repositories for the sharing tests: a bare remote over file:// and clones of it.

Every git process of a test sees only this configuration (no system or global config), so a
developer's aliases, hooks or `core.autocrlf` cannot change what the tests prove.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionstore import SessionStore

ISOLATED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}


def git_env(**extra: str) -> dict[str, str]:
    """This process's environment with `ISOLATED` applied and this interpreter's bin directory first on
    PATH, so the `session` that git runs (a hook, the merge driver) is the one under test."""
    env = dict(os.environ)
    env.update(ISOLATED)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("SESSIONSTORE_DIR", None)
    env.update(extra)
    return env


def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ISOLATED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SESSIONSTORE_DIR", raising=False)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def bare_remote(path: Path) -> str:
    """A bare repository at `path`; returns its file:// URL."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path.resolve().as_uri()


def clone(path: Path, url: str) -> SessionStore:
    """A work tree at `path` with `origin` = `url`, and an empty session store in it."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    git(path, "remote", "add", "origin", url)
    return SessionStore.open(path / ".sessions")


def two_clones(base: Path, sessions: int = 0) -> tuple[SessionStore, SessionStore, list[str]]:
    """(alice, bob, names): two clones (`base/alice`, `base/bob`) of a bare remote `base/origin.git`,
    alice holding `sessions` sessions (`names`: s00, s01, ...) of one turn each, not pushed yet."""
    from helpers.messages import tagged_turn

    url = bare_remote(base / "origin.git")
    alice, bob = clone(base / "alice", url), clone(base / "bob", url)
    names = [f"s{i:02d}" for i in range(sessions)]
    for name in names:
        alice.session(name).append(tagged_turn(0, 0))
    return alice, bob, names


def apart_clones(base: Path, name: str) -> tuple[str, SessionStore, SessionStore]:
    """(url, alice, bob): two clones of a bare remote `base/origin.git` that shared session `name`
    (one turn), then each added a turn to it; alice pushed hers, so bob's next pull diverges."""
    from helpers.messages import tagged_turn
    from sessionstore.porcelain.sharing.pull import pull
    from sessionstore.porcelain.sharing.push import push

    url = bare_remote(base / "origin.git")
    alice, bob = clone(base / "alice", url), clone(base / "bob", url)
    alice.session(name).append(tagged_turn(0, 0))
    push(alice)
    pull(bob)
    alice.session(name).append(tagged_turn(0, 1))
    bob.session(name).append(tagged_turn(1, 0))
    push(alice)
    return url, alice, bob


def store_files(store: SessionStore) -> dict[str, bytes]:
    """Logs, refs and objects of a store with their bytes (locks and metadata left out)."""
    out = {}
    for sub in ("logs", "refs", "objects"):
        for p in sorted((store.root / sub).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(store.root))] = p.read_bytes()
    return out
