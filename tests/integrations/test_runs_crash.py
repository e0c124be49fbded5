"""A real kill -9 in the middle of a long agent run loses at most the request in flight (issue 10).

The child (helpers/run_agent.py) runs one 12-call loop of 1-8k-token tool outputs at a 16k window, so
it checkpoints mid-run; its FunctionModel prints `request K` on receiving request K. Every step before
request K was committed (fsynced) before that request was sent, so after the kill the stored history
must hold the tool return of step K-2 (0-based), whatever instant the kill struck.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from helpers.procs import spawn
from sessionstore import SessionStore
from sessionstore.compaction.turns import pairs_intact

CALLS = 12


def newest_return(history: list) -> int:
    """The index of the newest file whose tool return is stored (-1: none)."""
    for msg in reversed(history):
        if isinstance(msg, ModelRequest):
            for part in msg.parts:
                if isinstance(part, ToolReturnPart) and (m := re.match(r"<<file (\d+)>>", str(part.content))):
                    return int(m.group(1))
    return -1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_mid_run_loses_at_most_the_request_in_flight(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    target = rng.randint(3, CALLS)
    child = spawn("run_agent.py", tmp_path, "victim", CALLS, 0.02)
    assert child.stdout is not None
    seen = 0
    try:
        for line in child.stdout:
            if line.startswith("request "):
                seen = int(line.split()[1])
                if seen == target:
                    time.sleep(rng.uniform(0, 0.03))  # inside the request, or into the next step's commit
                    os.kill(child.pid, signal.SIGKILL)
                    break
    finally:
        child.kill()
        child.wait()
    assert seen == target, "the child died before the kill"
    s = SessionStore.open(tmp_path).session("victim")
    assert newest_return(s.history) >= target - 2, (target, newest_return(s.history))
    assert pairs_intact(s.history) and s.history[-1].kind == "request"
    assert any(
        getattr(p, "content", None) == "read every file and report" for m in s.history for p in m.parts
    ), "the user request is kept"
    assert SessionStore.open(tmp_path).session("victim").history == s.history
