"""Child process that forks crash victims: each forked child appends tagged turns until it is killed.

    fork_appender.py STORE SESSION

Importing pydantic-ai and loading the tokenizer take most of a second; forking from a warm parent makes
each kill -9 cycle cost milliseconds, so the suite can afford dozens of real kills. Protocol on stdout,
one line each: `ready`; then per round number read from stdin: `pid P`, any number of
`ack SEQ ROUND I` (the commit is fsynced; printed only after append returned), and `dead P` once the
victim is reaped, so every ack it managed to print precedes `dead`.
"""

from __future__ import annotations

import os
import sys

from helpers.messages import tagged_turn
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.porcelain.store import SessionStore


def victim(root: str, name: str, rnd: int) -> None:
    session = SessionStore.open(root).session(name)  # a fresh open, like a restarted program
    i = 0
    while True:
        commit = session.append(tagged_turn(rnd, i, size=1 + i % 3))
        os.write(1, f"ack {commit.seq} {rnd} {i}\n".encode())
        i += 1


def main() -> None:
    root, name = sys.argv[1], sys.argv[2]
    estimate_messages(tagged_turn(0, 0))  # warm the tokenizer and pydantic-ai before forking
    print("ready", flush=True)
    for line in sys.stdin:
        rnd = int(line)
        pid = os.fork()
        if pid == 0:
            try:
                victim(root, name, rnd)
            finally:
                os._exit(1)
        print(f"pid {pid}", flush=True)
        os.waitpid(pid, 0)
        print(f"dead {pid}", flush=True)


if __name__ == "__main__":
    main()
