"""The heads cache's bytes (porcelain/session/heads_file.py): what `encode` writes, `Snapshot` reads back,
part by part, and a damaged part reads as empty, never as an error."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.plumbing.commits import make_line, parse_line
from sessionstore.porcelain.session.heads_file import (
    MAGIC,
    HeadRow,
    Snapshot,
    cached_head,
    commit_of,
    encode,
    entries_of,
    head_fields,
    head_line,
    row_of,
    title_key,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ROWS = st.dictionaries(st.text(min_size=1, max_size=8), st.lists(JSON, max_size=4), max_size=5)


class NoLogs:
    def log(self, name: str) -> Any:
        raise AssertionError(f"read the log of {name!r}: the cache should have answered")


def a_commit(session: str = "s") -> Any:
    line, _ = make_line(
        parent=None,
        kind="turn",
        blob=None,
        count=2,
        tokens=9,
        usage=None,
        extra={"sizes": [4, 5]},
        time="2026-12-01T00:00:00Z",
    )
    commit = parse_line(line[:-1], session, 0)
    assert commit is not None
    return commit


@settings(max_examples=60, deadline=None)
@given(memo=st.lists(JSON, min_size=4, max_size=4), tag=st.text(max_size=6) | st.none(), rows=ROWS)
def test_what_encode_writes_reads_back_part_by_part(memo: list[Any], tag: str | None, rows: dict) -> None:
    memo[2] = list(rows)  # a memo's names are a list
    heads = [head_line(a_commit(name)) for name in rows]
    snapshot = Snapshot(encode(memo, tag, rows, heads))
    assert snapshot.valid and not snapshot.damaged
    assert snapshot.memo == orjson.loads(orjson.dumps(memo))
    assert (snapshot.tag, snapshot.rows) == (tag, orjson.loads(orjson.dumps(rows)))
    assert snapshot.heads() == heads
    for name in rows:
        assert (
            snapshot.head(NoLogs(), name) == a_commit(name)
            and snapshot.line(NoLogs(), name) == heads[list(rows).index(name)]
        )


@pytest.mark.parametrize("part", [0, 1, 2])
def test_a_flipped_byte_in_one_part_empties_that_part_only(part: int) -> None:
    rows = {"a": [1, 2], "b": [3]}
    heads = [head_line(a_commit("a")), head_line(None)]
    data = bytearray(encode([None, "stamp", ["a", "b"], "value"], "t", rows, heads))
    starts = [i + 1 for i, byte in enumerate(data) if byte == 0x0A][:3]  # each part starts after a newline
    data[starts[part]] ^= 0x01
    snapshot = Snapshot(bytes(data))
    assert (snapshot.memo is None) == (part == 0)
    assert (snapshot.rows == {}) == (part == 1)
    assert snapshot.heads() is None  # read only while every part passed: the file is rewritten
    assert snapshot.damaged


def test_anything_but_this_format_is_invalid_and_reads_as_empty() -> None:
    for data in (b"", b"garbage", MAGIC + b"x\n", encode(None, None, {}, [])[:-1].replace(MAGIC, b"other ")):
        snapshot = Snapshot(data)
        assert snapshot.memo is None and snapshot.rows == {} and snapshot.heads() is None


def test_a_cached_head_is_the_commit_and_needs_exactly_its_fields() -> None:
    commit = a_commit()
    assert cached_head(head_line(commit)) == commit and cached_head(b"null") is None
    fields = head_fields(commit)
    assert commit_of(dict(fields)) == commit
    with pytest.raises(KeyError):
        commit_of({**fields, "extra_field": 1})
    with pytest.raises(KeyError):
        commit_of({k: v for k, v in fields.items() if k != "tokens"})


def test_a_head_row_is_read_by_name_and_written_as_the_list_it_was() -> None:
    row = HeadRow(10, 2, 3, 4, [5, 6], 1, "title", ["cells"], [3, "ab"], [7, 0, 10, "cd"])
    snapshot = Snapshot(encode(None, "t", {"a": row}, [head_line(None)]))
    assert snapshot.rows == {"a": list(row)} and row_of(snapshot.rows["a"]) == row
    assert (row.refs, row.checkpoints, row.title, row.cells) == ([5, 6], 1, "title", ["cells"])
    assert row.mark == [7, 0, 10, "cd"]
    for malformed in (None, 5, "abc", [1, 2], [0] * 9, [0] * 11):  # a miss, never an error
        assert row_of(malformed) is None
        assert entries_of({"a": list(row), "b": malformed}) == {"a": row} == entries_of({"a": list(row)})
    log = SimpleNamespace(st_size=10, st_mtime_ns=2, st_ctime_ns=3, st_ino=4)  # a log's stat
    assert row.same_log(log) and not row._replace(ctime_ns=9).same_log(log)


def test_a_title_is_kept_while_the_bytes_it_came_from_are_the_logs_first() -> None:
    row = HeadRow(0, 0, 0, 0, None, None, "Fix auth", None, title_key(b"hello world", 5), None)
    assert row.kept_title(b"hello there") == "Fix auth"  # the log grew after its first 5 bytes
    assert row.kept_title(b"HELLO world") is None and row.kept_title(b"hel") is None
    assert row._replace(title_key=None).kept_title(b"hello") is None
    assert row._replace(title_key="damaged").kept_title(b"hello") is None  # a miss, never an error
    assert title_key(b"abc", 0) is None and title_key(b"abc", 4) is None  # from the whole log: not kept
