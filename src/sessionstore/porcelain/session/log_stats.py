"""What a listing stats of a store (`heads`): every log in name order with its stat, the checkpoint
refs directories' keys and counts, and the stamp of logs/ as a whole (issue 16 item 5); and the first
bytes of a log whose cached entry misses (`read_start`), which hold its head when it is that short.

Paths in, stats out: one `listdir` and one stat per log, relative to the open directory (the stat
gives the file type, so no `DirEntry` is made; no path is built), nothing of a stat kept longer than
its turn (10,000 stat results held at once cost more in fresh memory than the stats themselves).
"""

from __future__ import annotations

import hashlib
import os
import stat
from array import array
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from sessionstore.plumbing.commits import Commit, parse_line
from sessionstore.plumbing.names import invalid_names
from sessionstore.plumbing.storedir import StoreDir, refusal


def log_stats(
    logs: StoreDir, known: Collection[str] = (), taken: dict[str, os.stat_result] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """(name, stat) of every session log, in name order: exactly what `StoreLayout.sessions` lists (a
    regular file, or a link to one that reading it then refuses). Names in `known` (a cache's, each
    checked when it was cached) skip the name check. A log removed after the listing is left out.
    `taken`: the stats `stamp` just kept, by entry, used instead of listing and stating again (and
    emptied as they are used)."""
    if taken is not None:
        names = sorted(entry[:-6] for entry in taken)
        bad = invalid_names(set(names).difference(known))
        is_file = stat.S_ISREG
        for name in names:
            st = taken.pop(f"{name}.jsonl")  # let go as it is used: its memory serves the next row
            if is_file(st.st_mode) and (not bad or name not in bad):
                yield name, st
        return
    with _logs(logs, known) as (fd, names):
        is_file = stat.S_ISREG
        for name in names:
            try:
                st = os.stat(f"{name}.jsonl", dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if is_file(st.st_mode):
                yield name, st


@contextmanager
def _logs(logs: StoreDir, known: Collection[str]) -> Iterator[tuple[int, list[str]]]:
    """The open logs/ directory and the session names its `.jsonl` entries give, sorted as
    `sessions` sorts them ("a" before "a-b", not by file name); only names not in `known` are
    checked (one set difference, not a check per log). Nothing when there is no logs/."""
    try:
        fd = os.open(logs.check(), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield -1, []
        return
    try:
        names = [entry[:-6] for entry in os.listdir(fd) if entry.endswith(".jsonl")]
        if bad := invalid_names(set(names).difference(known)):
            names = [name for name in names if name not in bad]
        names.sort()
        yield fd, names
    finally:
        os.close(fd)


def ref_dirs(refs: StoreDir) -> set[str]:
    """Names with a checkpoint refs directory (or anything in its place): one listing of
    `refs/checkpoints`, checked (`StorePathError` if it is linked)."""
    return set(refs.listdir())


def _refs_stat(refs: StoreDir, name: str) -> os.stat_result | None:
    """The lstat of `name`'s refs directory (None: absent), a link in its place refused. `refs`
    itself is checked by the listing that asked (`ref_dirs`, `stamp`): one lstat per session."""
    path = f"{refs.text}/{name}"
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        raise refusal(path, st.st_mode)
    return st


def refs_key(refs: StoreDir, name: str) -> list[int] | None:
    """(mtime_ns, inode) of `name`'s refs directory: a ref is only ever added or removed by a rename
    or unlink in it, which moves its mtime, so an unchanged key means an unchanged count."""
    st = _refs_stat(refs, name)
    return None if st is None else [st.st_mtime_ns, st.st_ino]


def count_checkpoints(refs: StoreDir, name: str) -> int:
    """What `StoreLayout.info` counts: the entries of the refs directory named by a number."""
    try:
        return sum(1 for k in (refs / name).listdir() if k.isdigit())
    except NotADirectoryError:
        return 0


def stamp(logs: StoreDir, refs: StoreDir, keep: dict[str, os.stat_result] | None = None) -> str:
    """The sha256 of every entry of logs/ in the order listed, and of each `.jsonl` entry's stat
    (mode, size, mtime, ctime, inode) with its refs directory's key, hashed as it comes (ints and
    tuples of ints hash the same in every process, and a change of one field always changes the
    hash). One stat per log and nothing else per entry: an added, removed or changed entry, a stray
    file's included, changes it; equal stamps mean every log and refs directory is as it was.
    `keep`: filled with each `.jsonl` entry's stat, for a listing about to read them (`log_stats`)."""
    try:
        fd = os.open(logs.check(), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return ""
    with_refs = {f"{name}.jsonl" for name in ref_dirs(refs)}
    hashes: list[int] = []
    try:
        entries = os.listdir(fd)
        for entry in entries:
            if entry.endswith(".jsonl"):
                try:
                    st = os.stat(entry, dir_fd=fd)
                except OSError:
                    hashes.append(0)
                    continue
                if keep is not None:
                    keep[entry] = st
                key = (-1, -1)
                if entry in with_refs and (refs_st := _refs_stat(refs, entry[:-6])) is not None:
                    key = (refs_st.st_mtime_ns, refs_st.st_ino)
                hashes.append(hash((st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, key)))
    finally:
        os.close(fd)
    text = "\n".join(entries).encode("utf-8", "surrogateescape")
    return hashlib.sha256(text + b"\0" + array("q", hashes).tobytes()).hexdigest()


START = 1 << 16
"""Bytes `read_start` reads from the start of a log (the head's line, when the log is that short,
and the first lines a derived title comes from)."""
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def read_start(logs: StoreDir, name: str, size: int | None = None) -> tuple[bytes, bool]:
    """Up to `START` bytes from the start of `name`'s log and whether they are all of it; (b"",
    False) when it cannot be opened and read as a regular file here (`Log.head` then says why). The
    listing asking has checked logs/ (`log_stats`). `size`: the log's size as that listing's stat of
    it gave, so it is not stated again: what it held then is read (bytes appended since are not,
    and a log found shorter is not all of it)."""
    try:
        fd = os.open(f"{logs.text}/{name}.jsonl", _OPEN)
    except OSError:
        return b"", False
    try:
        if size is None:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return b"", False
            size = st.st_size
        data = os.pread(fd, min(size, START), 0)  # no 64 KiB buffer made for 300 bytes
    except OSError:  # no longer a regular file (a directory, a pipe put in its place)
        return b"", False
    finally:
        os.close(fd)
    return data, len(data) == size


def head_in(start: bytes, whole: bool, name: str) -> Commit | None:
    """The head of `name`'s log when `start` is all of it and ends in a verified line; None in any
    other case, damage included, which is `Log.head`'s to read (its errors are the listing's)."""
    if whole and start.endswith(b"\n"):
        at = start.rfind(b"\n", 0, len(start) - 1) + 1
        return parse_line(start[at:-1], name, at)
    return None
