"""Child process: one long agent run (helpers.long_runs) on a session, for the kill -9 test.

    run_agent.py STORE SESSION CALLS DELAY

Prints `request K` when the model receives its K-th request (the capability committed every earlier
step before sending it), then `done` after the run; the parent kills it at a random request.
"""

from __future__ import annotations

import sys

from helpers.long_runs import LongRun, long_run_agent
from sessionstore import SessionStore, Settings
from sessionstore.integrations.runs import run_turn


def main() -> None:
    root, name, calls, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    store = SessionStore.open(root, settings=Settings(context_window_tokens=16_000))
    body = LongRun([1_000 + (i * 977) % 7_000 for i in range(calls)], delay=delay, announce=True)
    run_turn(store.session(name), long_run_agent(body), "read every file and report")
    print("done", flush=True)


if __name__ == "__main__":
    main()
