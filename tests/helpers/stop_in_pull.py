"""Child process: pull and stop itself (SIGSTOP) just after the first session's lines are appended.

    stop_in_pull.py STORE

The lines are durable; the checkpoint refs and the refs the pull writes when it ends are not written
yet: the process stops there, so the parent can kill -9 it exactly there, as a crash would.
"""

from __future__ import annotations

import os
import signal
import sys

from sessionstore.porcelain.sharing import pull as pulling
from sessionstore.porcelain.sharing import remote_commits
from sessionstore.porcelain.store import SessionStore

_ensure = remote_commits.ensure_checkpoint_refs


def _stop_first(store: SessionStore, name: str, commits: object = None) -> list[int]:
    print(f"stopping {name}", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    return _ensure(store, name, commits)  # type: ignore[arg-type]


def main() -> None:
    store = SessionStore.open(sys.argv[1], create=False)
    remote_commits.ensure_checkpoint_refs = _stop_first  # type: ignore[assignment]
    pulling.pull(store)
    print("not stopped", flush=True)


if __name__ == "__main__":
    main()
