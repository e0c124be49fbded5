"""How a log ends, for `session fsck`: a crash's torn tail, or a cut that lost acknowledged commits.

Both can leave a last line without its newline, so the bytes alone cannot tell them apart (issue
29.8). What tells them apart is what the store recorded of the log before: its checkpoint refs (each
names the byte offset of its compaction's line) and the heads cache's mark (the newest commit a
listing saw in that file: `porcelain/session/log_marks.py`). A log that no longer holds a commit
they recorded lost acknowledged commits: `lost_commits` names them, with their seqs, and nothing
about it is repaired silently. Otherwise a last line without its newline is a crash mid-append
(never acknowledged).

`cut_tail` is the one way fsck --repair cuts a log's unfinished last line: a copy of the cut bytes
goes to `trash/.cut-<name>-<utc stamp>.jsonl` first (written whole, synced), then the log is cut.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sessionstore.errors import CorruptObjectError
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.fsutil import atomic_replace
from sessionstore.porcelain.session.file_moves import trash_dir
from sessionstore.porcelain.session.heads_file import HEADS_FILE
from sessionstore.porcelain.session.log_marks import INODE, holds, mark_of

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

CUT_PREFIX = ".cut-"
"""How the trash names the copy of what `cut_tail` cut (a leading dot: never a removed session)."""


def lost_commits(
    store: SessionStore, name: str, commits: list[Commit], valid_end: int, rows: dict[str, Any]
) -> str | None:
    """The problem line when `name`'s log (its verified `commits`, whole up to `valid_end`) no longer
    holds a commit the store recorded it had: a checkpoint ref at or past its end, or the heads
    cache's mark (`rows`: the cache's rows) in the same file; None when nothing says so."""
    k = commits[-1].seq if commits else 0
    said: list[str] = []
    lost_to: int | None = None
    row = rows.get(name)
    mark = mark_of(row)
    if mark is not None and _same_file(store, name, row) and not holds(store.logs, name, mark):
        seq, _, end, cid = mark
        said.append(f"it held commit {seq} ({cid[:7]}, up to byte {end}) when `session list` recorded it")
        lost_to = seq
    past = [
        ref
        for _, ref in store.refs.entries(name)
        if not isinstance(ref, CorruptObjectError) and ref.offset >= valid_end
    ]
    if past:
        said.append(f"{past[0].name} points at byte {past[0].offset}")
    if not said:
        return None
    if lost_to is not None and lost_to > k:
        which = f"commit {k + 1} is lost" if lost_to == k + 1 else f"commits {k + 1}-{lost_to} are lost"
    elif lost_to is not None:
        which = f"commit {lost_to} was replaced: the log was cut and written again since"
    else:
        which = f"the commits after {k} are lost"
    records = [f"{HEADS_FILE} (derived from the logs)"] if lost_to is not None else []
    records += [f"refs/{ref.name}" for ref in past]
    torn = store.log(name).size() - valid_end
    rest = (
        f"; its last {torn} bytes are the start of a lost line, which `session fsck --repair` moves to "
        f"{trash_dir(store).rel}/ so the session can be written again"
        if torn
        else ""
    )
    return (
        f"{name}: acknowledged commits are missing: logs/{name}.jsonl ends after commit {k} (byte "
        f"{valid_end}), but {' and '.join(said)}: {which} (a cut, not a crash: no crash removes a "
        f"whole line); restore logs/{name}.jsonl from git or a backup, or, to go on without them, "
        f"delete {' and '.join(records)}{rest}"
    )


def _same_file(store: SessionStore, name: str, row: Any) -> bool:
    try:
        return bool(os.lstat(store.log(name).path).st_ino == row[INODE])
    except (OSError, TypeError, IndexError):
        return False


def cut_tail(store: SessionStore, name: str) -> tuple[int, str] | None:
    """Cut the unfinished last line of `name`'s log (the caller holds its lock), keeping a copy of
    the cut bytes in the trash first; (bytes cut, the copy's store-relative path), or None when the
    log ends with a whole line. Whatever else is wrong with the log is raised (`Log.scan`)."""
    log = store.log(name)
    _, valid_end = log.scan(since_reset=False)
    with open(os.open(log.path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        f.seek(valid_end)
        tail = f.read()
    if not tail:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    trash = trash_dir(store)
    copy = trash.make() / f"{CUT_PREFIX}{name}-{stamp}.jsonl"
    atomic_replace(copy, tail)  # synced before the log loses them
    cut = log.repair_tail()
    return cut, f"{trash.rel}/{copy.name}"
