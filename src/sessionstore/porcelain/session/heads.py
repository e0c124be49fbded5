"""The heads cache, `index/sessions.json`: what `session list` shows of every session, without
reading thousands of logs (issue 16 item 5).

Derived from the logs and checked against them on every use (see `HeadsCache`); `session fsck`
checks it and `--repair` rebuilds it. `infos` is the listing built on it, `listing` the same with a
caller's precomputed cells per session (the CLI's rendered columns) instead of the head commits,
`memo` a caller's value of a whole listing, kept while no log or refs directory changes.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.collector import paused_gc
from sessionstore.plumbing.commits import Commit, parse_line
from sessionstore.plumbing.fsutil import atomic_replace, check_store_dir, fsync_dir, read_regular
from sessionstore.porcelain.session.heads_file import (
    ENTRY_ERRORS,
    HEADS_FILE,
    Snapshot,
    cached_head,
    encode,
    head_line,
)
from sessionstore.porcelain.session.layout import SessionInfo, StoreLayout
from sessionstore.porcelain.session.log_stats import count_checkpoints, log_stats, ref_dirs, refs_key, stamp

Derive = Callable[[StoreLayout, str], str]
Titler = Callable[[StoreLayout, str, bytes, bool], "tuple[str, int] | None"]
"""`naming.title_from_start`: a session's derived title from its log's first bytes (True: they are
the whole log), with how many of those bytes it depends on (-1: also on lines still to come); None
when it cannot be trusted now (a blob it needs is missing or damaged): shown as '', never cached."""
Cells = Callable[[Commit | None], list[Any]]
"""A pure function of a head commit (None: an empty log) and of what its tag names, giving
JSON values: `listing` caches its result with the head, so a listing computes it once per change."""
Row = tuple[str, int, "str | None", list[Any]]
"""(name, checkpoints, title, cells) of one session, as `listing` returns it."""
Memo = Callable[[list[Row]], Any]
"""A function of a whole listing's rows alone giving a JSON value (`HeadsCache.memo`)."""

_RACY_NS = 2_000_000_000
"""A log changed this recently may change again within its mtime's granularity: not cached yet."""
_MAX_CACHED_LINE = 4096
"""Longer head lines (a reset point's state) are read from the log each time, not copied here."""


def infos(
    layout: StoreLayout, derive: Derive | None = None, *, titler: Titler | None = None
) -> list[SessionInfo]:
    """`info` of every session, sorted by name (with `derive`'s value as `title`).

    What `session list` needs on a store of thousands: one listing of logs/ with a stat of each, and
    the heads cache for every log whose (size, mtime, ctime, inode) it recorded; only the others are
    read. Exactly what reading every head would give.
    """
    return HeadsCache(layout).infos(derive, titler=titler)


