"""The store owns its settings (DESIGN §5, §10): Python and the CLI read the same values for a store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sessionstore.accounting.settings import Settings
from sessionstore.porcelain.session.layout import (
    GITATTRIBUTES,
    default_root,
    load_settings,
    locate_root,
    project_pyproject,
)
from sessionstore.porcelain.store import SessionStore


def _project(tmp_path: Path, table: str) -> Path:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.sessionstore]\n{table}\n")
    (project / "src" / "pkg").mkdir(parents=True)
    return project


def test_default_root_honours_sessionstore_dir(tmp_path: Path) -> None:
    assert (
        default_root(tmp_path, env={"SESSIONSTORE_DIR": str(tmp_path / "elsewhere")})
        == tmp_path / "elsewhere"
    )
    (tmp_path / ".git").mkdir()
    assert default_root(tmp_path / "a" / "b", env={}) == tmp_path.resolve() / ".sessions"


def test_outside_git_the_nearest_store_above_is_found_and_git_stops_the_search(tmp_path: Path) -> None:
    if any((d / ".git").exists() or (d / ".sessions").exists() for d in tmp_path.parents):
        pytest.skip(f"a .git or .sessions above {tmp_path} would be found first")
    SessionStore.open(tmp_path / ".sessions")
    (tmp_path / "a" / "b").mkdir(parents=True)
    found = locate_root(tmp_path / "a" / "b", env={})
    assert found.path == tmp_path.resolve() / ".sessions" and "nearest .sessions/" in found.where
    (tmp_path / "a" / ".git").mkdir()  # a repository below the store: its top level is the store's place
    assert default_root(tmp_path / "a" / "b", env={}) == tmp_path.resolve() / "a" / ".sessions"


def test_open_loads_the_stores_project_settings_not_defaults(tmp_path: Path) -> None:
    project = _project(tmp_path, "context_window_tokens = 4000\nkeep_recent_tokens = 500")
    store = SessionStore.open(project / ".sessions")
    assert store.settings.context_window_tokens == 4000
    assert store.settings.sources()["keep_recent_tokens"].startswith("pyproject.toml")


def test_the_stores_project_wins_over_the_current_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path, "context_window_tokens = 4000")
    other = _project(tmp_path / "other", "context_window_tokens = 9000")
    monkeypatch.chdir(other)
    assert SessionStore.open(project / ".sessions").settings.context_window_tokens == 4000
    # a store outside any project takes the project of the current directory
    outside = tmp_path / "outside" / "store"
    assert project_pyproject(outside) == other / "pyproject.toml"
    assert SessionStore.open(outside).settings.context_window_tokens == 9000


def test_environment_then_explicit_settings_then_overrides(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path, "context_window_tokens = 4000")
    monkeypatch.setenv("SESSIONSTORE_CONTEXT_WINDOW_TOKENS", "5000")
    assert SessionStore.open(project / ".sessions").settings.context_window_tokens == 5000
    opened = SessionStore.open(project / ".sessions", overrides={"context_window_tokens": 6000})
    assert opened.settings.context_window_tokens == 6000
    explicit = SessionStore.open(project / ".sessions", settings=Settings(context_window_tokens=7000))
    assert explicit.settings.context_window_tokens == 7000
    assert load_settings(project / ".sessions").context_window_tokens == 5000


def test_init_writes_gitattributes_so_git_never_converts_blobs(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s")
    assert (store.root / ".gitattributes").read_bytes() == GITATTRIBUTES == b"* -text\n"
    assert (store.root / ".gitignore").read_bytes() == b"locks/\nindex/\n"


TOUR = textwrap.dedent(
    """
    import json
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from sessionstore import SessionStore
    from sessionstore.integrations.runs import run_turn

    def reply(messages, info):
        return ModelResponse(parts=[TextPart("ok " + "word " * 300)])

    store = SessionStore.open()
    session = store.session("fix-auth")
    agent = Agent(FunctionModel(reply))
    for i in range(10):
        run_turn(session, agent, f"step {i}: " + "detail " * 200)
    kinds = [c.kind for c in session.log()]
    print(json.dumps({"root": str(store.root), "window": store.settings.context_window_tokens,
                      "kinds": kinds, "tokens": session.tokens}))
    """
)


def test_the_readme_tour_honours_pyproject_and_environment_from_a_subdirectory(tmp_path: Path) -> None:
    """The issue-9 bug: with a 4,000-token window in pyproject.toml, ten run_turn calls compact."""
    project = _project(tmp_path, "context_window_tokens = 4000")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTORE_")}
    done = subprocess.run(
        [sys.executable, "-c", TOUR], cwd=project / "src" / "pkg", env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["window"] == 4000 and Path(out["root"]) == project.resolve() / ".sessions"
    assert "compaction" in out["kinds"] and out["tokens"] <= 4000, out
    # the environment's store wins, for Python as for the CLI
    env["SESSIONSTORE_DIR"] = str(tmp_path / "envstore")
    done = subprocess.run(
        [sys.executable, "-c", TOUR], cwd=project / "src" / "pkg", env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(json.loads(done.stdout)["root"]) == tmp_path / "envstore"


@pytest.mark.parametrize("where", ["inside", "elsewhere"])
def test_cli_config_reads_the_named_stores_project(tmp_path: Path, where: str) -> None:
    project = _project(tmp_path, "context_window_tokens = 4000")
    other = _project(tmp_path / "other", "context_window_tokens = 9000")
    cwd = project if where == "inside" else other
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTORE_")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "session"), "--store", str(project / ".sessions"), "config",
         "--json"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["context_window_tokens"]["value"] == 4000
