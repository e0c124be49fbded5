"""Child process: hold one session's lock until stdin closes, printing `locked` once it has it.

hold_lock.py STORE SESSION
"""

from __future__ import annotations

import sys

from sessionstore.porcelain.store import SessionStore


def main() -> None:
    store = SessionStore.open(sys.argv[1])
    with store.lock(sys.argv[2]):
        print("locked", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
