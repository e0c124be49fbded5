"""Child process: pull and stop itself (SIGSTOP) mid-batch, after the lines of AFTER sessions of a group
are appended (not yet synced) and before the next session's are.

    stop_mid_batch.py STORE AFTER

Prints `stopping NAME` (the session whose lines would come next) before it stops, so the parent can
kill -9 it exactly there: some sessions of the group have their lines written, the rest have nothing,
no sync of the group's logs has run and no checkpoint ref of the group is written.
"""

from __future__ import annotations

import os
import signal
import sys

from sessionstore.porcelain.sharing import pull as pulling
from sessionstore.porcelain.sharing import remote_commits
from sessionstore.porcelain.store import SessionStore

_append = remote_commits.append_verified


def main() -> None:
    store = SessionStore.open(sys.argv[1], create=False)
    after = int(sys.argv[2])
    done: list[str] = []

    def stopping(log, parent, lines, **kw):  # type: ignore[no-untyped-def]
        if len(done) == after:
            print(f"stopping {log.session}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        done.append(log.session)
        return _append(log, parent, lines, **kw)

    remote_commits.append_verified = stopping  # type: ignore[assignment]
    pulling.pull(store)
    print("not stopped", flush=True)


if __name__ == "__main__":
    main()
