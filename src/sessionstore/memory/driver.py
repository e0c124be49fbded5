"""The MEMORY.md merge driver git runs (`session memory merge-driver %O %A %B %P`).

git hands the driver three temp files, the common ancestor, ours (where the result goes) and theirs,
and takes exit 0 as a clean merge. The result is `merge_three` of the three, redacted, and squashed
offline past the caps (a merge never waits on a model), written over ours atomically.
"""

from __future__ import annotations

from pathlib import Path

from ..accounting.settings import Settings
from .compress import compress_offline, past_caps
from .document import join_lines, split_lines
from .fileio import MemoryUpdate, read_memory_file, write_atomic
from .lock import memory_lock
from .merge import merge_three
from .redact import redact


def merge_memory_files(
    base: Path, ours: Path, theirs: Path, settings: Settings, *, memory: Path | None = None
) -> MemoryUpdate:
    """Merge `theirs` into `ours` in place (git's %A); `base` may be empty (no common ancestor).

    Holds the memory lock of `memory` (git's %P, the MEMORY.md being merged; default `ours`) while it
    reads and rewrites, as every MEMORY.md writer does."""
    with memory_lock(memory or ours, settings.lock_timeout_s):
        return _merge(base, ours, theirs, settings)


def _merge(base: Path, ours: Path, theirs: Path, settings: Settings) -> MemoryUpdate:
    texts = [read_memory_file(p) for p in (base, ours, theirs)]
    original = texts[1]
    base_lines, our_lines, their_lines = (split_lines(redact(t)) for t in texts)
    lines = merge_three(base_lines, our_lines, their_lines)
    method, removed = "merge", []
    if past_caps(lines, settings):
        result = compress_offline(lines, settings)
        lines, removed, method = result.lines, result.removed, "merge+extractive"
    text = join_lines(lines)
    if text != original:
        write_atomic(ours, text)
    return MemoryUpdate(
        path=ours,
        changed=text != original,
        method=method,
        lines_before=len(split_lines(original)),
        lines_after=len(lines),
        bytes_before=len(original.encode()),
        bytes_after=len(text.encode()),
        removed=removed,
    )
