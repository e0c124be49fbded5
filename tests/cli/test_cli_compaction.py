"""`session demo`, `session compact` and `session end` through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.messages import tagged_turn
from sessionstore import SessionStore
from sessionstore.cli.main import cli
from sessionstore.compaction.turns import pairs_intact


def run(*args: str, store: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--store", str(store), *args])
    return result.exit_code, result.stdout, result.stderr


def test_demo_fires_every_tier_and_ends_with_the_log(tmp_path: Path) -> None:
    code, out, err = run("demo", store=tmp_path / "s")
    assert code == 0, err
    assert "[tier 1 view]" in out or "tier 1:" in out
    assert "tier 2:" in out and "tier 3:" in out
    assert "$ session log demo --oneline" in out
    assert "compaction tier 2" in out and "compaction tier 3" in out
    session = SessionStore.open(tmp_path / "s", create=False).session("demo")
    assert pairs_intact(session.history)
    assert SessionStore.open(tmp_path / "s").fsck().ok
    last_turn = next(line for line in reversed(out.splitlines()) if line.startswith("turn "))
    code, gauge_line, _ = run("gauge", "demo", "--plain", store=tmp_path / "s")
    assert code == 0 and gauge_line.strip() in last_turn, "the CLI gauge reads the window the demo ran with"
    code, out, _ = run("demo", store=tmp_path / "s")
    assert code == 0 and "session 'demo-2'" in out, "a second demo never overwrites the first"


def test_compact_prints_the_checkpoint_and_refuses_unknown_sessions(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert run("demo", "--name", "d", store=store)[0] == 0
    code, out, _ = run("compact", "d", "--focus", "restock", store=store)
    assert code == 0 and "compaction tier 2 [checkpoints/d/" in out
    code, _, err = run("compact", "dd", store=store)
    assert code == 2 and err.strip() == "session: no session 'dd'; did you mean 'd'?"


def test_compact_on_a_busy_session_changes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert run("demo", "--name", "d", store=store)[0] == 0
    log = (store / "logs" / "d.jsonl").read_bytes()
    hold = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); "
        "print('held', flush=True); time.sleep(30)"
    )
    lock = str(store / "locks" / "d.lock")
    holder = subprocess.Popen([sys.executable, "-c", hold, lock], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        env = {"SESSIONSTORE_LOCK_TIMEOUT_S": "0.3"}
        result = CliRunner().invoke(cli, ["--store", str(store), "compact", "d"], env=env)
        assert result.exit_code == 2
        assert "busy" in result.stderr and "nothing changed" in result.stderr
        assert (store / "logs" / "d.jsonl").read_bytes() == log
    finally:
        holder.kill()
        holder.wait()


def test_end_appends_a_bullet_to_memory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    store = repo / ".sessions"
    assert run("demo", "--name", "fix-restock", store=store)[0] == 0
    code, out, err = run("end", "fix-restock", store=store)
    assert code == 0, err
    assert "no " in out and "MEMORY.md" in out, "without a MEMORY.md nothing is written"
    assert not (repo / "MEMORY.md").exists()
    (repo / "MEMORY.md").write_text("# Project memory\n\n## Session notes\n")
    code, out, err = run("end", "fix-restock", store=store)
    assert code == 0, err
    text = (repo / "MEMORY.md").read_text()
    assert "fix-restock:" in text


@pytest.mark.parametrize("focus", ["", "   ", "\t\n"])
def test_compact_refuses_an_empty_focus_and_writes_nothing(tmp_path: Path, focus: str) -> None:
    root = tmp_path / "s"
    SessionStore.open(root).session("d").append(tagged_turn(0, 0))
    before = {
        p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and "locks" not in p.parts
    }
    code, out, err = run("compact", "d", "--focus", focus, store=root)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--focus is empty" in err and "leave --focus out" in err
    after = {
        p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and "locks" not in p.parts
    }
    assert after == before
