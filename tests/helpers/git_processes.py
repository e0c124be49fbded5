"""The git processes a call starts in this process, counted where every one starts: `subprocess.Popen`
(`subprocess.run` makes one too), so no start is missed, whatever the code under test calls."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def counting_git() -> Iterator[list[list[str]]]:
    """Within the block, the argv of every `git` process started (in order); restored after it."""
    started: list[list[str]] = []
    real = subprocess.Popen

    class Counting(real):  # type: ignore[valid-type, misc]
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            if isinstance(args, list | tuple) and args and args[0] == "git":
                started.append([str(a) for a in args])
            super().__init__(args, *rest, **kwargs)

    subprocess.Popen = Counting  # type: ignore[misc]
    try:
        yield started
    finally:
        subprocess.Popen = real  # type: ignore[misc]


def verbs(started: list[list[str]]) -> list[str]:
    """The git subcommand of each argv (`git -C DIR fetch ...` -> `fetch`)."""
    out = []
    for argv in started:
        rest = argv[1:]
        while rest and rest[0] == "-C":
            rest = rest[2:]
        out.append(rest[0] if rest else "")
    return out
