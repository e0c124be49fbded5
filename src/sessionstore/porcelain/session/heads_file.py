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
from pathlib import Path
from typing import Any, Protocol

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
DIGEST = 64
"""Hex digits of a sha256 in the header."""


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
        lines = self.heads()
        if lines is not None:
            if self._position is None:
                self._position = {n: i for i, n in enumerate(self.rows)}
            with suppress(orjson.JSONDecodeError, *ENTRY_ERRORS):
                return cached_head(lines[self._position[name]])
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
    return orjson.dumps(head_fields(head)) if head is not None else b"null"


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
    if own.keys() == _KEYS and list(own) == _ORDER:
        return own
    return {k: getattr(head, k) for k in FIELDS}


_ORDER = list(FIELDS)


def encode(memo: Any, tag: str | None, rows: dict[str, list[Any]], heads: list[bytes]) -> bytes:
    """The file holding `memo`, `rows` (cells under `tag`) and their heads, one line per head in the
    rows' order: what `Snapshot` reads back."""
    parts = (orjson.dumps(memo), orjson.dumps({"tag": tag, "rows": rows}), b"\n".join(heads))
    digests = " ".join(hashlib.sha256(part).hexdigest() for part in parts).encode()
    return b"".join((MAGIC, digests, b"\n", parts[0], b"\n", parts[1], b"\n", parts[2]))
