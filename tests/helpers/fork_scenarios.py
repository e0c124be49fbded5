"""Child process: a parent that opened a store (and appended) forks or spawns children that append.

    fork_scenarios.py MODE STORE

MODE is one of
- `mp-fork`, `mp-spawn`: `multiprocessing` with that start method; the parent appends, starts
  `CHILDREN` processes, and appends on while they run;
- `preload`: as gunicorn `--preload` does, the parent opens the store and appends, then `os.fork`s
  workers that use the parent's very `SessionStore` and `Session` objects;
- `open-then-fork`: the parent forks while `SessionStore.open`'s warm-up thread is still importing
  and loading the tokenizer (children at staggered delays from 0 to 400 ms after the open).

Writer 0 is the parent, 1..CHILDREN the children. Every writer appends `TURNS` tagged turns to its own
session `w<N>` and `TURNS` to the session `shared` (retrying on `StaleSessionError`, as concurrent
writers must). A child that has not finished within `DEADLINE` seconds is killed and counted as hung.
Prints one line, `ok` or `hung <writers>` / `failed <writers>`, and exits 0 only on `ok`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time

from sessionstore.errors import StaleSessionError
from sessionstore.porcelain.store import SessionStore

CHILDREN = 3
TURNS = 5
DEADLINE = 60.0
_store: SessionStore | None = None
"""The parent's store, inherited by forked children (gunicorn's preloaded application object)."""


def append_turns(store: SessionStore, writer: int, shared: object = None, *, written: int = 0) -> None:
    """`TURNS` turns to `w<writer>` (less the first `written`, already there) and `TURNS` to `shared`
    (the given Session, else a new one)."""
    from helpers.messages import tagged_turn  # here, not at the top: pydantic-ai is imported by the
    # store's warm-up thread (or the first write), as in a program that only imports sessionstore

    own = store.session(f"w{writer}")
    common = shared if shared is not None else store.session("shared")
    for i in range(TURNS):
        if i >= written:
            own.append(tagged_turn(writer, i))
        while True:
            try:
                common.append(tagged_turn(writer, i))  # type: ignore[attr-defined]
                break
            except StaleSessionError:
                common.reload()  # type: ignore[attr-defined]


def child(root: str, writer: int) -> None:
    """A `multiprocessing` child: the inherited store when forked, a fresh open when spawned."""
    append_turns(_store if _store is not None else SessionStore.open(root), writer)


def with_multiprocessing(root: str, method: str) -> list[int]:
    global _store
    from helpers.messages import tagged_turn

    _store = SessionStore.open(root)
    _store.session("w0").append(tagged_turn(0, 0))  # the blob writer's thread is running now
    context = multiprocessing.get_context(method)
    procs = [context.Process(target=child, args=(root, w)) for w in range(1, CHILDREN + 1)]
    for proc in procs:
        proc.start()
    append_turns(_store, 0, written=1)
    bad = []
    for w, proc in enumerate(procs, 1):
        proc.join(max(0.1, DEADLINE - (time.monotonic() - STARTED)))
        if proc.is_alive():
            proc.kill()
            proc.join()
            bad.append(f"hung:w{w}")
        elif proc.exitcode != 0:
            bad.append(f"failed:w{w}:{proc.exitcode}")
    return bad


def forked(run: object) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            run()  # type: ignore[operator]
            code = 0
        finally:
            os._exit(code)
    return pid


def reap(pids: dict[int, int]) -> list[str]:
    """Wait for each child pid (writer number as value) until the deadline; kill what is left."""
    bad = []
    while pids and time.monotonic() - STARTED < DEADLINE:
        for pid, writer in list(pids.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del pids[pid]
                if os.waitstatus_to_exitcode(status) != 0:
                    bad.append(f"failed:w{writer}")
        time.sleep(0.02)
    for pid, writer in pids.items():
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        bad.append(f"hung:w{writer}")
    return bad


def with_preload(root: str) -> list[str]:
    from helpers.messages import tagged_turn

    store = SessionStore.open(root)
    shared = store.session("shared")
    store.session("w0").append(tagged_turn(0, 0))
    pids = {forked(lambda w=w: append_turns(store, w, shared)): w for w in range(1, CHILDREN + 1)}
    append_turns(store, 0, shared, written=1)
    return reap(pids)


def open_then_fork(root: str) -> list[str]:
    store = SessionStore.open(root)  # starts the warm-up thread: imports, serializers, tokenizer
    pids = {}
    for w, delay in enumerate((0.0, 0.002, 0.01, 0.03, 0.06, 0.1, 0.2, 0.4), 1):
        time.sleep(max(0.0, delay - (time.monotonic() - OPENED)))
        pids[forked(lambda w=w: append_turns(store, w))] = w
    append_turns(store, 0)
    return reap(pids)


STARTED = OPENED = time.monotonic()


def main() -> None:
    global STARTED, OPENED
    mode, root = sys.argv[1], sys.argv[2]
    STARTED = OPENED = time.monotonic()
    if mode in ("mp-fork", "mp-spawn"):
        bad = with_multiprocessing(root, mode[3:])
    elif mode == "preload":
        bad = with_preload(root)
    else:
        bad = open_then_fork(root)
    print("ok" if not bad else " ".join(bad), flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
