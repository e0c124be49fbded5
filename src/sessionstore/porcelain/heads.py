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
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import fields
from pathlib import Path
from typing import Any

import orjson

from ..errors import SessionStoreError
from ..plumbing.fsutil import atomic_replace, check_store_dir, fsync_dir, read_regular
from ..plumbing.logs import Commit
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
_HEADS_MAGIC = b"sessionstore-heads 1 "
_RACY_NS = 2_000_000_000
"""A log changed this recently may change again within its mtime's granularity: not cached yet."""
_FIELDS = tuple(f.name for f in fields(Commit) if f.name != "session")
_FIELD_SET = frozenset(_FIELDS)
"""A cached head is its commit's fields: `Commit(**cached, session=name)` is the commit again."""
_MAX_CACHED_LINE = 4096
"""Longer head lines (a reset point's state) are read from the log each time, not copied here."""


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
            header, _, payload = data.partition(b"\n")
            if header == _HEADS_MAGIC + hashlib.sha256(payload).hexdigest().encode():
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
        # Tens of thousands of small containers, none of them garbage: without pausing the cyclic
        # collector, its passes over them cost more than the listing itself (as in codec.decode).
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._infos(derive, cached=cached)
        finally:
            if paused:
                gc.enable()

    def _infos(self, derive: Callable[[StoreLayout, str], str] | None, *, cached: bool) -> list[SessionInfo]:
        layout = self.layout
        old = self.load() if cached else {}
        new: dict[str, list[Any]] = {}
        try:
            with_refs = set(os.listdir(layout.refs.dir))
        except FileNotFoundError:
            with_refs = set()
        out = []
        changed = False
        for name, st in _log_stats(layout, known=old):
            now = time.time_ns()
            key = [st.st_size, st.st_mtime_ns, st.st_ino]
            refs = _refs_key(layout, name) if name in with_refs else None
            entry = old.get(name)
            hit, head = _cached_head(entry, key, name, need_title=derive is not None)
            if not hit:
                head = layout.log(name).head()
            title = (entry[4] if hit else derive(layout, name)) if derive is not None else None
            if refs is None:
                checkpoints = 0
            elif hit and entry[2] == refs:
                checkpoints = entry[3]
            else:
                checkpoints = sum(1 for k in os.listdir(layout.refs.dir / name) if k.isdigit())
            out.append(SessionInfo(name, head, checkpoints, title))
            if now - st.st_mtime_ns < _RACY_NS or (head is not None and head.size > _MAX_CACHED_LINE):
                continue  # read again next time
            if refs is not None and now - refs[0] < _RACY_NS:
                refs = None  # its count is not cached yet
            kept = title if derive is not None else (entry[4] if hit else None)
            counted = checkpoints if refs is not None else None
            if hit and entry[2] == refs and entry[3] == counted and entry[4] == kept:
                new[name] = entry  # unchanged: no copy, and no deep comparison at the end
                continue
            fields = entry[1] if hit else ({k: getattr(head, k) for k in _FIELDS} if head else None)
            new[name] = [key, fields, refs, counted, kept]
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
            entry = entries.get(name)
            hit, cached = _cached_head(entry, [st.st_size, st.st_mtime_ns, st.st_ino], name, need_title=False)
            if not hit:
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


def _cached_head(entry: Any, key: list[int], name: str, *, need_title: bool) -> tuple[bool, Commit | None]:
    """(True, head) when `entry` is valid for a log with `key` (and holds a title if one is needed)."""
    try:
        if entry[0] != key or (need_title and entry[4] is None):
            return False, None
        fields = entry[1]
        if fields is None:
            return True, None
        if fields.keys() != _FIELD_SET:
            return False, None
        # `Commit(**fields, session=name)` without the frozen dataclass's 13 `object.__setattr__`
        # calls (7 us each time on 10,000 heads): the same instance state, set the way pickle does.
        commit = object.__new__(Commit)
        commit.__dict__.update(fields, session=name)
        return True, commit
    except (TypeError, IndexError, KeyError, AttributeError):
        return False, None


def _log_stats(
    layout: StoreLayout, known: Mapping[str, Any] | None = None
) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of every session log, sorted by name: exactly what `sessions` lists (a linked
    log among them is refused when `head` reads it). Names in `known` (the cache's, each checked
    when it was cached) skip the name check."""
    check_store_dir(layout.logs_dir)
    known = known or {}
    try:
        with os.scandir(layout.logs_dir) as entries:
            found = [
                (e.name[:-6], e.stat())
                for e in entries
                if e.name.endswith(".jsonl")
                and (e.name[:-6] in known or is_valid_name(e.name[:-6]))
                and e.is_file()
            ]
    except FileNotFoundError:
        return []
    return sorted(found, key=lambda item: item[0])


def _refs_key(layout: StoreLayout, name: str) -> list[int] | None:
    try:
        st = os.stat(layout.refs.dir / name)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_ino]
