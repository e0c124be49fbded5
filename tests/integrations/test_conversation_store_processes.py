"""FileConversationStore across real processes: the revision check holds, kill -9 loses no saved turn.

Acknowledged means the child printed `ack` after `save` returned, i.e. after the commit line was
fsynced. A kill can also land after the sync and before the print, so one unacknowledged turn per victim
may be present, never the other way round.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from helpers.conversations import prompts, run_turn
from helpers.procs import spawn
from sessionstore.integrations.conversation_store import FileConversationStore, session_name

KILLS = 12


@pytest.mark.slow
def test_two_processes_save_the_same_loaded_conversation_exactly_one_wins(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = FileConversationStore(root)

    async def seed() -> None:
        await store.save(await run_turn(Conversation(conversation_id="shared"), "first"))

    asyncio.run(seed())
    racers = [spawn("conversation_saver.py", "race", root, "shared", stdin=subprocess.PIPE) for _ in range(2)]
    for racer in racers:
        assert racer.stdout and racer.stdout.readline().strip() == "loaded"
    for racer in racers:  # both loaded the same revision before either saves
        assert racer.stdin
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = sorted(racer.stdout.readline().strip() for racer in racers if racer.stdout)
    for racer in racers:
        assert racer.wait(timeout=30) == 0
    assert outcomes == ["conflict", "saved"]
    loaded = asyncio.run(FileConversationStore(root).load("shared"))
    assert loaded is not None
    said = prompts(loaded)
    assert len(said) == 2 and said[0] == "first" and said[1].startswith("racer ")  # one winner, whole
    assert len(loaded.messages) == 4
    assert store.store.session(session_name("shared")).history == loaded.messages
    assert store.store.fsck().ok


@pytest.mark.slow
def test_kill_9_during_saves_loses_no_acknowledged_save(tmp_path: Path) -> None:
    root = tmp_path / "store"
    FileConversationStore(root)
    rng = random.Random(4321)
    server = spawn("conversation_saver.py", "crash", root, "victim", stdin=subprocess.PIPE)
    assert server.stdin and server.stdout
    assert server.stdout.readline().strip() == "ready"
    acked: list[str] = []
    try:
        for rnd in range(KILLS):
            server.stdin.write(f"{rnd}\n")
            server.stdin.flush()
            kind, pid = server.stdout.readline().split()
            assert kind == "pid"
            while True:  # let a few saves through, then strike at a random instant
                _, r, i = server.stdout.readline().split()
                acked.append(f"{r} {i}")
                if rng.random() < 0.4:
                    break
            time.sleep(rng.uniform(0, 0.004))
            os.kill(int(pid), signal.SIGKILL)
            while (line := server.stdout.readline().split())[0] != "dead":
                acked.append(f"{line[1]} {line[2]}")
            loaded = asyncio.run(FileConversationStore(root).load("victim"))
            assert loaded is not None
            said = prompts(loaded)
            # Every acknowledged save is there, in order; at most one unacknowledged save per round.
            assert [p for p in said if p in set(acked)] == acked
            assert len(said) - len(acked) <= rnd + 1
            report = FileConversationStore(root).store.fsck()
            assert all("torn last line" in p for p in report.problems), report.problems
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    store = FileConversationStore(root)
    store.store.fsck(repair=True)
    assert store.store.fsck().ok
    final = asyncio.run(store.load("victim"))
    assert final is not None and store.store.session("victim").history == final.messages
    assert len(acked) >= KILLS
