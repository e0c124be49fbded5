"""The heads cache, `index/sessions.json`: what `session list` shows of every session, without
reading thousands of logs (issue 16 item 5).

Derived from the logs and checked against them on every use (see `HeadsCache`); `session fsck`
checks it and `--repair` rebuilds it. `infos` is the listing built on it, `listing` the same with a
caller's precomputed cells per session (the CLI's rendered columns) instead of the head commits,
`memo` a caller's value of a whole listing, kept while no log or refs directory changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from sessionstore.errors import SessionStoreError, StorePathError
from sessionstore.plumbing.collector import paused_gc
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.fsutil import atomic_replace, read_regular
from sessionstore.porcelain.session.heads_file import (
    HEADS_FILE,
    HeadRow,
    Snapshot,
    cached_head,
    encode,
    entries_of,
    head_line,
    row_of,
    title_key,
)
from sessionstore.porcelain.session.layout import SessionInfo, StoreLayout
from sessionstore.porcelain.session.log_marks import mark_of, next_mark
from sessionstore.porcelain.session.log_stats import (
    count_checkpoints,
    head_in,
    log_stats,
    read_start,
    ref_dirs,
    refs_key,
    stamp,
)

Derive = Callable[[StoreLayout, str], str]
Titler = Callable[[StoreLayout, str, bytes, bool, "Commit | None"], "tuple[str, int] | None"]
"""`naming.title_from_start`: a session's derived title from its log's first bytes (True: they are
the whole log) and its head when this listing read and verified it (else None), with how many of
those bytes it depends on (-1: also on lines still to come); None when it cannot be trusted now (a
blob it needs is missing or damaged): shown as '', never cached."""
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
    refs directory's (mtime_ns, inode) and checkpoint count, derived title, the caller's cells, the
    title's key: how many of the log's first bytes it came from and their sha256, so it outlives a
    change that leaves them, and the log's high mark, `log_marks`) and its head commit, like git's
    index. A log too new to cache keeps a row of its mark alone, when it had one (size -1: never a
    hit). Derived data, never trusted blindly:

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
        self.home = layout.top / HEADS_FILE.parent.name
        """`index/` (checked by every use)."""
        self.path = self.home.path / HEADS_FILE.name

    # -- the file -----------------------------------------------------------------------------------

    def load(self) -> dict[str, HeadRow]:
        """The cached entries by name, or {} when the file is missing, damaged (in any part) or not in
        this format."""
        snapshot = self._read()
        if snapshot.heads() is None:
            return {}
        return entries_of(snapshot.rows)

    def _read(self) -> Snapshot:
        self.home.check()  # a linked index/ is refused, never taken for a missing cache
        with suppress(OSError, SessionStoreError):
            return Snapshot(read_regular(self.path, what=str(HEADS_FILE)))
        return Snapshot(b"")

    def save(self, tag: str | None, rows: dict[str, HeadRow], heads: list[bytes], memo: Any = None) -> None:
        """Write `memo`, `rows` (cells under `tag`) and their heads, one JSON line each in the rows'
        order: atomically (a reader sees the old file or the new), not synced (derived data that
        checks itself: a file a power loss cut short reads as damaged and is made again, so the
        listing waits for no disk flush of megabytes)."""
        data = encode(memo, tag, rows, heads)
        directory = self.home.make()
        if not os.path.lexists(directory / ".gitignore"):  # stores made before GITIGNORE listed index/
            atomic_replace(directory / ".gitignore", b"*\n")
        atomic_replace(self.path, data, durable=False)

    # -- listings -----------------------------------------------------------------------------------

    def infos(
        self, derive: Derive | None, *, cached: bool = True, titler: Titler | None = None
    ) -> list[SessionInfo]:
        """Every session's info (see `StoreLayout.infos`), then the cache rewritten if it changed;
        titles by `titler` if given, else by `derive`, else none."""
        with paused_gc():
            old = self._read() if cached else Snapshot(b"")
            walk = _Walk(self, old, titler or _titler_of(derive), with_heads=True)
            walk.run()
            return [
                _info(SessionInfo, (r[0], h, r[1], r[2])) for r, h in zip(walk.rows, walk.heads, strict=True)
            ]

    def listing(self, derive: Titler | None, cells: Cells, tag: str) -> list[Row]:
        """Every session's (name, checkpoints, title, cells), sorted by name, where cells is
        `cells(head)` computed for this head under `tag` (from the cache when it was): no commit is
        rebuilt for a session the cache holds. The cache is rewritten if it changed."""
        with paused_gc():
            walk = _Walk(self, self._read(), derive, cells, tag)
            walk.run()
            return walk.rows

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
            now = stamp(self.layout.logs, self.layout.refs.home, stats)
            if known is not None and known[0] == tag and known[1] == now:
                return known[2], known[3]
            walk = _Walk(self, old, derive, cells, tag)
            value = walk.run(make=make, taken=now, stats=stats)
            return [row[0] for row in walk.rows], value

    # -- fsck ---------------------------------------------------------------------------------------

    def check(self) -> list[str]:
        """What is wrong with the cache (empty when it agrees with the logs, or is absent): for fsck.

        Damage, and any entry that would be used (its log's key unchanged) for another head or
        checkpoint count than the log's own. Entries for changed or removed logs are not problems:
        they are never used.
        """
        if not os.path.lexists(self.home.check() / HEADS_FILE.name):
            return []
        fix = "`session fsck --repair` rebuilds it (it is derived from the logs)"
        snapshot = self._read()
        heads = snapshot.heads()
        if not snapshot.valid or heads is None or (snapshot.memo is None and snapshot.damaged):
            return [f"{HEADS_FILE} is damaged (its checksum does not match its contents): {fix}"]
        position = {name: i for i, name in enumerate(snapshot.rows)}
        layout = self.layout
        problems = []
        with_refs = ref_dirs(layout.refs.home)  # checks refs/checkpoints
        for name, st in log_stats(layout.logs):
            row = row_of(snapshot.rows.get(name))
            if row is None or not row.same_log(st):
                continue
            try:
                head = layout.log(name).head()
            except SessionStoreError:
                continue  # the log's own check names it
            refs = refs_key(layout.refs.home, name) if name in with_refs else None
            counted = count_checkpoints(layout.refs.home, name) if refs is not None else 0
            if head != cached_head(heads[position[name]]):
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached at another head than its log's: {fix}"
                )
            elif row.refs == refs and row.checkpoints is not None and row.checkpoints != counted:
                problems.append(
                    f"{HEADS_FILE}: session {name!r} is cached with {row.checkpoints} checkpoints, "
                    f"its refs hold {counted}: {fix}"
                )
        return problems

    def rebuild(self) -> None:
        """Rewrite the cache from the logs alone (`session fsck --repair`)."""
        (self.home.check() / HEADS_FILE.name).unlink(missing_ok=True)
        self.infos(None, cached=False)


def _titler_of(derive: Derive | None) -> Titler | None:
    """A `Derive` as a `Titler` whose titles depend on the whole log (kept while it is unchanged)."""
    if derive is None:
        return None
    return lambda layout, name, start, whole, head: (derive(layout, name), -1)


class _Walk:
    """One pass over every log (see `HeadsCache.infos`, `.listing` and `.memo`): `rows`, with
    `with_heads` each session's head commit in `heads`, and the cache's entries for the next pass;
    then the cache rewritten when an entry (or the memo) changed.

    Runs once per session, 10,000 times in a big store: a row the cache holds complete (its log's
    key unchanged, its refs' too, its title and cells there when the listing wants them) costs one
    tuple, and one head line parsed when `with_heads` (none otherwise); any other is `_session`'s,
    which reads or makes only what is missing."""

    def __init__(
        self,
        cache: HeadsCache,
        old: Snapshot,
        derive: Titler | None,
        cells: Cells | None = None,
        tag: str | None = None,
        *,
        with_heads: bool = False,
    ) -> None:
        self.cache, self.layout, self.old = cache, cache.layout, old
        self.derive, self.cells, self.with_heads = derive, cells, with_heads
        self.tag = old.tag if cells is None else tag  # no cells made or used: those kept keep their tag
        self.rows: list[Row] = []
        self.heads: list[Commit | None] = []
        self.entries: dict[str, Any] = {}  # each a `HeadRow`, a list of its fields, or a hit's row as read
        self.fresh: dict[str, bytes] = {}  # the head lines (`head_line`) of the heads read from the logs
        # this time, made at once: the commit itself is let go after its row (10,000 of them held
        # until the end cost more in fresh memory than in making them)
        self.changed = False  # an entry differs from the old one
        self.settled_all = True  # every row may be remembered (see `_session`)
        # Logs (and refs) last changed before `settled` are no longer "racily clean": cacheable. Taken
        # before anything is listed, so a change during the listing always counts as recent.
        self.settled = time.time_ns() - _RACY_NS

    def run(
        self,
        *,
        make: Memo | None = None,
        taken: str | None = None,
        stats: dict[str, os.stat_result] | None = None,
    ) -> Any:
        """List every session, then `_save` (which gives `make`'s value of the rows). `stats`: the
        logs' stats `stamp` kept when it took `taken` (not taken again)."""
        layout, old, rows, entries, heads = self.layout, self.old, self.rows, self.entries, self.heads
        cached = old.rows  # as read: a row is unpacked where it is used, not made a `HeadRow` first
        reuse = old.tag == self.tag  # the cached cells are this listing's (no cells: those kept)
        celled = self.cells is not None  # a complete hit holds cells (else they are made)
        titled = self.derive is not None
        with_heads = self.with_heads
        refs_dir = layout.refs.home
        with_refs = ref_dirs(refs_dir)
        for name, st in log_stats(layout.logs, cached, stats):
            refs = refs_key(refs_dir, name) if name in with_refs else None
            raw = cached.get(name)
            if raw is None:  # not cached (every log, in a rebuild)
                self._session(name, st, refs, None, None)
                continue
            try:  # `HeadRow`'s fields, by name, at the cost of one unpacking (10,000 rows a listing)
                size, mtime_ns, ctime_ns, inode, row_refs, checkpoints, title, cells, _, _ = raw  # type: ignore[misc]
            except (TypeError, ValueError):  # malformed: a miss
                self._session(name, st, refs, None, None)
                continue
            if (
                size == st.st_size  # `HeadRow.same_log`: the log's key is the one cached
                and mtime_ns == st.st_mtime_ns
                and ctime_ns == st.st_ctime_ns
                and inode == st.st_ino
                and reuse
                and row_refs == refs
                and (not celled or cells is not None)
                and (not titled or title is not None)
            ):  # complete: its key was settled when stored, so it still is; nothing changes
                rows.append((name, 0 if refs is None else checkpoints, title if titled else None, cells))
                if with_heads:
                    heads.append(old.head(layout, name))  # the head cached with this key
                entries[name] = raw  # written back as read
                continue
            row = row_of(raw)
            self._session(name, st, refs, row, row if row is not None and row.same_log(st) else None)
        return self._save(make, taken)

    def _session(
        self, name: str, st: os.stat_result, refs: list[int] | None, row: HeadRow | None, hit: HeadRow | None
    ) -> None:
        """The row of a session the cache does not hold complete (`row`: its old entry; `hit`: the
        same when it is for this state of the log), reading its head and start only if needed; then
        its entry for the next pass (none for a log changing now or a head too long to copy: read
        again next time; its checkpoint count only when its refs are settled)."""
        head: Any = _MISS
        start: bytes | None = None
        whole = False
        if hit is None:  # one read of the log's start serves its head too when the log is that short
            start, whole = read_start(self.layout.logs, name, st.st_size)
            head = head_in(start, whole, name) or self.layout.log(name).head()
            self.fresh[name] = head_line(head)
        elif self.with_heads:
            head = self.old.head(self.layout, name)
        if self.with_heads:
            self.heads.append(head)
        title, key = self._title(name, row, hit, start, whole, None if hit is not None else head)
        checkpoints = 0 if refs is None else self._checkpoints(name, refs, hit)
        made = self._cells(name, hit, head)
        self.rows.append(
            (name, checkpoints, "" if self.derive is not None and title is None else title, made)
        )
        # a hit's own mark is looked at only when its row is made again (most listings: never)
        mark = _MISS if hit is not None else next_mark(self.layout.logs, name, row, st.st_ino, head)
        if st.st_mtime_ns > self.settled or (
            head is not _MISS and head is not None and head.size > _MAX_CACHED_LINE
        ):
            self.settled_all = False  # nothing remembered of this listing
            if mark is _MISS:
                mark = mark_of(hit)
            if mark is not None and mark_of(row) is not None:  # but a mark it held, always
                kept = HeadRow(-1, -1, -1, st.st_ino, None, None, None, None, None, list(mark))
                self.entries[name] = kept  # never a hit (size -1)
                self.changed = self.changed or kept != row
            return
        if refs is not None and refs[0] > self.settled:
            refs, self.settled_all = None, False  # its count is not cached yet
        if self.derive is None and hit is not None:
            title, key = hit.title, hit.title_key  # kept as they were
        counted = checkpoints if refs is not None else None
        if (
            hit is not None
            and hit.refs == refs
            and hit.checkpoints == counted
            and hit.title == title
            and hit.cells is made
        ):
            self.entries[name] = hit  # unchanged: no copy, and no deep comparison at the end
            return
        if mark is _MISS:
            mark = mark_of(hit)
        self.entries[name] = [  # a `HeadRow`'s fields as the file holds them (orjson writes a list itself)
            st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, refs, counted, title, made, key,
            None if mark is None else list(mark),
        ]  # fmt: skip
        self.changed = True

    def _title(
        self,
        name: str,
        row: HeadRow | None,
        hit: HeadRow | None,
        start: bytes | None,
        whole: bool,
        head: Commit | None,
    ) -> tuple[str | None, Any]:
        """The session's derived title and its key (None, None without `derive`, or when it cannot be
        trusted now: then nothing of this listing is remembered); `head`: the log's head as this
        listing read it (None: not read)."""
        if self.derive is None:
            return None, None
        if hit is not None and hit.title is not None:
            return hit.title, hit.title_key
        if start is None:
            start, whole = read_start(self.layout.logs, name)
        if row is not None and (kept := row.kept_title(start)) is not None:
            return kept, row.title_key  # the bytes it came from are still the log's first
        found = self.derive(self.layout, name, start, whole, head)
        if found is None:  # not to be trusted now: shown as none, kept as none
            self.settled_all = False
            return None, None
        return found[0], title_key(start, found[1])

    def _checkpoints(self, name: str, refs: list[int] | None, hit: HeadRow | None) -> int:
        """The session's checkpoint count: the cached one while its refs directory's key is unchanged."""
        if refs is None:
            return 0
        if hit is not None and hit.refs == refs and hit.checkpoints is not None:
            return hit.checkpoints
        return count_checkpoints(self.layout.refs.home, name)

    def _cells(self, name: str, hit: HeadRow | None, head: Any) -> Any:
        """The caller's cells for the session's head: the cached ones when made under this tag."""
        if hit is not None and self.old.tag == self.tag and hit.cells is not None:
            return hit.cells
        if self.cells is None:
            return None
        return self.cells(self.old.head(self.layout, name) if head is _MISS else head)

    def _save(self, make: Memo | None, taken: str | None) -> Any:
        """The cache rewritten if an entry changed; with `make`, its value of the rows, remembered under
        the stamp `taken` (`log_stats.stamp`, taken before: older than what was read, never newer)
        when every row was settled."""
        old, rows, entries = self.old, self.rows, self.entries
        value = memo = None
        if make is not None and taken is not None and self.settled_all and rows:  # remembered
            value = make(rows)
            memo = [self.tag, taken, [row[0] for row in rows], value]
        renew = make is not None and (memo is not None or old.memo is not None)  # `memo` found it stale
        stale = len(entries) != len(old.rows) or old.damaged or (entries and self.tag != old.tag)
        if self.changed or stale or renew:
            fresh, layout = self.fresh, self.layout
            lines = [fresh[name] if name in fresh else old.line(layout, name) for name in entries]
            try:
                self.cache.save(self.tag, entries, lines, memo if make is not None else old.memo)
            except StorePathError:
                raise  # a linked index/ is refused, never skipped
            except (OSError, SessionStoreError, TypeError):  # a read-only store still lists
                pass
        if make is not None and value is None:
            value = make(rows)
        return value


_MISS: Any = object()
_info = tuple.__new__
"""`SessionInfo(...)` without the named tuple's Python-level `__new__` (the same tuple)."""
