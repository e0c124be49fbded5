"""Child process that forks crash victims: each forked child appends tagged turns until it is killed.

    fork_appender.py STORE SESSION [compact]

With `compact`, the store has a window of 300 tokens, so the cascade compacts every few turns and the
kills land in compactions too.

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
from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.porcelain.store import SessionStore

SMALL = {"context_window_tokens": 300, "keep_recent_tokens": 50, "micro_keep_recent_tokens": 20}


def victim(root: str, name: str, rnd: int, compact: bool) -> None:
    settings = Settings(**SMALL) if compact else None
    session = SessionStore.open(root, settings=settings).session(name)  # a fresh open, like a restart
    i = 0
    while True:
        commit = session.append(tagged_turn(rnd, i, size=1 + i % 3))
        os.write(1, f"ack {commit.seq} {rnd} {i}\n".encode())
        i += 1


def main() -> None:
    root, name, compact = sys.argv[1], sys.argv[2], "compact" in sys.argv[3:]
    estimate_messages(tagged_turn(0, 0))  # warm the tokenizer and pydantic-ai before forking
    print("ready", flush=True)
    for line in sys.stdin:
        rnd = int(line)
        pid = os.fork()
        if pid == 0:
            try:
                victim(root, name, rnd, compact)
            finally:
                os._exit(1)
        print(f"pid {pid}", flush=True)
        os.waitpid(pid, 0)
        print(f"dead {pid}", flush=True)


if __name__ == "__main__":
    main()
