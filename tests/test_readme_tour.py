"""The README's "From the shell" tour, run as written: each line of its shell block, in order, in bash,
with the installed `session`, in a git clone that has an `origin` remote and the two files the tour
names (`transcript.jsonl`, a real Claude Code transcript; `taubench.json`, three real tau-bench
records), and a home whose Claude Code and Codex directories hold this project's transcripts (real ones).

Every line must succeed, but the chat line, which needs an OpenAI key: without one it must say so in
one line (exit 2), naming the variable and the offline models.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.gitrepos import bare_remote, git, git_env
from helpers.realdata import MISSING
from helpers.transcript_checks import CODEMIE, CODEX, SPOTTER
from sessionstore.porcelain.importing.transcript_locations import claude_code_dir
from sessionstore.porcelain.store import SessionStore

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TAUBENCH = CODEMIE.parents[1] / "trajectories" / "taubench_gpt-4o-airline.json"
NEEDS_A_KEY = "session chat fix-auth --model openai:gpt-4o"


def tour() -> list[str]:
    """The commands of the README's "### From the shell" block, comments cut, in order."""
    text = (REPO / "README.md").read_text("utf-8")
    block = text[text.index("### From the shell") :].split("\n\n")[1]
    lines = [line[4:] for line in block.splitlines()]
    assert all(line.startswith("session ") or line.startswith("eval ") for line in lines), lines
    return [re.split(r"\s+# ", line, maxsplit=1)[0].strip() for line in lines]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    """(a clone to run the tour in, the environment to run it with)."""
    if not all(source.is_file() for source in (CODEMIE, CODEX, SPOTTER, TAUBENCH)):
        pytest.skip(MISSING)  # a fixture's error is not the test's: conftest's hook does not see it
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir()
    env = git_env(HOME=str(home), NO_COLOR="1", PATH=f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for key in [
        k for k in env if k.startswith(("SESSIONSTORE_", "CLAUDE_", "CODEX_")) or k.endswith("_API_KEY")
    ]:
        del env[key]
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True, env=env)
    git(project, "remote", "add", "origin", bare_remote(tmp_path / "origin.git"))
    shutil.copy(SPOTTER, project / "transcript.jsonl")
    records = json.loads(TAUBENCH.read_text())[:3]  # three real records: the import is what is shown
    (project / "taubench.json").write_text(json.dumps(records))
    # This project's transcripts where Claude Code and Codex keep them (`import --claude-code --codex`).
    claude = claude_code_dir(project.resolve(), {"CLAUDE_CONFIG_DIR": str(home / ".claude")})
    assert claude.is_relative_to(home)
    claude.mkdir(parents=True)
    shutil.copy(CODEMIE, claude / "3fe1b6bc-dbd0-4320-b980-4f147befa187.jsonl")
    codex = home / ".codex" / "sessions" / "2026" / "05" / "11"
    codex.mkdir(parents=True)
    lines = [json.loads(line) for line in CODEX.read_text().splitlines() if line.strip()]
    lines[0]["payload"]["cwd"] = str(project.resolve())  # session_meta: the rollout ran in this project
    (codex / CODEX.name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return project, env


@pytest.mark.slow
def test_the_readme_tour_runs_as_written(project: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    cwd, env = project
    commands = tour()
    assert NEEDS_A_KEY in commands
    out = tmp_path / "out"
    out.mkdir()
    script = "".join(
        f'( {command}\n) >"{out}/{i}.out" 2>"{out}/{i}.err" </dev/null; echo $? >"{out}/{i}.rc"\n'
        for i, command in enumerate(commands)
    )
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    for i, command in enumerate(commands):
        rc = int((out / f"{i}.rc").read_text())
        err = (out / f"{i}.err").read_text()
        if command == NEEDS_A_KEY:
            assert rc == 2 and err.count("\n") == 1, (command, err)
            assert "set OPENAI_API_KEY in the environment" in err and "--model test" in err
            continue
        assert rc == 0, (command, rc, err, (out / f"{i}.out").read_text()[-2000:])
        assert "Traceback" not in err, (command, err)
    said = {command: (out / f"{i}.out").read_text() for i, command in enumerate(commands)}
    assert "as fix-auth: 14 turns" in said["session import --example"]
    assert "3fe1b6bc-dbd0-4320-b980-4f147befa187" in said["session import --claude-code --codex"]
    assert said["session show 3fe1b6bc"].startswith("bde1638 3fe1b6bc-dbd0-4320-b980-4f147befa187@9 ")
    assert "fix-auth@" in said["session search 'expired.token' --role tool"]
    assert said["session checkout fix-auth@12"].startswith("fix-auth: head is now ")
    store = SessionStore.open(cwd / ".sessions", create=False)
    assert {"fix-auth", "review", "spike", "cc-metrics"} <= set(store.sessions())
    assert [c.kind for c in store.log("fix-auth").scan(since_reset=False)[0][-2:]] == [
        "compaction",
        "checkout",
    ]
    assert (cwd / "f.html").read_text().startswith("<!doctype html>")
    assert git(cwd, "ls-remote", "origin", "refs/sessions/fix-auth").strip()  # pushed
