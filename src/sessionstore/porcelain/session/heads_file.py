"""The bytes of the heads cache, `index/sessions.json`: its format and one read of it.

`HeadsCache` (porcelain/session/heads.py) decides what goes in and when it may be trusted; this module owns
how it is laid out: a header (the format, the commit fields, the sha256 of each part), then the memo,
the rows and the heads, each part checked and parsed only when first used (`Snapshot`), and written
by `encode`. A damaged part reads as empty, never as an error.
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from dataclasses import fields
from functools import cached_property
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import orjson

from sessionstore.plumbing.commits import Commit


class Logs(Protocol):
    """Where a damaged heads part falls back to: the store's logs (a `StoreLayout`)."""

    def log(self, name: str) -> Any: ...


HEADS_FILE = Path("index") / "sessions.json"
FIELDS = tuple(f.name for f in fields(Commit))
"""A cached head is its commit's fields, `session` included: the dict becomes the rebuilt commit's
own `__dict__` (see `commit_of`), so a hit copies nothing."""
MAGIC = b"sessionstore-heads 6 " + ",".join(FIELDS).encode() + b" "
"""The header names the fields: a cache written for another `Commit` is not in this format (rebuilt),
so entries, written by this module alone and checksummed, need no per-entry check of their keys."""
ENTRY_ERRORS = (TypeError, IndexError, KeyError, AttributeError, ValueError)
"""What a malformed entry raises where it is read: a miss, never an error."""
_LINE_ERRORS = (orjson.JSONDecodeError, *ENTRY_ERRORS)
"""What a malformed head line raises where it is read (`Snapshot.head`): the log is read instead."""
DIGEST = 64
"""Hex digits of a sha256 in the header."""


class HeadRow(NamedTuple):
    """One session's entry in the rows part (a JSON list in the file, in this order), as `HeadsCache`
    decides it: a named tuple, as `layout.SessionInfo`, so a listing of 10,000 reads fields by name
    at the cost of a tuple."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    """The log's key: the entry is used only while the log's stat gives these four."""
    refs: list[int] | None
    """Its refs directory's (mtime_ns, inode); None: no directory, or one changing when listed."""
    checkpoints: int | None
    """The checkpoints counted under `refs` (None: not cached)."""
    title: str | None
    """The derived title (None: none derived, or none to trust yet)."""
    cells: Any
    """The caller's cells for the head, under the rows part's tag (None: none made)."""
    title_key: list[Any] | None
    """[bytes of the log's start the title came from, their sha256]: the title outlives a change
    that leaves them (None: kept only while the log is unchanged)."""
    mark: list[Any] | None
    """[seq, offset, end, id] of the newest commit a listing saw in this file (`log_marks`): how long
    the log was, kept when it no longer holds it (None: none seen). A row of a log too new to cache
    holds its mark alone (size -1: never used as a hit)."""

    def same_log(self, st: Any) -> bool:
        """Whether this entry was cached for the log in the state `st` (an `os.stat_result`)
        describes: the same size, mtime, ctime and inode (a rename or `os.utime` moves the ctime, a
        replacement the inode)."""
        return (
            self.size == st.st_size
            and self.mtime_ns == st.st_mtime_ns
            and self.ctime_ns == st.st_ctime_ns
            and self.inode == st.st_ino
        )

    def kept_title(self, start: bytes) -> str | None:
        """The title, when the bytes it was derived from are still the first of `start` (the log's
        first bytes now: a log that only grew, a compaction), else None."""
        with suppress(*ENTRY_ERRORS):
            used, digest = self.title_key  # type: ignore[misc]
            if self.title is not None and 0 < used <= len(start) and _digest(start, used) == digest:
                return self.title
        return None


def title_key(start: bytes, used: int) -> list[Any] | None:
    """The `title_key` of a title derived from the first `used` bytes of `start` (None: from more
    than these, or the whole log: kept only while the log is unchanged)."""
    return [used, _digest(start, used)] if 0 < used <= len(start) else None


def _digest(data: bytes, end: int) -> str:
    return hashlib.sha256(memoryview(data)[:end]).hexdigest()


_WIDTH = len(HeadRow.__annotations__)  # its fields
_row = tuple.__new__
"""`HeadRow(*raw)` without the named tuple's Python-level `__new__` (the same tuple)."""


def entries_of(rows: dict[str, Any]) -> dict[str, HeadRow]:
    """The well-formed entries of a rows part by name (a malformed one is left out: a miss, never an
    error), made in one pass that calls no Python function per row (10,000 in a big store)."""
    with suppress(TypeError):  # a row that is not a list: each checked below
        made = dict(zip(rows, map(_row, repeat(HeadRow), rows.values()), strict=True))
        if set(map(len, made.values())) <= {_WIDTH}:
            return made
    return {name: row for name, raw in rows.items() if (row := row_of(raw)) is not None}


def row_of(raw: Any) -> HeadRow | None:
    """The entry a row of the file holds, or None when there is none or it is malformed (a miss,
    never an error)."""
    if raw is None:
        return None
    try:
        return _row(HeadRow, raw) if len(raw) == _WIDTH else None
    except TypeError:  # not a list
        return None


