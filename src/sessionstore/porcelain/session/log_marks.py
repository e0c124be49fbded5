"""How long each log was: the high mark the heads cache keeps per session, so a log cut short is
seen as one (issue 29.8).

A log only grows: commit lines are appended, and the one thing ever cut is a torn tail, a last line
without its newline that was never acknowledged (DESIGN §2). So a log file that once held commit N
and no longer does lost acknowledged commits, whatever its last line looks like now: a truncation in
the middle of a line leaves what a crash's torn tail looks like, a truncation at a newline leaves a
valid shorter log. The heads cache (`heads.HeadsCache`) records, with each session's row, the mark
`[seq, offset, end, id]` of the newest head it has seen in that file (the same inode): a listing raises it
when the log grew on from it, and keeps it when the log no longer holds that commit, so `session
list` after a truncation does not erase the evidence. `session fsck` compares the mark with the log
(`porcelain/maintenance/log_ends.py`, `lost_commits`).

Another inode is another file (a session removed and made again, a log git checked out, a conflict
split): its mark starts afresh. The mark is as old as the last listing that saw the log settled, so
commits appended since are not covered; checkpoint refs cover their own compactions.
"""

from __future__ import annotations

import os
from typing import Any

from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.storedir import StoreDir

MARK = 9
"""Index of the mark in a heads cache row (`heads.HeadsCache`)."""
INODE = 3
"""Index of the log's inode in a heads cache row."""


Mark = tuple[int, int, int, str]
"""(seq, offset, end, id) of a commit line a log held."""


def mark_of(row: Any) -> Mark | None:
    """The mark of a cached row, or None when it has none (or it is malformed)."""
    try:
        seq, offset, end, cid = row[MARK]
    except (TypeError, IndexError, ValueError):
        return None
    numbers = all(isinstance(n, int) and not isinstance(n, bool) for n in (seq, offset, end))
    if numbers and 0 <= offset < end and isinstance(cid, str) and len(cid) == 64:
        return seq, offset, end, cid
    return None


def holds(logs: StoreDir, name: str, mark: Mark) -> bool:
    """Whether `name`'s log still has the mark's commit line where it was: the newline before it (or
    the start of the file), the line, its newline, and its id in it (a canonical line names its own
    id as `"id":"<hex>"`). One pread of the line; `logs/` is checked by the caller's listing."""
    _, offset, end, cid = mark
    try:
        fd = os.open(f"{logs.text}/{name}.jsonl", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        before = 1 if offset else 0
        data = os.pread(fd, end - offset + before, offset - before)
    finally:
        os.close(fd)
    if len(data) != end - offset + before or (before and data[0:1] != b"\n") or not data.endswith(b"\n"):
        return False
    line = data[before:-1]
    return b"\n" not in line and b'"id":"' + cid.encode() + b'"' in line


def next_mark(logs: StoreDir, name: str, row: Any, ino: int, head: Commit | None) -> list[Any] | None:
    """The mark to keep with `name`'s new row: `head`'s when the row was of another file or had no
    mark, or when the log grew on from its mark (the mark's line is still in place); else the old
    mark, which the log no longer reaches (lost commits `session fsck` names)."""
    new = None if head is None else [head.seq, head.offset, head.end, head.id]
    old = mark_of(row) if row is not None and _same_file(row, ino) else None
    if old is None:
        return new
    if new is not None and new[0] >= old[0] and holds(logs, name, old):
        return new
    return list(old)


def _same_file(row: Any, ino: int) -> bool:
    try:
        return bool(row[INODE] == ino)
    except (TypeError, IndexError):
        return False
