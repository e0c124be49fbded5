"""Child process: hold one session's lock until stdin closes, printing `locked` once it has it.

hold_lock.py STORE SESSION [append]

With `append`, it commits one turn (tagged writer 9) to the session before it lets the lock go: what
another writer does while a command waits for the lock.
"""

from __future__ import annotations

import sys

from helpers.messages import tagged_turn
from sessionstore.porcelain.store import SessionStore


def main() -> None:
    store = SessionStore.open(sys.argv[1])
    session = store.session(sys.argv[2]) if "append" in sys.argv[3:] else None
    with store.lock(sys.argv[2]):
        print("locked", flush=True)
        sys.stdin.read()
        if session is not None:
            session.commit_turn(tagged_turn(9, 0))


if __name__ == "__main__":
    main()