class HeadsCache:
    """`index/sessions.json`: each session's row (its log's (size, mtime_ns, ctime_ns, inode), its
    refs directory's (mtime_ns, inode) and checkpoint count, derived title, the caller's cells and the
    title's key: how many of the log's first bytes it came from and their sha256, so it outlives a
    change that leaves them) and its head commit, like git's index. Derived data, never trusted
    blindly:

    - an entry is used only while the log's key is unchanged and was not changing when it was read
      (mtime at least `_RACY_NS` before the read, git's "racily clean" rule); every other log is read;
    - the file is a header (the format, the commit fields, the sha256 of each part), the memo (see
      `memo`) and the rows as one JSON line each, then one JSON line per row with its head: a memo
      that stands hashes and parses nothing else, a listing of cells the rows alone. Damage (a
      flipped byte, a torn write) makes a part empty, never an error, and the next listing
      rewrites it;
    - cells are used only under the tag they were computed for (the caller names everything besides
      the head they depend on: settings, the format of its columns);
    - it is rewritten (temp, fsync, rename, fsync the directory) only when an entry changed, and not
      at all when the store is read-only; two listings at once both write a valid file.

    `check` compares it with the logs for `session fsck`; `rebuild` rewrites it from them.
    """

    def __init__(self, layout: StoreLayout) -> None:
        self.layout = layout
        self.path = layout.root / HEADS_FILE

    # -- the file -----------------------------------------------------------------------------------

    def load(self) -> dict[str, list[Any]]:
        """The cached rows by name, or {} when the file is missing, damaged (in any part) or not in
        this format."""
        snapshot = self._read()
        return snapshot.rows if snapshot.heads() is not None else {}

    def _read(self) -> Snapshot:
        with suppress(OSError, SessionStoreError):
            check_store_dir(self.path.parent)
            return Snapshot(read_regular(self.path, what=str(HEADS_FILE)))
        return Snapshot(b"")

    def save(self, tag: str | None, rows: dict[str, list[Any]], heads: list[bytes], memo: Any = None) -> None:
        """Write `memo`, `rows` (cells under `tag`) and their heads, one JSON line each in the rows'
        order."""
        data = encode(memo, tag, rows, heads)
        directory = self.path.parent
        check_store_dir(directory)
        if not directory.is_dir():
            directory.mkdir()
            fsync_dir(self.layout.root)
        if not (directory / ".gitignore").exists():  # stores made before GITIGNORE listed index/
            atomic_replace(directory / ".gitignore", b"*\n")
        atomic_replace(self.path, data)

    # -- listings -----------------------------------------------------------------------------------

    def infos(
        self, derive: Derive | None, *, cached: bool = True, titler: Titler | None = None
    ) -> list[SessionInfo]:
        """Every session's info (see `StoreLayout.infos`), then the cache rewritten if it changed;
        titles by `titler` if given, else by `derive`, else none."""
        with paused_gc():
            titler = titler or _titler_of(derive)
            rows, heads, _ = _walk(self, titler, None, None, cached=cached, with_heads=True)
            return [_info(SessionInfo, (r[0], h, r[1], r[2])) for r, h in zip(rows, heads, strict=True)]

    def listing(self, derive: Titler | None, cells: Cells, tag: str) -> list[Row]:
        """Every session's (name, checkpoints, title, cells), sorted by name, where cells is
        `cells(head)` computed for this head under `tag` (from the cache when it was): no commit is
        rebuilt for a session the cache holds. The cache is rewritten if it changed."""
        with paused_gc():
            return _walk(self, derive, cells, tag, cached=True, with_heads=False)[0]

    def memo(self, derive: Titler, cells: Cells, tag: str, make: Memo) -> tuple[list[str], Any]:
        """The sessions' names and `make(self.listing(derive, cells, tag))`, remembered: while every
        log and refs directory is exactly as when it was made (the same names, each with the same
        key: one stat each, no row parsed), the remembered value is returned. Made again after any
        change, and remembered only when every row was settled (see `_RACY_NS`): `make` must be a
        function of the rows and of what `tag` names alone."""
        with paused_gc():
            old = self._read()
            known = old.memo
            stats: dict[str, os.stat_result] | None = {} if known is None else None  # no memo to hit
            now = stamp(self.layout.logs_dir, self.layout.refs.dir, stats)
            if known is not None and known[0] == tag and known[1] == now:
                return known[2], known[3]
            rows, _, value = _walk(
                self, derive, cells, tag, cached=True, with_heads=False, make=make, old=old, taken=now,
                stats=stats,
            )  # fmt: skip
            return [row[0] for row in rows], value

    # -- fsck ---------------------------------------------------------------------------------------

    def check(self) -> list[str]:
        """What is wrong with the cache (empty when it agrees with the logs, or is absent): for fsck.

        Damage, and any entry that would be used (its log's key unchanged) for another head or
        checkpoint count than the log's own. Entries for changed or removed logs are not problems:
        they are never used.
        """
        if not self.path.exists():
            return []
        fix = "`session fsck --repair` rebuilds it (it is derived from the logs)"
        snapshot = self._read()
        heads = snapshot.heads()
        if not snapshot.valid or heads is None or (snapshot.memo is None and snapshot.damaged):
            return [f"{HEADS_FILE} is damaged (its checksum does not match its contents): {fix}"]
        position = {name: i for i, name in enumerate(snapshot.rows)}
        layout = self.layout
        problems = []
        for name, st in log_stats(layout.logs_dir):
            row = snapshot.rows.get(name)
            if not _same_log(row, st):
                continue
            try:
                head = layout.log(name).head()
            except SessionStoreError:
                continue  # the log's own check names it
            refs = refs_key(layout.refs.dir, name)
            counted = count_checkpoints(layout.refs.dir, name) if refs is not None else 0
            if head != cached_head(heads[position[name]]):
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached at another head than its log's: {fix}"
                )
            elif row[4] == refs and row[5] is not None and row[5] != counted:  # type: ignore[index]
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached with {row[5]} checkpoints, "  # type: ignore[index]
                    f"its refs hold {counted}: {fix}"
                )
        return problems

    def rebuild(self) -> None:
        """Rewrite the cache from the logs alone (`session fsck --repair`)."""
        self.path.unlink(missing_ok=True)
        self.infos(None, cached=False)


