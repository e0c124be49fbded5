"""Per-session commit logs: `logs/<session>.jsonl`, one hash-chained commit per line.

A commit's `id` is the sha256 of its other fields as canonical JSON (sorted keys, no spaces), and
`parent` names the commit before it, so a log is a hash chain like git's history. The log only grows.

Replay state: a commit with `blobs` is a *reset point* (compaction, checkout, fork): its state is the
concatenation of those blobs. Any other commit adds its `blob` to its parent's state. So loading reads
the log backwards to the newest reset point and never further: O(messages since the last reset).

Torn tail: a last line without its newline, or whose id does not verify, is what a crash mid-append
leaves. Readers ignore it; the next writer truncates it under the session lock. Damage anywhere else
is `CorruptLogError`, never skipped.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ..errors import CorruptLogError, StaleSessionError
from .fsutil import append_durable, truncate_durable

RESET_KINDS = frozenset({"compaction", "checkout", "fork"})
_HEAD_READ = 1 << 16
"""Bytes `head()` reads from the end of a log: many commit lines, whatever the log's length."""
_CORE = ("parent", "seq", "kind", "blob", "count", "tokens", "usage", "time")


def canonical(obj: Any) -> bytes:
    """Canonical JSON: sorted keys, no spaces (what commit ids hash)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Commit:
    """One log line. `extra` holds the kind-specific fields (`tier`, `target`, `blobs`, `sizes`, ...)."""

    id: str
    parent: str | None
    seq: int
    kind: str
    blob: str | None
    count: int
    tokens: int
    usage: dict[str, Any] | None
    time: str
    extra: dict[str, Any] = field(default_factory=dict)
    session: str = ""
    offset: int = -1
    """Byte offset of this commit's line in its log (not part of the id)."""
    size: int = 0
    """Length in bytes of the line, newline included."""

    @property
    def is_reset(self) -> bool:
        return "blobs" in self.extra

    @property
    def blobs(self) -> list[str]:
        """Blobs making the whole state (reset points only)."""
        return list(self.extra.get("blobs", ()))

    @property
    def sizes(self) -> list[int]:
        """Per-message token estimates: of the new messages, or of the whole state for a reset point."""
        return list(self.extra.get("sizes", ()))

    @property
    def tier(self) -> int | None:
        return self.extra.get("tier")

    @property
    def target(self) -> str | None:
        return self.extra.get("target")

    @property
    def end(self) -> int:
        return self.offset + self.size

    def to_json(self) -> dict[str, Any]:
        """The commit as stored (plus `session`), for `--json` output."""
        body = {k: getattr(self, k) for k in _CORE}
        return {"id": self.id, "session": self.session, **body, **self.extra}


