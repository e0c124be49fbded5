"""The heads cache's record of how long each log was (porcelain/session/log_marks.py), on real logs:
a mark follows a log that grows, stays when the log is cut or cut and rewritten, and starts afresh in
another file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.messages import tagged_turn
from sessionstore.porcelain.session.log_marks import MARK, holds, mark_of, next_mark
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store")
    session = store.session("s")
    for i in range(4):
        session.append(tagged_turn(0, i), compact=False)
    return store


def row_with(mark: list | None, ino: int) -> list:
    row: list = [0, 0, 0, ino, None, None, None, None, None, mark]
    assert len(row) == MARK + 1
    return row


def test_a_mark_follows_a_log_that_grows(store: SessionStore) -> None:
    log = store.log("s")
    head = log.head()
    assert head is not None
    ino = log.path.stat().st_ino
    first = next_mark(store.logs, "s", None, ino, head)
    assert first == [4, head.offset, head.end, head.id] and holds(
        store.logs, "s", mark_of(row_with(first, ino))
    )
    grown = store.session("s").append(tagged_turn(0, 9), compact=False)
    assert next_mark(store.logs, "s", row_with(first, ino), ino, grown) == [
        5,
        grown.offset,
        grown.end,
        grown.id,
    ]


def test_a_mark_stays_when_the_log_is_cut_or_cut_and_written_again(store: SessionStore) -> None:
    log = store.log("s")
    head = log.head()
    assert head is not None
    ino = log.path.stat().st_ino
    mark = [head.seq, head.offset, head.end, head.id]
    os.truncate(log.path, head.offset)  # commit 4 gone
    shorter = log.head()
    assert shorter is not None and shorter.seq == 3 and log.path.stat().st_ino == ino
    assert not holds(store.logs, "s", mark_of(row_with(mark, ino)))
    assert next_mark(store.logs, "s", row_with(mark, ino), ino, shorter) == mark
    session = store.session("s")
    for i in range(3):
        again = session.append(tagged_turn(1, i), compact=False)  # a new commit 4, then 5 and 6
    assert next_mark(store.logs, "s", row_with(mark, ino), ino, again) == mark  # not its commit 4


def test_another_file_starts_a_new_mark_and_a_malformed_one_is_none(store: SessionStore) -> None:
    head = store.log("s").head()
    assert head is not None
    stale = [99, 0, 10, "f" * 64]
    assert next_mark(store.logs, "s", row_with(stale, -1), 12345, head) == [4, head.offset, head.end, head.id]
    for bad in (
        None,
        [1, 2],
        [1, 5, 2, "f" * 64],
        ["1", 0, 2, "f" * 64],
        [1, 0, 2, "short"],
        [True, 0, 2, "f" * 64],
    ):
        assert mark_of(row_with(bad, 1)) is None  # type: ignore[arg-type]
