"""The conversation index: which conversations changed when, so listing the newest costs O(limit).

`index/conversations.jsonl` in the store holds one line per save or delete of a `FileConversationStore`
conversation, in the order they were made: `{"n": session, "u": updated_at (commit time format), "s":
scope, "h": commit id, "m": the greatest "u" of this line and every line before it}` (a delete has
`"d": 1` and no "s"/"h"). It is a *hint*, never the truth: the truth is each log's head line, which
carries the whole record. So:

- `newest` walks the index back from its end, takes each session once (its newest line), reads that
  session's head line (one `pread`), and returns the record found there, in `updated_at` order. It stops
  as soon as it holds `limit` records and the next line's "m" is older than the `limit`-th of them: no
  earlier line can name a newer record. Saves usually arrive in time order, so that is after about
  `limit` lines, whatever the number of conversations.
- A writer appends its line *before* its commit line (under the conversation's lock, and the index's
  own `flock` so "m" stays a running maximum), so every landed commit has a line at or after its own.
  A save that fails after its line leaves a line whose commit never landed: the head check then finds
  the older record, and its real time is what orders it.
- The line is not fsynced on its own (it would add a fourth sync to every save). On ext4's default
  `data=ordered` the log line's sync commits it too; elsewhere a crash may lose it, and then the
  conversation is missing from the lists until its next save or `session fsck --repair`, which calls
  `check_index`/`rebuild_index` (both derive the index from the logs alone).

An index that does not exist yet (a store written before it, or deleted) is rebuilt from the logs on
first use. It lives under `index/`, which is derived data: git need not track it. A store on object
storage has no index file: `HintedIndex` lists from the head hints there.
"""

from __future__ import annotations

import fcntl
import heapq
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from ..errors import CorruptLogError
from ..plumbing.commits import Commit
from ..plumbing.fsutil import atomic_replace
from ..porcelain.store import SessionStore
from .conversation_records import RECORD

__all__ = ["INDEX_FILE", "ConversationIndex", "HintedIndex", "check_index", "rebuild_index"]

INDEX_FILE = Path("index") / "conversations.jsonl"
_CHUNK = 1 << 16
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

Current = Callable[[str], "tuple[str, dict[str, Any]] | None"]
"""A session's current conversation: (commit time, record JSON) from its head line, or None."""


class ConversationIndex:
    """The index of one store (see the module docstring)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.home = store.top / INDEX_FILE.parent.name
        """`index/` (checked by every use)."""
        self.path = self.home.path / INDEX_FILE.name
        self._tail: tuple[int, int, str] | None = None
        """(inode, size, "m") of the index just after this object's last append: while the file is
        still that, its last line is that one, and the next append need not read it back."""

    def head_record(self, name: str) -> tuple[str, dict[str, Any]] | None:
        """The truth for session `name`: (time, record JSON) of its head when it is a conversation."""
        try:
            head = self.store.log(name).head()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _conversation(head)

    # -- writing ------------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The index's own lock (held for a read-max-and-append or a rebuild; never for long)."""
        lock = self.home.file(".lock")  # checks index/: the index is only written under this lock
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o666)
        except FileNotFoundError:  # no index/ yet
            self.home.make()
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def note(self, name: str, *, time: str, scope: str | None, commit: str) -> None:
        """Record that session `name` is about to get commit `commit` with this `time` and `scope`."""
        self._append({"n": name, "u": time, "s": scope, "h": commit})

    def note_delete(self, name: str, *, time: str) -> None:
        self._append({"n": name, "u": time, "d": 1})

    def _append(self, entry: dict[str, Any]) -> None:
        with self._locked():
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | _NOFOLLOW)
            except FileNotFoundError:
                self._rebuild_locked()
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | _NOFOLLOW)
            try:
                st = os.fstat(fd)
                tail = self._tail
                if tail is not None and tail[:2] == (st.st_ino, st.st_size):
                    last_m: str | None = tail[2]  # our own line is still the last: no read
                else:
                    last = _last_entry(fd, st.st_size)
                    last_m = last["m"] if last else None
                entry["m"] = max(entry["u"], last_m) if last_m else entry["u"]
                line = orjson.dumps(entry) + b"\n"
                written = os.write(fd, line)
                self._tail = (st.st_ino, st.st_size + written, entry["m"]) if written == len(line) else None
            finally:
                os.close(fd)

    def rebuild(self) -> int:
        """Rewrite the index from the logs (atomically); returns the conversations it lists."""
        with self._locked():
            return self._rebuild_locked()

    def _rebuild_locked(self) -> int:
        entries = sorted(truth(self.store).items(), key=lambda item: item[1][0])
        out, running = [], ""
        for name, (time, record, commit) in entries:
            running = max(running, time)
            line = {"n": name, "u": time, "s": record.get("scope"), "h": commit, "m": running}
            out.append(orjson.dumps(line) + b"\n")
        atomic_replace(self.path, b"".join(out))
        return len(out)

    # -- reading ------------------------------------------------------------------------------------

    def newest(self, scope: str | None, limit: int | None) -> list[dict[str, Any]]:
        """Record JSON of the newest conversations (of `scope`, when given), newest first, at most `limit`."""
        if limit == 0:
            return []
        if not os.path.lexists(self.home.check() / INDEX_FILE.name):
            self.rebuild()
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        times: list[str] = []  # min-heap of the kept records' times: times[0] is the limit-th newest
        seen: set[str] = set()
        for entry in _backward(self.path):
            if limit is not None and len(found) >= limit and entry.get("m", "") < times[0]:
                break  # no line at or before this one names a record newer than the ones kept
            name = entry.get("n")
            if not isinstance(name, str) or name in seen:
                continue
            seen.add(name)
            if scope is not None and not entry.get("d") and entry.get("s") != scope:
                continue
            current = self.head_record(name)
            if current is None or (scope is not None and current[1].get("scope") != scope):
                continue
            found[name] = current
            heapq.heappush(times, current[0])
            if limit is not None and len(times) > limit:
                oldest = heapq.heappop(times)
                found.pop(next(n for n, (t, _) in found.items() if t == oldest))
        ordered = sorted(found.values(), key=lambda item: item[0], reverse=True)
        return [record for _, record in ordered[:limit]]


