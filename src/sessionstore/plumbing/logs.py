"""Per-session commit logs: `logs/<session>.jsonl`, one hash-chained commit per line.

Each line is one commit (`commits`: its canonical JSON and verified id); `parent` names the commit
before it, so a log is a hash chain like git's history. The log only grows.

Replay state: a commit with `blobs` is a *reset point* (compaction, checkout, fork): its state is the
concatenation of those blobs. Any other commit adds its `blob` to its parent's state. So loading reads
the log backwards to the newest reset point and never further: O(messages since the last reset).

Torn tail: only a last line WITHOUT its newline is what a crash mid-append leaves (DESIGN §2).
Readers ignore it; the next writer truncates it under the session lock. A newline-terminated line
whose id does not verify is damage wherever it is, the last line included: `CorruptLogError`, never
skipped and never cut. So is a last line that lacks its newline but would verify without its last
byte (a flipped newline, not a crash). A log holding git's conflict markers (`<<<<<<<`, `=======`,
`>>>>>>>`) is `MergeConflictError`: two clones appended to one session, and `session fsck --repair`
splits it into both sessions.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CorruptLogError, StaleSessionError
from .commits import Commit, from_body, parse_line
from .fsutil import append_durable, read_regular, truncate_durable
from .storedir import StoreDir

_HEAD_READ = 1 << 16
"""Bytes `head()` reads from the end of a log: many commit lines, whatever the log's length."""


