"""Child process for races with a pull: it imports everything, prints `ready`, waits for a line on
stdin (so two children can be let go at chosen instants), then does its job.

    pull_child.py STORE pull                        one line per session: NAME STATUS COMMITS INTO,
                                                    or `error MESSAGE` when the pull raised a refusal
    pull_child.py STORE append NAME WRITER COUNT    `appender.py` with `retry`: `ready`, then each
                                                    acknowledged seq
    pull_child.py STORE fork                        per line read: forks a pull (warm: it starts at
                                                    once), prints `pid P`, reaps it, prints `dead P`
"""

from __future__ import annotations

import os
import sys

from helpers import appender
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.store import SessionStore


def main() -> None:
    root, job = sys.argv[1], sys.argv[2]
    store = SessionStore.open(root)
    print("ready", flush=True)
    sys.stdin.readline()
    if job == "fork":
        while sys.stdin.readline():
            pid = os.fork()
            if pid == 0:
                pull(store)
                os._exit(0)
            print(f"pid {pid}", flush=True)
            os.waitpid(pid, 0)
            print(f"dead {pid}", flush=True)
        return
    if job == "append":
        sys.argv = [sys.argv[0], root, *sys.argv[3:6], "retry"]
        appender.main()
        return
    try:
        outcomes = pull(store)
    except SessionStoreError as err:
        print(f"error {err}", flush=True)
        return
    for o in outcomes:
        print(o.name, o.status.replace(" ", "-"), o.commits, o.into or "-", flush=True)


if __name__ == "__main__":
    main()
