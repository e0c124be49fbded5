"""`session demo`, `session compact` and `session end` through the CLI."""

from __future__ import annotations

import os
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


def test_demo_fires_every_tier_and_ends_with_gauge_log_and_export(tmp_path: Path) -> None:
    code, out, err = run("demo", store=tmp_path / "s")
    assert code == 0, err
    assert "[tier 1 view]" in out or "tier 1:" in out
    assert "tier 2:" in out and "tier 3:" in out
    # It ends with what shows what happened (issue 28, item 14; was a 47-line `log --oneline`).
    ending = out.splitlines()[-12:]
    gauge = run("gauge", "demo", store=tmp_path / "s")[1].strip()
    log = run("log", "demo", "--oneline", "-n", "5", store=tmp_path / "s")[1].splitlines()
    assert ending == [
        "", "$ session gauge demo", gauge,
        "", "$ session log demo --oneline -n 5", *log,
        "", "$ session export demo --format html > demo.html   # the page: transcript and chart",
    ]  # fmt: skip
    assert "(head)" in log[0] and len(log) == 5
    session = SessionStore.open(tmp_path / "s", create=False).session("demo")
    tiers = {c.tier for c in session.log() if c.kind == "compaction"}
    assert {2, 3} <= tiers
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


@pytest.mark.parametrize("command", [["compact", "d"], ["checkout", "d@2"]])
def test_a_command_that_waited_for_another_writer_works_on_what_it_wrote(
    tmp_path: Path, command: list[str]
) -> None:
    # issue 28, item 7: `session compact` waited for a writer's lock, then told the shell user to call
    # `store.session(name)`. A command names a session, not the head it read first: it reads it again.
    from helpers.procs import spawn

    root = tmp_path / "s"
    session = SessionStore.open(root).session("d")
    for i in range(3):
        session.append(tagged_turn(0, i, size=4))
    holder = spawn("hold_lock.py", root, "d", "append", stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        env = {**os.environ, "SESSIONSTORE_LOCK_TIMEOUT_S": "60"}
        cli_proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("session")), "--store", str(root), *command],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert cli_proc.stderr is not None
        waiting = cli_proc.stderr.readline()
        assert "is locked by pid" in waiting and "waiting up to" in waiting
        assert holder.stdin is not None
        holder.stdin.close()  # the holder commits its turn, then lets the lock go
        out, err = cli_proc.communicate(timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert cli_proc.returncode == 0, err
    assert "store.session" not in err and err == ""
    assert ("compaction tier 2 [checkpoints/d/1]" if command[0] == "compact" else "d: head is now") in out
    log = SessionStore.open(root, create=False).session("d").log()
    assert [c.kind for c in log[:2]] == [command[0] if command[0] == "checkout" else "compaction", "turn"]
    assert log[1].seq == 4  # the other writer's turn came first, and is kept