_MARKERS = (b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||")
"""How git's merge starts the lines it adds to a conflicted text file."""


class MergeConflictError(CorruptLogError):
    """A log holding git conflict markers: two clones appended to one session (DESIGN §2)."""


_MARKER_LINE = re.compile(rb"(?m)^(<<<<<<<|=======|>>>>>>>|\|\|\|\|\|\|\|)(?: [^\n]*)?\r?$")


def is_conflict_marker(line: bytes) -> bool:
    """True for a line git's merge writes around a conflict (`<<<<<<< HEAD`, `=======`, ...)."""
    return line.startswith(_MARKERS) and _MARKER_LINE.fullmatch(line) is not None


def _valid_end(data: bytes) -> int:
    """The length of `data` without a torn tail (a last line without its newline)."""
    return len(data) if data.endswith(b"\n") or not data else data.rfind(b"\n") + 1


class Log:
    """Reader and (locked) writer of one session's log."""

    def __init__(self, logs: Path | StoreDir, session: str) -> None:
        self.session = session
        self.home = logs if isinstance(logs, StoreDir) else StoreDir(logs.parent) / logs.name
        """The directory the log is in (`logs/`; a trash entry's for a removed one), checked by every
        use (`storedir`)."""
        self._file = f"{self.home.text}/{session}.jsonl"  # `head` opens it: no Path needed
        self._appended: tuple[int, bytes, str] | None = None
        """(offset, bytes, id) of the line this object appended last: the next append's head check
        compares the bytes on disk with it instead of parsing and hashing that line again."""

    @property
    def path(self) -> Path:
        """The log file's path, once its directory is checked (`StorePathError` if it is linked)."""
        self.home.check()
        return Path(self._file)

    def exists(self) -> bool:
        return self.path.is_file()

    def _open(self) -> int:
        """A read-only descriptor of the log, never through a link (`FileNotFoundError` if absent)."""
        self.home.check()
        try:
            return os.open(self._file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise
        except OSError:
            self._bytes()  # a symlink or a FIFO: the regular-file check names it
            raise

    def _bytes(self) -> bytes:
        self.home.check()
        try:
            return read_regular(self.path, what=f"log of session {self.session!r}")
        except FileNotFoundError:
            return b""

    def _damage(self, data: bytes, offset: int, why: str) -> CorruptLogError:
        if conflict := self._conflict(data):
            return conflict
        lineno = data.count(b"\n", 0, offset) + 1
        return CorruptLogError(
            f"log of session {self.session!r} is damaged at line {lineno} ({why}): restore "
            f"{self.path} from git or a backup; `session fsck` lists every problem"
        )

    def _conflict(self, data: bytes) -> MergeConflictError | None:
        """The merge-conflict error if `data` holds a git conflict marker line, else None."""
        found = _MARKER_LINE.search(data)
        if found is None:
            return None
        lineno = data.count(b"\n", 0, found.start()) + 1
        return MergeConflictError(
            f"log of session {self.session!r} holds a git merge conflict (line {lineno}: "
            f"{found[1].decode()}): run `session fsck --repair` to split it into {self.session!r} (ours) "
            f"and {self.session + '-<id>'!r} (theirs); nothing is lost"
        )

    def _lines_backward(self, data: bytes) -> Iterator[tuple[int, bytes, bool]]:
        """(offset, line, is_last) from the end; a last line with no newline is torn and skipped."""
        end = len(data)
        last = True
        if end and not data.endswith(b"\n"):
            start = data.rfind(b"\n") + 1
            torn = data[start:]
            if len(torn) > 1 and parse_line(torn[:-1], self.session, start) is not None:
                raise self._damage(data, start, "its newline was overwritten: this is no crash")
            if is_conflict_marker(torn):
                raise self._damage(data, start, "a merge conflict")
            end = start  # torn: no newline; the line before it is whole data
            last = False
        while end > 0:
            start = data.rfind(b"\n", 0, end - 1) + 1
            yield start, data[start : end - 1], last
            last = False
            end = start

    def scan(
        self, *, since_reset: bool, end: int | None = None, data: bytes | None = None
    ) -> tuple[list[Commit], int]:
        """Commits oldest first (all, or from the newest reset point) and the valid byte length.

        `end` stops the scan at a byte offset (the end of an earlier commit's line). The chain is
        verified over every commit returned; only a last line without its newline is a torn tail
        (ignored: the valid length excludes it). Any line that does not verify is `CorruptLogError`
        (`MergeConflictError` for git's conflict markers). `data` scans those bytes instead of the
        file (fsck checks a log it is about to write).
        """
        if data is None and end is None and since_reset:
            found = self._since_reset_from_end()
            if found is not None:
                return found
        if data is None:
            data = self._bytes()
        if end is not None:
            data = data[:end]
        out = self._walk(data, 0, since_reset=since_reset)
        if out and out[0].offset == 0 and (out[0].parent is not None or out[0].seq != 1):
            raise self._damage(data, 0, "the first commit has a parent")
        return out, _valid_end(data)

    def _walk(self, data: bytes, base: int, *, since_reset: bool) -> list[Commit]:
        """The commits of `data` (the log's bytes from offset `base` to its end, starting at a line),
        oldest first, back to the newest reset point when `since_reset`; the chain verified."""
        out: list[Commit] = []
        for offset, line, _ in self._lines_backward(data):
            commit = parse_line(line, self.session, base + offset)
            if commit is None:
                raise self._damage(data, offset, "its id does not verify")
            if out and (out[-1].parent != commit.id or out[-1].seq != commit.seq + 1):
                raise self._damage(data, out[-1].offset - base, "it does not follow the line before it")
            out.append(commit)
            if since_reset and commit.is_reset:
                break
        out.reverse()
        return out

    def _since_reset_from_end(self) -> tuple[list[Commit], int] | None:
        """`scan(since_reset=True)` reading back from the end of the file only as far as the newest
        reset point (64 KiB, then 8x as much each time): what reopening a session costs is the lines
        since it, not the log's length. None when the whole file is to be read instead: it is no
        larger than the window, the window holds no reset point, or a line in it does not verify (the
        whole-file scan names the damage with its line number)."""
        try:
            fd = self._open()
        except FileNotFoundError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None  # the whole-file read names what it is
            window = _HEAD_READ
            while window < st.st_size:
                start = st.st_size - window
                data = os.pread(fd, window, start)
                cut = data.find(b"\n") + 1  # the bytes before the first newline belong to an earlier line
                if len(data) != window:
                    return None  # the file shrank under us (a torn tail cut): read it whole
                if cut:
                    try:
                        out = self._walk(data[cut:], start + cut, since_reset=True)
                    except CorruptLogError:
                        return None
                    if out and out[0].is_reset:
                        return out, start + cut + _valid_end(data[cut:])
                window *= 8
        finally:
            os.close(fd)
        return None

    def size(self) -> int:
        """The log's length in bytes (0 when it does not exist)."""
        try:
            return os.lstat(self.path).st_size  # checks logs/ first
        except FileNotFoundError:
            return 0

    def head(self) -> Commit | None:
        """The newest acknowledged commit (cheap: reads back from the end of the file only).

        `CorruptLogError` when the last whole line does not verify (`MergeConflictError` for a
        conflict marker): damage at the end is never taken for a shorter history.
        """
        try:
            fd = self._open()  # one lstat of logs/: a linked one is never read through
        except FileNotFoundError:
            return None
        try:  # one fstat and one pread: `session list` does this for every session
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._bytes()  # names what it is
            size = st.st_size
            start = max(0, size - _HEAD_READ)
            data = os.pread(fd, size - start, start)
        finally:
            os.close(fd)
        if start:
            cut = data.find(b"\n") + 1  # the bytes before the first newline belong to an earlier line
            window = data[cut:] if cut else b""
            for offset, line, _ in self._lines_backward(window):
                commit = parse_line(line, self.session, start + cut + offset)
                if commit is not None:
                    return commit
                break
            data = self._bytes()  # a last line longer than the window, or damage: read it all
        for offset, line, _ in self._lines_backward(data):
            commit = parse_line(line, self.session, offset)
            if commit is not None:
                return commit
            raise self._damage(data, offset, "its id does not verify")
        return None

    def read_at(self, offset: int) -> Commit:
        """The commit whose line starts at `offset` (what a checkpoint ref points at)."""
        with open(self._open(), "rb") as f:
            f.seek(offset)
            line = f.readline()
            size = os.fstat(f.fileno()).st_size
        commit = parse_line(line.rstrip(b"\n"), self.session, offset) if line.endswith(b"\n") else None
        if commit is None:
            if offset >= size:
                raise CorruptLogError(
                    f"the log of session {self.session!r} ends at byte {size}, before byte {offset} that a "
                    f"checkpoint points at: acknowledged commits are missing (the log was truncated); "
                    f"restore {self.path} from git or a backup"
                )
            raise CorruptLogError(
                f"no commit at byte {offset} of the log of session {self.session!r}: run `session fsck`"
            )
        return commit

    def extend(self, lines: bytes, expected: Commit | None, *, sync: bool = True) -> int:
        """Append whole commit lines after `expected` (caller holds the session lock); returns the offset
        they start at, once they are synced (with `sync=False`: written, not synced; the caller makes
        them durable with `fsutil.filesystem_sync` before it reports them, as `session pull` does for
        a batch of sessions).

        Checks that the on-disk head is still `expected` (else `StaleSessionError`), truncates a torn
        tail left by a crash, then appends and syncs. The caller has built or verified `lines` to chain
        after `expected`: `append` for one new line, `session pull` for a remote's lines byte for byte.
        """
        self.home.check()
        appended, self._appended = self._appended, None
        size = self.size()
        want = expected.end if expected else 0
        if size < want or (expected and not self._is_on_disk(expected, appended)):
            raise self._stale()  # names damage first, if that is what moved the head
        if size > want:
            with open(self._open(), "rb") as f:
                f.seek(want)
                rest = f.read()
            if b"\n" in rest:  # a whole line follows ours: another writer's commit, or damage
                raise self._stale()  # another writer moved on, or damage (named first)
            truncate_durable(self._file, want)  # torn tail from a crash: not data
        return append_durable(self._file, lines, sync=sync)

    def append(self, line: bytes, body: dict[str, Any], expected: Commit | None) -> Commit:
        """Append one commit line after `expected` (see `extend`); returns the acknowledged commit."""
        offset = self.extend(line, expected)
        self._appended = (offset, line, body["id"])
        return from_body(body, session=self.session, offset=offset, size=len(line))

    def _is_on_disk(self, commit: Commit, appended: tuple[int, bytes, str] | None) -> bool:
        """Whether `commit`'s line is on disk where it was, whole, its id verifying (and the newline
        that ends the line before it is there too).

        The line this object appended last (`appended`) is compared byte for byte: those bytes were
        built with that id, so equal bytes verify without parsing and hashing them again (a
        conversation's line carries its whole record). Any other line is parsed and its id checked."""
        before = 1 if commit.offset > 0 else 0
        with open(self._open(), "rb") as f:
            f.seek(commit.offset - before)
            line = f.read(commit.size + before)
        if before and not line.startswith(b"\n"):
            return False
        line = line[before:]
        if appended is not None and appended == (commit.offset, line, commit.id):
            return True
        parsed = parse_line(line.rstrip(b"\n"), self.session, commit.offset) if line.endswith(b"\n") else None
        return parsed is not None and parsed.id == commit.id

    def _stale(self) -> StaleSessionError:
        """StaleSessionError, unless the log is damaged or conflicted: then that error is raised."""
        self.scan(since_reset=False)
        return StaleSessionError(
            f"session {self.session!r} changed on disk since it was loaded: reload it "
            "(store.session(name)) and retry"
        )

    def torn_tail(self) -> bytes:
        """The bytes after the last newline (a crash's unfinished line), b"" if none."""
        data = self._bytes()
        return data[data.rfind(b"\n") + 1 :]

    def repair_tail(self) -> int:
        """Truncate a torn tail (caller holds the lock); the number of bytes cut (0: nothing).

        Only a last line without its newline is cut; `scan` raises first on any other damage.
        """
        _, valid_end = self.scan(since_reset=False)
        size = self.size()
        if size > valid_end:
            truncate_durable(self._file, valid_end)
            return size - valid_end
        return 0

    def remove(self) -> None:
        os.unlink(self.path)  # checks logs/ first


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
        fd = log._open()
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
