"""Child process: run `session memory append` (or `squash`) many times through the CLI's own entry point.

    memory_writer.py append FILE WRITER COUNT
    memory_writer.py squash FILE SECONDS
    memory_writer.py hold FILE

`append` adds COUNT bullets `w<WRITER>-<i>` to FILE, one `session memory append --file FILE` each, run
in this process by `sessionstore.cli.main.main` (a new interpreter per bullet would cost ~0.4 s each);
every call must exit 0, and `ok COUNT` is printed at the end. `squash` runs `session memory squash FILE`
over and over for SECONDS, as a pre-commit hook or the post-merge hook would during the appends.
`hold` takes FILE's memory lock, prints `locked`, and keeps it until stdin closes.
"""

from __future__ import annotations

import sys
import time

from sessionstore.cli.main import main as session


def run(*args: str) -> int:
    try:
        session(list(args))
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    return 0


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "append":
        writer, count = int(sys.argv[3]), int(sys.argv[4])
        for i in range(count):
            code = run("memory", "append", "--file", path, f"w{writer}-{i}", f"bullet w{writer}-{i} done")
            if code != 0:
                raise SystemExit(f"append w{writer}-{i} exited {code}")
        print(f"ok {count}", flush=True)
    elif mode == "hold":
        from pathlib import Path

        from sessionstore.memory.lock import memory_lock

        with memory_lock(Path(path), 10.0):
            print("locked", flush=True)
            sys.stdin.read()
    else:
        deadline = time.monotonic() + float(sys.argv[3])
        runs = 0
        while time.monotonic() < deadline:
            if run("memory", "squash", path) not in (0, 1):
                raise SystemExit("squash failed")
            runs += 1
        print(f"ok {runs}", flush=True)


if __name__ == "__main__":
    main()