class HintedIndex:
    """The conversation index of a store on object storage: no index file (it would need a lock
    across machines), the head hints instead (`ObjectBackend.heads`: O(conversations / 1000)
    requests). Each hint is a head's whole line, record included, verified like any commit line; it
    lags its session by the saves still in flight in other processes (this process's own are written
    before it lists). `load` never reads a hint: it reads the commits."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def note(self, name: str, *, time: str, scope: str | None, commit: str) -> None:
        """Nothing to note: the commit's own head hint is what lists it."""

    def newest(self, scope: str | None, limit: int | None) -> list[dict[str, Any]]:
        """Record JSON of the newest conversations (of `scope`, when given), newest first, at most `limit`."""
        from ..plumbing.object_logs import flush_hints

        if limit == 0:
            return []
        flush_hints(timeout=30)
        found = [
            current
            for head, _ in self.store.backend.heads().values()
            if (current := _conversation(head)) is not None
            and (scope is None or current[1].get("scope") == scope)
        ]
        found.sort(key=lambda item: item[0], reverse=True)
        return [record for _, record in found[:limit]]


def _conversation(head: Commit | None) -> tuple[str, dict[str, Any]] | None:
    if head is None or not isinstance(head.extra.get(RECORD), dict):
        return None
    return head.time, head.extra[RECORD]


def truth(store: SessionStore) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Every conversation of the store from its log's head: name -> (time, record JSON, commit id)."""
    out = {}
    for name in store.sessions():
        try:
            head = store.log(name).head()
        except CorruptLogError:
            continue  # fsck names damaged logs on its own
        found = _conversation(head)
        if found is not None and head is not None:
            out[name] = (found[0], found[1], head.id)
    return out


def _last_entry(fd: int, size: int) -> dict[str, Any] | None:
    """The last whole, parsable line of the index open at `fd` (an unparsable tail is skipped)."""
    window = 1024  # an index line is ~200 bytes: one small read, widened only if it holds none
    while True:
        start = max(0, size - window)
        lines = os.pread(fd, size - start, start).split(b"\n")
        for line in reversed(lines[1:] if start else lines):
            if not line:
                continue
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("m"), str):
                return entry
        if not start:
            return None
        window *= 4


def _backward(path: Path) -> Iterator[dict[str, Any]]:
    """The index's entries, newest first, read from the end in 64 KiB steps (bad lines skipped)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        pos = os.fstat(fd).st_size
        rest = b""  # the partial line at the front of what was read so far
        while pos > 0:
            step = min(_CHUNK, pos)
            pos -= step
            data = os.pread(fd, step, pos) + rest
            lines = data.split(b"\n")
            rest = lines[0] if pos > 0 else b""
            for line in reversed(lines[1:] if pos > 0 else lines):
                if not line:
                    continue
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # a line torn by a crash: the logs hold the truth
                if isinstance(entry, dict):
                    yield entry
    finally:
        os.close(fd)


def check_index(store: SessionStore) -> list[str]:
    """What is wrong with the index, compared with the logs (empty when it agrees): for `session fsck`.

    Each problem is one line; `rebuild_index` fixes them all.
    """
    index = ConversationIndex(store)
    path = index.home.check() / INDEX_FILE.name
    if not os.path.lexists(path):
        return []  # built from the logs on first use: nothing can be out of date
    latest: dict[str, dict[str, Any]] = {}
    for entry in _backward(path):
        name = entry.get("n")
        if isinstance(name, str) and name not in latest:
            latest[name] = entry
    problems = []
    fix = "`session fsck --repair` rebuilds it"
    real = truth(store)
    for name, (_, _, commit) in sorted(real.items()):
        entry = latest.get(name)
        if entry is None or entry.get("d"):
            problems.append(f"{INDEX_FILE}: conversation {name!r} is missing: {fix}")
        elif entry.get("h") != commit:
            problems.append(
                f"{INDEX_FILE}: conversation {name!r} is listed at commit {str(entry.get('h'))[:7]}, "
                f"its head is {commit[:7]}: {fix}"
            )
    for name, entry in sorted(latest.items()):
        if name not in real and not entry.get("d"):
            problems.append(f"{INDEX_FILE}: lists {name!r}, which holds no conversation: {fix}")
    return problems


def rebuild_index(store: SessionStore) -> int:
    """Rewrite the index from the logs; returns how many conversations it lists (`fsck --repair`)."""
    return ConversationIndex(store).rebuild()
