"""The `session` command line (click). Imports pydantic-ai lazily: log, list and gauge never do."""

from __future__ import annotations


def main() -> None:
    """The console script `session`: `cli/main.py`'s `main`, imported here so that a Ctrl-C while it
    loads (click, before any command runs) ends as every other one does: one line, exit 130."""
    try:
        from .main import main as run
    except KeyboardInterrupt:
        import sys

        sys.stderr.write("session: interrupted\n")
        raise SystemExit(130) from None
    run()