class Snapshot:
    """One read of the cache file, each part checked (and parsed) only when first used: a listing
    its memo answers never hashes the rows or the heads; one of cells never the heads."""

    def __init__(self, data: bytes) -> None:
        header_end = data.find(b"\n")
        memo_end = data.find(b"\n", header_end + 1)
        rows_end = data.find(b"\n", memo_end + 1)
        digests = data[len(MAGIC) : header_end].split(b" ")
        self.valid = (
            min(header_end, memo_end, rows_end) >= 0
            and data.startswith(MAGIC)
            and len(digests) == 3
            and all(len(d) == DIGEST for d in digests)
        )
        self._data, self._digests = data, digests
        self._ends = (header_end, memo_end, rows_end)
        self._rows: tuple[Any, dict[str, list[Any]]] | None = None
        self._heads: list[bytes] | None = None
        self._position: dict[str, int] | None = None
        self.damaged = False
        """Whether a part was found damaged (the others passed their checks): rewrite it."""

    def _part(self, index: int) -> memoryview | None:
        """Part `index` (0 memo, 1 rows, 2 heads) when its checksum matches, else None (damaged)."""
        if not self.valid:
            return None
        start = self._ends[index] + 1
        end = self._ends[index + 1] if index < 2 else len(self._data)
        part = memoryview(self._data)[start:end]  # no copy of megabytes
        if hashlib.sha256(part).hexdigest().encode() != self._digests[index]:
            self.damaged = True
            return None
        return part

    @cached_property
    def memo(self) -> list[Any] | None:
        """[tag, stamp, names, value] as `HeadsCache.memo` remembered them, or None."""
        with suppress(orjson.JSONDecodeError, *ENTRY_ERRORS):
            part = self._part(0)
            memo = orjson.loads(part) if part is not None else None
            if isinstance(memo, list) and len(memo) == 4 and isinstance(memo[2], list):
                return memo
        return None

    def _document(self) -> tuple[Any, dict[str, list[Any]]]:
        if self._rows is None:
            self._rows = (None, {})
            with suppress(orjson.JSONDecodeError, *ENTRY_ERRORS):
                part = self._part(1)
                document = orjson.loads(part) if part is not None else None
                if isinstance(document, dict) and isinstance(document["rows"], dict):
                    self._rows = (document["tag"], document["rows"])
        return self._rows

    @property
    def tag(self) -> Any:
        return self._document()[0]

    @property
    def rows(self) -> dict[str, list[Any]]:
        return self._document()[1]

    def heads(self) -> list[bytes] | None:
        """One head line per row, in the rows' order; None when that part is damaged."""
        if self._heads is None and not self.damaged:
            part = self._part(2)
            if part is not None:
                lines = bytes(part).split(b"\n") if part else []
                if len(lines) == len(self.rows) and not self.damaged:  # the rows' part passed too
                    self._heads = lines
            self.damaged = self.damaged or (self.valid and self._heads is None)
        return self._heads

    def head(self, layout: Logs, name: str) -> Commit | None:
        """The head cached with row `name` (a hit: its log's key matched), or the log's own head when
        the heads part is damaged: read now, so at worst newer than the row's key, a change the next
        listing sees in the key (never a stale entry)."""
        lines = self._heads if self._heads is not None else self.heads()  # once per listing, not per row
        if lines is not None:
            if self._position is None:
                self._position = {n: i for i, n in enumerate(self.rows)}
            try:  # no `suppress` object made per row: this runs for every session of a listing
                return cached_head(lines[self._position[name]])
            except _LINE_ERRORS:
                pass
        return layout.log(name).head()

    def line(self, layout: Logs, name: str) -> bytes:
        """The head line of row `name` to write again (see `head`)."""
        lines = self.heads()
        if lines is not None:
            if self._position is None:
                self._position = {n: i for i, n in enumerate(self.rows)}
            return lines[self._position[name]]
        return head_line(layout.log(name).head())


def cached_head(line: bytes) -> Commit | None:
    """The head a head line holds (None: an empty log)."""
    fields = orjson.loads(line)
    return None if fields is None else commit_of(fields)


def head_line(head: Commit | None) -> bytes:
    """The heads part's line of `head`: its fields' JSON, as a bytes object of its own size (orjson's
    result keeps the 4 KiB buffer it was written in: 10,000 kept for a rebuild's file are 40 MB)."""
    return bytes(memoryview(orjson.dumps(head_fields(head)))) if head is not None else b"null"


def commit_of(cached: dict[str, Any]) -> Commit:
    """The commit whose fields `cached` holds, with `cached` itself as its `__dict__`: what
    `Commit(**cached)` gives, without the frozen dataclass's 13 `object.__setattr__` calls and
    without a copy (a commit is never changed)."""
    if cached.keys() != _KEYS:
        raise KeyError("not a commit's fields")
    commit = object.__new__(Commit)
    object.__setattr__(commit, "__dict__", cached)
    return commit


_KEYS = frozenset(FIELDS)


def head_fields(head: Commit) -> dict[str, Any]:
    """What the cache keeps of `head` (every field, `session` included, in `FIELDS` order): its own
    `__dict__` when that holds exactly these (a dataclass sets them in field order), else a copy:
    read, never changed (`head_line` encodes it)."""
    own = head.__dict__
    if list(own) == _ORDER:  # the same keys, in this order
        return own
    return {k: getattr(head, k) for k in FIELDS}


_ORDER = list(FIELDS)


def _as_list(value: Any) -> Any:
    """A `HeadRow` as the JSON list it is written as (orjson writes no named tuple of itself)."""
    if isinstance(value, tuple):
        return tuple(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def encode(memo: Any, tag: str | None, rows: dict[str, Any], heads: list[bytes]) -> bytes:
    """The file holding `memo`, `rows` (cells under `tag`; each a list or a `HeadRow`) and their heads,
    one line per head in the rows' order: what `Snapshot` reads back."""
    rows_part = orjson.dumps({"tag": tag, "rows": rows}, default=_as_list)
    parts = (orjson.dumps(memo), rows_part, b"\n".join(heads))
    digests = " ".join(hashlib.sha256(part).hexdigest() for part in parts).encode()
    return b"".join((MAGIC, digests, b"\n", parts[0], b"\n", parts[1], b"\n", parts[2]))
