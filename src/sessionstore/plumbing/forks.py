"""Fork safety: what a child of `os.fork` must not inherit from its parent's background threads.

A forked child has one thread, the one that called `fork`; every lock another thread held at that
moment stays held in the child forever, and a pool whose worker thread the child lacks takes work
that never runs. `multiprocessing` on Linux and gunicorn `--preload` fork a parent that opened a
store, so two rules keep such a child able to write at once:

- `quiet()`: a background thread holds it around each step that imports or loads something (an
  import holds its module's import lock; the tokenizer's load holds the tokenizer's lock). A
  before-fork hook takes the same lock, so a fork waits for the step in progress (the longest, the
  tokenizer's load, takes ~0.3 s) and never lands inside one. `guard()` registers that hook; call it
  before starting such a thread.
- `in_child(fn)`: `fn` runs in every child right after the fork: a pool forgets the executor whose
  thread the child lacks (and the parent's queue with it) and makes a new one on first use, and a
  module re-creates locks a foreground thread of the parent may have held.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_quiet = threading.Lock()
_guarded = False
_guarding = threading.Lock()


@contextmanager
def quiet() -> Iterator[None]:
    """Hold off `fork` for the block (a background thread's import or load); forks wait for it."""
    with _quiet:
        yield


def guard() -> None:
    """Make every later fork wait for a `quiet()` block in progress (once per process; cheap again).

    Before-fork hooks run in the reverse order of their registration, and ours must run before any
    that takes a lock a `quiet()` step may need, or the fork and the step wait for each other.
    `logging`'s hook takes logging's lock, which an import takes too (`getLogger` at module level:
    `concurrent.futures`, pydantic-ai): so `logging` is imported, registering its hook, before ours
    is registered. It is the only before-fork hook the steps' imports register (checked with a spy
    on `os.register_at_fork`); importing it first also keeps a step from registering it during a
    fork, which would run its after hook without its before hook.
    """
    global _guarded
    if _guarded:
        return
    with _guarding:
        if not _guarded:
            import logging  # noqa: F401  (see above)

            os.register_at_fork(before=_quiet.acquire, after_in_parent=_release, after_in_child=_release)
            _guarded = True


def in_child(fn: Callable[[], object]) -> None:
    """Run `fn` in every forked child, right after the fork (before `fork` returns there)."""
    os.register_at_fork(after_in_child=fn)


def _release() -> None:
    _quiet.release()  # in the child too: the forking thread, its only thread, took it