def _titler_of(derive: Derive | None) -> Titler | None:
    """A `Derive` as a `Titler` whose titles depend on the whole log (kept while it is unchanged)."""
    if derive is None:
        return None
    return lambda layout, name, start, whole: (derive(layout, name), -1)


def _walk(
    cache: HeadsCache,
    derive: Titler | None,
    cells: Cells | None,
    tag: str | None,
    *,
    cached: bool,
    with_heads: bool,
    make: Memo | None = None,
    old: Snapshot | None = None,
    taken: str | None = None,
    stats: dict[str, os.stat_result] | None = None,
) -> tuple[list[Row], list[Commit | None], Any]:
    """One pass over every log (see `HeadsCache.infos`, `.listing` and `.memo`): the rows, with
    `with_heads` each session's head commit, with `make` its value of the rows, remembered under the
    stamp `taken` (`logscan.stamp`, taken before: older than what is read, never newer) when every
    row was settled; then the cache rewritten when an entry (or the memo) changed. `stats`: the
    logs' stats `stamp` kept when it took `taken` (not taken again).

    Runs once per session, 10,000 times in a big store: a row the cache holds complete (its log's
    key unchanged, its refs' too, its title and cells there) costs one tuple, and no head line is
    touched."""
    layout = cache.layout
    if old is None:
        old = cache._read() if cached else Snapshot(b"")
    rows = old.rows
    if cells is None:
        tag = old.tag  # no cells made or used: those kept keep their tag
    reuse = old.tag == tag and not with_heads  # a complete hit needs nothing more
    out: list[Row] = []
    heads: list[Commit | None] = []
    new: dict[str, list[Any]] = {}
    fresh: dict[str, Commit | None] = {}  # the heads read from the logs this time
    with_refs = ref_dirs(layout.refs.dir)
    changed = False
    # Logs (and refs) last changed before `settled` are no longer "racily clean": cacheable. Taken
    # before anything is listed, so a change during the listing always counts as recent.
    settled = time.time_ns() - _RACY_NS
    settled_all = True
    untrusted = False
    for name, st in log_stats(layout.logs_dir, rows, stats):
        refs = refs_key(layout.refs.dir, name) if name in with_refs else None
        row: Any = rows.get(name)
        hit = _same_log(row, st)
        if hit and reuse and row[4] == refs and row[7] is not None and (derive is None or row[6] is not None):
            # complete: its key was settled when stored, so it still is; nothing changes
            out.append((name, 0 if refs is None else row[5], None if derive is None else row[6], row[7]))
            new[name] = row
            continue
        head: Any = _MISS
        start: bytes | None = None
        if not hit:
            head, start, whole = _read_log(layout, name)
            fresh[name] = head
        elif with_heads:
            head = old.head(layout, name)
        if with_heads:
            heads.append(head)
        key = None
        if derive is None:
            title = None
        elif hit and row[6] is not None:
            title, key = row[6], row[8]
        else:
            if start is None:
                start, whole = _read_start(layout, name)
            title, key = _title(layout, name, row, start, whole, derive)
            if title is None:  # not to be trusted now: shown as none, kept as none
                untrusted = True
                settled_all = False
        if refs is None:
            checkpoints = 0
        elif hit and row[4] == refs and row[5] is not None:
            checkpoints = row[5]
        else:
            checkpoints = count_checkpoints(layout.refs.dir, name)
        if hit and old.tag == tag and row[7] is not None:
            made = row[7]
        elif cells is not None:
            made = cells(old.head(layout, name) if head is _MISS else head)
        else:
            made = None
        out.append((name, checkpoints, "" if untrusted else title, made))
        untrusted = False
        if st.st_mtime_ns > settled or (
            head is not _MISS and head is not None and head.size > _MAX_CACHED_LINE
        ):
            settled_all = False  # nothing remembered of this listing
            continue  # read again next time
        if refs is not None and refs[0] > settled:
            refs, settled_all = None, False  # its count is not cached yet
        counted = checkpoints if refs is not None else None
        if derive is None and hit:
            title, key = row[6], row[8]  # kept as they were
        if hit and row[4] == refs and row[5] == counted and row[6] == title and row[7] is made:
            new[name] = row  # unchanged: no copy, and no deep comparison at the end
            continue
        new[name] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, refs, counted, title, made, key]
        changed = True
    value = memo = None
    if make is not None and taken is not None and settled_all and out:  # remembered
        value = make(out)
        memo = [tag, taken, [row[0] for row in out], value]
    renew = make is not None and (memo is not None or old.memo is not None)  # `memo` found it stale
    if changed or len(new) != len(rows) or old.damaged or (new and tag != old.tag) or renew:
        lines = [head_line(fresh[name]) if name in fresh else old.line(layout, name) for name in new]
        with suppress(OSError, SessionStoreError, TypeError):  # a read-only store still lists
            cache.save(tag, new, lines, memo if make is not None else old.memo)
    if make is not None and value is None:
        value = make(out)
    return out, heads, value


