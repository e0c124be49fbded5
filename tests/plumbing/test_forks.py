"""plumbing/forks.py: a fork waits for a background step in progress, and children get fresh state.

Each case runs in a fresh interpreter (a fork of the test process would copy pytest's own threads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no "Exception ignored" from a half-run fork hook
    return done.stdout


def test_a_fork_waits_for_the_quiet_step_in_progress_and_the_child_can_take_it() -> None:
    out = run(
        """
        import os, threading, time
        from sessionstore.plumbing import forks
        forks.guard()
        inside, finished = threading.Event(), threading.Event()
        def step():
            with forks.quiet():
                inside.set()
                time.sleep(0.3)
                finished.set()
        threading.Thread(target=step).start()
        inside.wait()
        pid = os.fork()
        if pid == 0:
            with forks.quiet():  # the parent's thread is gone; its lock must not be
                os._exit(0 if finished.is_set() else 3)
        print("parent saw the step finished:", finished.is_set())
        print("child exit:", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """
    )
    assert out.split("\n")[:2] == ["parent saw the step finished: True", "child exit: 0"]


def test_in_child_runs_in_the_child_only() -> None:
    out = run(
        """
        import os
        from sessionstore.plumbing import forks
        ran = []
        forks.in_child(lambda: ran.append(os.getpid()))
        pid = os.fork()
        if pid == 0:
            os._exit(0 if ran == [os.getpid()] else 3)
        print(ran, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """
    )
    assert out.strip() == "[] 0"


def test_a_child_gets_a_new_blob_writer_whose_thread_runs() -> None:
    """The blob writer's pool of a parent that wrote is not the child's: the child's write lands."""
    out = run(
        """
        import os, tempfile
        from sessionstore.plumbing.objects import ObjectStore
        from pathlib import Path
        objects = ObjectStore(Path(tempfile.mkdtemp()))
        objects.write_in_background(b"parent").result()
        pid = os.fork()
        if pid == 0:
            oid = objects.write_in_background(b"child").result()
            os._exit(0 if objects.read(oid) == b"child" else 3)
        import time
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("child exit:", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.01)
        else:
            os.kill(pid, 9)
            print("child hung")
        """
    )
    assert out.strip() == "child exit: 0"
