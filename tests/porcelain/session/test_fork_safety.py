"""A store survives `fork`: children of a parent that opened it (and appended) append at once.

Before, a forked child hung forever on its first append once its parent had appended (the blob
writer's thread does not exist in a child, but its pool did), and a fork right after
`SessionStore.open` could hang on a lock held by the warm-up thread (an import, the tokenizer's
load). `multiprocessing` on Linux and gunicorn `--preload` do exactly this. Each scenario runs in a
fresh interpreter (tests/helpers/fork_scenarios.py) that kills a child still running after 60 s.
"""

from __future__ import annotations

import subprocess

import pytest

from helpers.messages import tag_of
from helpers.procs import spawn
from sessionstore.plumbing import codec
from sessionstore.porcelain.store import SessionStore

CHILDREN = 3
TURNS = 5


def turns_of(store: SessionStore, name: str) -> list[tuple[int, int]]:
    """(writer, index) of every tagged turn in session `name`, in log order."""
    out = []
    for commit in store.session(name).log()[::-1]:
        first = codec.decode([store.objects.read(commit.blob)])[0]
        writer, index, _ = tag_of(first)
        out.append((writer, index))
    return out


def assert_nothing_lost(store: SessionStore, writers: int) -> None:
    for w in range(writers):
        assert turns_of(store, f"w{w}") == [(w, i) for i in range(TURNS)], f"w{w}"
    shared = turns_of(store, "shared")
    assert sorted(shared) == [(w, i) for w in range(writers) for i in range(TURNS)]
    for w in range(writers):  # each writer's turns in its own order
        assert [i for x, i in shared if x == w] == list(range(TURNS))
    assert store.fsck().ok


def run_scenario(store: SessionStore, mode: str) -> None:
    """Run `fork_scenarios.py MODE` on `store`; it reports `ok` when no child hung or failed."""
    run = spawn("fork_scenarios.py", mode, store.root)
    try:
        out, _ = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        raise
    assert (run.returncode, out.strip()) == (0, "ok")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["mp-fork", "mp-spawn", "preload"])
def test_children_of_a_parent_that_appended_append_at_once(store: SessionStore, mode: str) -> None:
    run_scenario(store, mode)
    assert_nothing_lost(store, CHILDREN + 1)


@pytest.mark.slow
def test_a_fork_while_the_store_warms_up_hangs_nothing(store: SessionStore) -> None:
    run_scenario(store, "open-then-fork")
    assert_nothing_lost(store, 9)