def _read_log(layout: StoreLayout, name: str) -> tuple[Commit | None, bytes, bool]:
    """The head of `name`'s log, its first bytes (up to `_START` of them) and whether those are the
    whole log: one read from the start serves both when the log is that short (a verified last
    line); any other case, damage included, is `Log.head`'s (its errors are the listing's)."""
    start, whole = _read_start(layout, name)
    if whole and start.endswith(b"\n"):
        at = start.rfind(b"\n", 0, len(start) - 1) + 1
        head = parse_line(start[at:-1], name, at)
        if head is not None:
            return head, start, whole
    return layout.log(name).head(), start, whole


def _read_start(layout: StoreLayout, name: str) -> tuple[bytes, bool]:
    """Up to `_START` bytes from the start of `name`'s log and whether they are all of it; (b"",
    False) when it cannot be opened as a regular file here (`Log.head` then says why)."""
    try:
        fd = os.open(f"{layout.logs_dir}/{name}.jsonl", _OPEN)
    except OSError:
        return b"", False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b"", False
        data = os.pread(fd, min(st.st_size, _START), 0)  # no 64 KiB buffer made for 300 bytes
    finally:
        os.close(fd)
    return data, len(data) == st.st_size


def _title(
    layout: StoreLayout, name: str, row: Any, start: bytes, whole: bool, derive: Titler
) -> tuple[str | None, Any]:
    """The derived title of a session whose cached row (if any) does not hold it for this log: the
    row's own when the bytes it was derived from are still the log's first (a log that only grew,
    a compaction), else `derive`'s; with its key ([bytes used, their sha256]; None: not kept past a
    change of the log)."""
    if row is not None:  # no row (a new session, a rebuild): nothing to keep, no exception raised
        with suppress(*ENTRY_ERRORS):
            used, digest = row[8]
            if row[6] is not None and 0 < used <= len(start) and _digest(start, used) == digest:
                return row[6], row[8]
    found = derive(layout, name, start, whole)
    if found is None:
        return None, None
    title, used = found
    return title, [used, _digest(start, used)] if 0 < used <= len(start) else None


def _digest(data: bytes, end: int) -> str:
    return hashlib.sha256(memoryview(data)[:end]).hexdigest()


_START = 1 << 16
"""Bytes read from the start of a log whose cached row misses (the head's line, when the log is
that short, and the first lines a derived title comes from)."""
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_MISS: Any = object()
_info = tuple.__new__
"""`SessionInfo(...)` without the named tuple's Python-level `__new__` (the same tuple)."""


def _same_log(row: Any, st: os.stat_result) -> bool:
    """Whether `row` was cached for the log in the state `st` describes: the same size, mtime, ctime
    and inode (a rename or `os.utime` moves the ctime, a replacement the inode); False for no row."""
    if row is None:  # a new session, or a rebuild: no exception raised per session
        return False
    try:
        return (
            row[0] == st.st_size
            and row[1] == st.st_mtime_ns
            and row[2] == st.st_ctime_ns
            and row[3] == st.st_ino
        )
    except ENTRY_ERRORS:
        return False
