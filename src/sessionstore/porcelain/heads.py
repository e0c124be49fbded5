"""The heads cache, `index/sessions.json`: what `session list` shows of every session, without
reading thousands of logs (issue 16 item 5).

Derived from the logs and checked against them on every use (see `HeadsCache`); `session fsck`
checks it and `--repair` rebuilds it. `infos` is the listing built on it.
"""

from __future__ import annotations

import gc
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import fields
from pathlib import Path
from typing import Any

import orjson

from ..errors import SessionStoreError
from ..plumbing.commits import Commit
from ..plumbing.fsutil import atomic_replace, check_store_dir, fsync_dir, read_regular
from ..plumbing.names import is_valid_name
from .layout import SessionInfo, StoreLayout


def infos(layout: StoreLayout, derive: Callable[[StoreLayout, str], str] | None = None) -> list[SessionInfo]:
    """`info` of every session, sorted by name (with `derive`'s value as `title`).

    What `session list` needs on a store of thousands: one listing of logs/ with a stat of each, and
    the heads cache for every log whose (size, mtime, inode) it recorded; only the others are read.
    Exactly what reading every head would give.
    """
    return HeadsCache(layout).infos(derive)


HEADS_FILE = Path("index") / "sessions.json"
_FIELDS = tuple(f.name for f in fields(Commit))
"""A cached head is its commit's fields, `session` included: the dict becomes the rebuilt commit's
own `__dict__` (see `_commit`), so a hit copies nothing."""
_HEADS_MAGIC = b"sessionstore-heads 2 " + ",".join(_FIELDS).encode() + b" "
"""The header names the fields: a cache written for another `Commit` is not in this format (rebuilt),
so entries, written by this module alone and checksummed, need no per-entry check of their keys."""
_RACY_NS = 2_000_000_000
"""A log changed this recently may change again within its mtime's granularity: not cached yet."""
_MAX_CACHED_LINE = 4096
"""Longer head lines (a reset point's state) are read from the log each time, not copied here."""
_ENTRY_ERRORS = (TypeError, IndexError, KeyError, AttributeError)
"""What a malformed entry raises where it is read: a miss, never an error."""


class HeadsCache:
    """`index/sessions.json`: each session's head commit, checkpoint count and derived title, keyed by
    its log's (size, mtime_ns, inode), like git's index. Derived data, never trusted blindly:

    - an entry is used only while the log's key is unchanged and was not changing when it was read
      (mtime at least `_RACY_NS` before the read, git's "racily clean" rule); every other log is read;
    - the file carries the sha256 of its payload: damage (a flipped byte, a torn write) makes it
      empty, never an error, and the next listing rewrites it;
    - it is rewritten (temp, fsync, rename, fsync the directory) only when an entry changed, and not
      at all when the store is read-only; two listings at once both write a valid file.

    `check` compares it with the logs for `session fsck`; `rebuild` rewrites it from them.
    """

    def __init__(self, layout: StoreLayout) -> None:
        self.layout = layout
        self.path = layout.root / HEADS_FILE

    def load(self) -> dict[str, list[Any]]:
        """The cached entries, or {} when the file is missing, damaged or not in this format."""
        return self._read() or {}

    def _read(self) -> dict[str, list[Any]] | None:
        with suppress(OSError, SessionStoreError, orjson.JSONDecodeError, ValueError):
            check_store_dir(self.path.parent)
            data = read_regular(self.path, what=str(HEADS_FILE))
            end = data.find(b"\n")
            payload = memoryview(data)[end + 1 :] if end >= 0 else b""  # no copy of megabytes
            if end >= 0 and data[:end] == _HEADS_MAGIC + hashlib.sha256(payload).hexdigest().encode():
                entries = orjson.loads(payload)
                if isinstance(entries, dict):
                    return entries
        return None

    def save(self, entries: dict[str, list[Any]]) -> None:
        payload = orjson.dumps(entries)
        data = _HEADS_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        directory = self.path.parent
        check_store_dir(directory)
        if not directory.is_dir():
            directory.mkdir()
            fsync_dir(self.layout.root)
        if not (directory / ".gitignore").exists():  # stores made before GITIGNORE listed index/
            atomic_replace(directory / ".gitignore", b"*\n")
        atomic_replace(self.path, data)

    def infos(
        self, derive: Callable[[StoreLayout, str], str] | None, *, cached: bool = True
    ) -> list[SessionInfo]:
        """Every session's info (see `StoreLayout.infos`), then the cache rewritten if it changed."""
        with paused_gc():
            return self._infos(derive, cached=cached)

    def _infos(self, derive: Callable[[StoreLayout, str], str] | None, *, cached: bool) -> list[SessionInfo]:
        # Once per session, 10,000 times in a big store: no key list built for a hit, the commit is
        # its cached dict (`_commit`), the info a bare tuple.
        layout = self.layout
        old = self.load() if cached else {}
        new: dict[str, list[Any]] = {}
        try:
            with_refs = set(os.listdir(layout.refs.dir))
        except FileNotFoundError:
            with_refs = set()
        out = []
        changed = False
        need_title = derive is not None
        # Logs (and refs) last changed before `settled` are no longer "racily clean": cacheable. Taken
        # before anything is listed, so a change during the listing always counts as recent.
        settled = time.time_ns() - _RACY_NS
        for name, st in _log_stats(layout, known=old):
            refs = _refs_key(layout, name) if name in with_refs else None
            entry: Any = old.get(name)
            head = _cached_head(entry, st)
            hit = head is not _MISS and not (need_title and entry[4] is None)
            if not hit:
                head = layout.log(name).head()
            title = (entry[4] if hit else derive(layout, name)) if derive is not None else None
            if refs is None:
                checkpoints = 0
            elif hit and entry[2] == refs:
                checkpoints = entry[3]
            else:
                checkpoints = sum(1 for k in os.listdir(layout.refs.dir / name) if k.isdigit())
            out.append(_info(SessionInfo, (name, head, checkpoints, title)))
            if st.st_mtime_ns > settled or (head is not None and head.size > _MAX_CACHED_LINE):
                continue  # read again next time
            if refs is not None and refs[0] > settled:
                refs = None  # its count is not cached yet
            kept = title if need_title else (entry[4] if hit else None)
            counted = checkpoints if refs is not None else None
            if hit and entry[2] == refs and entry[3] == counted and entry[4] == kept:
                new[name] = entry  # unchanged: no copy, and no deep comparison at the end
                continue
            cached_fields = entry[1] if hit else (_fields(head) if head is not None else None)
            new[name] = [[st.st_size, st.st_mtime_ns, st.st_ino], cached_fields, refs, counted, kept]
            changed = True
        if changed or len(new) != len(old):
            with suppress(OSError, SessionStoreError, TypeError):  # a read-only store still lists
                self.save(new)
        return out

    def check(self) -> list[str]:
        """What is wrong with the cache (empty when it agrees with the logs, or is absent): for fsck.

        Damage, and any entry that would be used (its log's key unchanged) for another head than
        the log's own. Entries for changed or removed logs are not problems: they are never used.
        """
        if not self.path.exists():
            return []
        fix = "`session fsck --repair` rebuilds it (it is derived from the logs)"
        entries = self._read()
        if entries is None:
            return [f"{HEADS_FILE} is damaged (its checksum does not match its contents): {fix}"]
        problems = []
        for name, st in _log_stats(self.layout):
            cached = _cached_head(entries.get(name), st)
            if cached is _MISS:
                continue
            try:
                head = self.layout.log(name).head()
            except SessionStoreError:
                continue  # the log's own check names it
            if head != cached:
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached at another head than its log's: {fix}"
                )
        return problems

    def rebuild(self) -> None:
        """Rewrite the cache from the logs alone (`session fsck --repair`)."""
        self.path.unlink(missing_ok=True)
        self.infos(None, cached=False)


