"""Child process: `session rename` or `session rm` and `rm --undo`, in a loop until killed.

    naming_loop.py STORE NAME OTHER rename|rm

Runs the real commands (the `session` CLI's click group, in this process so that start-up is paid
once, before "ready", which it prints after a first whole cycle), CUR being whichever of NAME and
OTHER exists: `rename CUR NEXT` over and over, or `rm CUR` and `rm --undo CUR` over and over. A
command that refuses ends the process with its exit code (the parent's kill test then fails).
"""

from __future__ import annotations

import itertools
import os
import sys

from sessionstore.cli import naming_cmds  # noqa: F401  (imported now: the loop pays no import)
from sessionstore.cli.main import cli
from sessionstore.porcelain.store import SessionStore


def session(root: str, *args: str) -> None:
    try:
        cli.main(args=["--store", root, *args], prog_name="session", standalone_mode=False)
    except SystemExit as done:
        if done.code:
            raise


def main() -> None:
    root, names, mode = sys.argv[1], sys.argv[2:4], sys.argv[4]
    store = SessionStore.open(root, create=False)
    null = os.open(os.devnull, os.O_WRONLY)
    out = os.dup(1)
    os.dup2(null, 1)  # the commands' own output is not read
    for cycle in itertools.count():
        if cycle == 1:  # one whole cycle first: the lazy imports are behind, so any instant is an op's
            os.write(out, b"ready\n")
        cur = next(n for n in names if store.exists(n))
        nxt = names[1 - names.index(cur)]
        if mode == "rename":
            session(root, "rename", cur, nxt)
        else:
            session(root, "rm", cur)
            session(root, "rm", "--undo", cur)


if __name__ == "__main__":
    main()
