"""Child process: append tagged turns to one session, printing each acknowledged seq (flushed).

    appender.py STORE SESSION WRITER COUNT [retry]

COUNT 0 means forever (until killed). With `retry`, a `StaleSessionError` reloads and retries the same
turn, as every concurrent writer must; without it, the error ends the process.
"""

from __future__ import annotations

import sys

from helpers.messages import tagged_turn
from sessionstore.errors import StaleSessionError
from sessionstore.porcelain.store import SessionStore


def main() -> None:
    root, name, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    retry = "retry" in sys.argv[5:]
    session = SessionStore.open(root).session(name)
    print("ready", flush=True)
    i = 0
    while count == 0 or i < count:
        try:
            commit = session.append(tagged_turn(writer, i, size=1 + i % 3))
        except StaleSessionError:
            if not retry:
                raise
            session.reload()
            continue
        print(commit.seq, flush=True)
        i += 1


if __name__ == "__main__":
    main()
