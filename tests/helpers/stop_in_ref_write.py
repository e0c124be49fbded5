"""Child process: checkpoint a session and stop itself (SIGSTOP) inside the checkpoint-ref write.

    stop_in_ref_write.py STORE SESSION

The ref's temp file is written and fsynced; the process stops just before linking it into place, so
the parent can kill -9 it exactly there, as a crash mid ref write would.
"""

from __future__ import annotations

import os
import signal
import sys

from pydantic_ai.messages import ModelRequest, UserPromptPart

from sessionstore.porcelain.store import SessionStore

_link = os.link


def _stop_before_a_ref_link(src: str, dst: str, *args: object, **kwargs: object) -> None:
    if f"{os.sep}refs{os.sep}checkpoints{os.sep}" in os.fspath(dst):
        print("stopping", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
    _link(src, dst, *args, **kwargs)  # type: ignore[arg-type]


def main() -> None:
    store = SessionStore.open(sys.argv[1], create=False)
    session = store.session(sys.argv[2], create=False)
    os.link = _stop_before_a_ref_link  # type: ignore[assignment]
    with store.lock(session.name):  # what a compaction does: commit line, then its ref
        session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("the summary")])], tier=2)
    print("not stopped", flush=True)


if __name__ == "__main__":
    main()
