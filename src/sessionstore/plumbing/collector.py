"""The cyclic garbage collector paused for a block that builds many small objects, none of them garbage.

CPython's collector walks every tracked object in memory on a full collection, and a block that
allocates tens of thousands of containers sets one off: with a long history or every session's row in
memory, that walk costs more than the block's own work. The objects such a block builds are freed by
reference counting (no cycles among them), so nothing is lost by pausing it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector paused for the block; restored as it was, also on an error."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
