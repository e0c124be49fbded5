"""Child process: append one turn to a session and stop itself (SIGSTOP) half-way through writing its
commit line, for the parent to kill -9 there: the crash tear DESIGN §2 describes, really on disk.

    stop_in_append.py STORE SESSION

The first half of the line is written to the log by a real `write(2)`; the process prints `stopping`
and stops before the rest (and before the fsync that would acknowledge it).
"""

from __future__ import annotations

import os
import signal
import sys

from helpers.messages import tagged_turn
from sessionstore.porcelain.store import SessionStore

_write = os.write


def main() -> None:
    store = SessionStore.open(sys.argv[1], create=False)
    session = store.session(sys.argv[2], create=False)
    log = str(store.log(session.name).path)

    def half_then_stop(fd: int, data: bytes) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") == os.path.realpath(log):
            _write(fd, bytes(data)[: len(data) // 2])
            print("stopping", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        return _write(fd, data)

    os.write = half_then_stop  # type: ignore[assignment]
    session.append(tagged_turn(9, 0), compact=False)
    print("not stopped", flush=True)


if __name__ == "__main__":
    main()