_MISS: Any = object()
_info = tuple.__new__
"""`SessionInfo(...)` without the named tuple's Python-level `__new__` (the same tuple)."""


def _cached_head(entry: Any, st: os.stat_result) -> Commit | None:
    """The head `entry` holds for a log with stat `st` (None: an empty log), or `_MISS` when the
    entry is absent, for another state of the log (size, mtime or inode changed), or malformed."""
    try:
        key = entry[0]
        if key[0] != st.st_size or key[1] != st.st_mtime_ns or key[2] != st.st_ino:
            return _MISS
        return None if entry[1] is None else _commit(entry[1])
    except _ENTRY_ERRORS:
        return _MISS


def _commit(cached: dict[str, Any]) -> Commit:
    """The commit whose fields `cached` holds, with `cached` itself as its `__dict__`: what
    `Commit(**cached)` gives, without the frozen dataclass's 13 `object.__setattr__` calls and
    without a copy (a commit is never changed; the cache is rewritten from the same dicts)."""
    commit = object.__new__(Commit)
    object.__setattr__(commit, "__dict__", cached)
    return commit


def _fields(head: Commit) -> dict[str, Any]:
    """What the cache keeps of `head` (every field, `session` included)."""
    return {k: getattr(head, k) for k in _FIELDS}


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector paused for a block that builds tens of thousands of small containers,
    none of them garbage (a listing of every session): its passes over them would cost more than
    the work itself, as in `codec.decode`. Restored as it was, also on an error."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _log_stats(
    layout: StoreLayout, known: Mapping[str, Any] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """(name, stat) of every session log, in name order: exactly what `sessions` lists (a linked
    log among them is refused when `head` reads it). Names in `known` (the cache's, each checked
    when it was cached) skip the name check. A log removed after the listing is left out.

    Each log is stat'ed as it is reached, relative to the open directory (no path built, and one
    stat result alive at a time: 10,000 of them held at once cost more in fresh memory than the
    stats themselves)."""
    check_store_dir(layout.logs_dir)
    known = known or {}
    try:
        fd = os.open(layout.logs_dir, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return
    try:
        with os.scandir(fd) as entries:
            names = sorted(  # by session name as `sessions` sorts: "a" before "a-b" (not by file name)
                e.name[:-6]
                for e in entries
                if e.name.endswith(".jsonl")
                and (e.name[:-6] in known or is_valid_name(e.name[:-6]))
                and e.is_file()
            )
        for name in names:
            try:
                st = os.stat(f"{name}.jsonl", dir_fd=fd)
            except FileNotFoundError:
                continue
            yield name, st
    finally:
        os.close(fd)


def _refs_key(layout: StoreLayout, name: str) -> list[int] | None:
    try:
        st = os.stat(layout.refs.dir / name)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_ino]