def make_line(
    *,
    parent: Commit | None,
    kind: str,
    blob: str | None,
    count: int,
    tokens: int,
    usage: dict[str, Any] | None,
    extra: dict[str, Any],
    time: str | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Build the canonical line for a new commit after `parent`; returns (line bytes, parsed dict)."""
    clash = set(extra) & {*_CORE, "id"}
    if clash:
        raise ValueError(f"commit extra fields shadow core fields: {sorted(clash)}")
    body = {
        "parent": parent.id if parent else None,
        "seq": parent.seq + 1 if parent else 1,
        "kind": kind,
        "blob": blob,
        "count": count,
        "tokens": tokens,
        "usage": usage,
        "time": time or utc_now(),
        **extra,
    }
    body["id"] = hashlib.sha256(canonical(body)).hexdigest()
    return canonical(body) + b"\n", body


def parse_line(line: bytes, session: str, offset: int) -> Commit | None:
    """The commit on `line`, or None when it does not parse or its id does not verify."""
    try:
        body = orjson.loads(line)
        cid = body.pop("id")
        if not isinstance(body, dict) or hashlib.sha256(canonical(body)).hexdigest() != cid:
            return None
        core = {k: body.pop(k) for k in _CORE}
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    return Commit(id=cid, **core, extra=body, session=session, offset=offset, size=len(line) + 1)


class Log:
    """Reader and (locked) writer of one session's log."""

    def __init__(self, logs_dir: Path, session: str) -> None:
        self.session = session
        self._file = os.path.join(logs_dir, f"{session}.jsonl")  # `head` opens it: no Path needed

    @property
    def path(self) -> Path:
        return Path(self._file)

    def exists(self) -> bool:
        return self.path.is_file()

    def _bytes(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

    def _damage(self, data: bytes, offset: int, why: str) -> CorruptLogError:
        lineno = data.count(b"\n", 0, offset) + 1
        return CorruptLogError(
            f"log of session {self.session!r} is damaged at line {lineno} ({why}): restore "
            f"{self.path} from git or a backup; `session fsck` lists every problem"
        )

    def _lines_backward(self, data: bytes) -> Iterator[tuple[int, bytes, bool]]:
        """(offset, line, is_last) from the end; a last line with no newline is torn and skipped."""
        end = len(data)
        last = True
        if end and not data.endswith(b"\n"):
            end = data.rfind(b"\n") + 1  # torn: no newline; the line before it is whole data
            last = False
        while end > 0:
            start = data.rfind(b"\n", 0, end - 1) + 1
            yield start, data[start : end - 1], last
            last = False
            end = start

    def scan(self, *, since_reset: bool, end: int | None = None) -> tuple[list[Commit], int]:
        """Commits oldest first (all, or from the newest reset point) and the valid byte length.

        `end` stops the scan at a byte offset (the end of an earlier commit's line). The chain is
        verified over every commit returned; a bad last line is a torn tail (ignored).
        """
        data = self._bytes()
        if end is not None:
            data = data[:end]
        out: list[Commit] = []
        valid_end = len(data) if data.endswith(b"\n") or not data else data.rfind(b"\n") + 1
        for offset, line, is_last in self._lines_backward(data):
            commit = parse_line(line, self.session, offset)
            if commit is None:
                if is_last:
                    valid_end = offset
                    continue
                raise self._damage(data, offset, "its id does not verify")
            if out and (out[-1].parent != commit.id or out[-1].seq != commit.seq + 1):
                raise self._damage(data, out[-1].offset, "it does not follow the line before it")
            out.append(commit)
            if since_reset and commit.is_reset:
                break
        out.reverse()
        if out and out[0].offset == 0 and (out[0].parent is not None or out[0].seq != 1):
            raise self._damage(data, 0, "the first commit has a parent")
        return out, valid_end

    def head(self) -> Commit | None:
        """The newest acknowledged commit (cheap: reads back from the end of the file only)."""
        try:
            fd = os.open(self._file, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:  # one fstat and one pread: `session list` does this for every session
            size = os.fstat(fd).st_size
            start = max(0, size - _HEAD_READ)
            data = os.pread(fd, size - start, start)
        finally:
            os.close(fd)
        if start:
            cut = data.find(b"\n") + 1  # the bytes before the first newline belong to an earlier line
            for offset, line, is_last in self._lines_backward(data[cut:] if cut else b""):
                commit = parse_line(line, self.session, start + cut + offset)
                if commit is not None:
                    return commit
                if not is_last:
                    break
            data = self._bytes()  # a last line longer than the window, or damage: read it all
        for offset, line, is_last in self._lines_backward(data):
            commit = parse_line(line, self.session, offset)
            if commit is not None:
                return commit
            if not is_last:
                raise self._damage(data, offset, "its id does not verify")
        return None

    def read_at(self, offset: int) -> Commit:
        """The commit whose line starts at `offset` (what a checkpoint ref points at)."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            line = f.readline()
        commit = parse_line(line.rstrip(b"\n"), self.session, offset) if line.endswith(b"\n") else None
        if commit is None:
            raise CorruptLogError(
                f"no commit at byte {offset} of the log of session {self.session!r}: run `session fsck`"
            )
        return commit

    def append(self, line: bytes, body: dict[str, Any], expected: Commit | None) -> Commit:
        """Append one commit line after `expected` (caller holds the session lock).

        Checks that the on-disk head is still `expected` (else `StaleSessionError`), truncates a torn
        tail left by a crash, then appends and syncs. Returns the acknowledged commit.
        """
        size = self.path.stat().st_size if self.path.exists() else 0
        want = expected.end if expected else 0
        if size < want or (expected and self._line_id(expected) != expected.id):
            raise self._stale()
        if size > want:
            with open(self.path, "rb") as f:
                f.seek(want)
                rest = f.read()
            first = rest.split(b"\n", 1)
            if len(first) == 2 and parse_line(first[0], self.session, want) is not None:
                raise self._stale()  # a whole, valid commit follows ours: another writer moved on
            truncate_durable(self.path, want)  # torn tail from a crash: not data
        offset = append_durable(self.path, line)
        body = dict(body)
        cid = body.pop("id")
        core = {k: body.pop(k) for k in _CORE}
        return Commit(id=cid, **core, extra=body, session=self.session, offset=offset, size=len(line))

    def _line_id(self, commit: Commit) -> str | None:
        with open(self.path, "rb") as f:
            f.seek(commit.offset)
            line = f.read(commit.size)
        parsed = parse_line(line.rstrip(b"\n"), self.session, commit.offset) if line.endswith(b"\n") else None
        return parsed.id if parsed else None

    def _stale(self) -> StaleSessionError:
        return StaleSessionError(
            f"session {self.session!r} changed on disk since it was loaded: reload it "
            "(store.session(name)) and retry"
        )

    def repair_tail(self) -> bool:
        """Truncate a torn tail (caller holds the lock); True if something was cut."""
        _, valid_end = self.scan(since_reset=False)
        if self.path.exists() and self.path.stat().st_size > valid_end:
            truncate_durable(self.path, valid_end)
            return True
        return False

    def remove(self) -> None:
        os.unlink(self.path)


_TAIL_CHUNK = 1 << 16
"""Bytes `tail` reads per step back from the end of a log."""


def tail(log: Log, count: int) -> list[Commit]:
    """The newest `count` commits of `log`, oldest first, read back from the end of the file only.

    What `session log NAME -n N` needs: the cost is the bytes of those lines (read in 64 KiB steps),
    not the log's length. Only a last line without its newline is a torn tail (skipped); any other
    line that does not verify, or that does not chain to the line after it, is `CorruptLogError`.
    """
    if count <= 0:
        return []
    try:
        fd = os.open(log._file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return []
    try:
        pos = os.fstat(fd).st_size
        chunks: list[bytes] = []
        newlines = 0
        while pos > 0 and newlines <= count:  # count + 1 newlines: count whole lines after a cut
            step = min(_TAIL_CHUNK, pos)
            pos -= step
            chunk = os.pread(fd, step, pos)
            chunks.append(chunk)
            newlines += chunk.count(b"\n")
    finally:
        os.close(fd)
    buf = b"".join(reversed(chunks))
    if not buf.endswith(b"\n"):
        buf = buf[: buf.rfind(b"\n") + 1]  # a torn tail (a crash mid-append) is not data
    if pos > 0:
        cut = buf.find(b"\n") + 1  # the bytes before the first newline belong to an older line
        pos, buf = pos + cut, buf[cut:]
    lines = buf.split(b"\n")[:-1][-count:]
    offset = pos + len(buf)
    out: list[Commit] = []
    for line in reversed(lines):
        offset -= len(line) + 1
        commit = parse_line(line, log.session, offset)
        if commit is None:
            raise log._damage(log._bytes(), offset, "its id does not verify")
        if out and (out[-1].parent != commit.id or out[-1].seq != commit.seq + 1):
            raise log._damage(log._bytes(), out[-1].offset, "it does not follow the line before it")
        out.append(commit)
    out.reverse()
    if out and out[0].offset == 0 and (out[0].parent is not None or out[0].seq != 1):
        raise log._damage(log._bytes(), 0, "the first commit has a parent")
    return out
