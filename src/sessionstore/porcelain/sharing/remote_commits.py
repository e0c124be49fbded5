"""Remote commits verified, then written: what a pull appends, byte for byte (DESIGN §12).

`stage` reads a session's remote lines and the blobs they name through the pull's one `CatFile` and
verifies them all (each line's id hashes, it chains onto the local head, its message count is what its
blobs hold, each blob matches its name) before anything is written; a session that fails is `Refused`
alone. `land` writes a `Group` of staged sessions (up to 256): their blobs durably first (one
`write_objects`, gc held off until their lines are in), then each session's lines in one append under
its lock through the writer's `append_verified`, refused if the head moved since it was staged, then
(Linux) one `syncfs` making every log of the group durable together instead of a log sync and a
directory sync per session, and only then the checkpoint refs the logs imply (derivable: the next
pull, or `session fsck --repair`, recreates one a crash left out).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sessionstore.errors import CorruptObjectError, StaleSessionError
from sessionstore.plumbing.codec import line_count
from sessionstore.plumbing.commits import Commit, parse_line
from sessionstore.plumbing.fsutil import file_kind, filesystem_sync
from sessionstore.plumbing.git import CatFile, GitError
from sessionstore.plumbing.locks import store_writes
from sessionstore.plumbing.objects import hash_bytes
from sessionstore.porcelain.session.writer import append_verified
from sessionstore.porcelain.sharing.bulk_blobs import write_objects
from sessionstore.porcelain.sharing.push import Outcome

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

Chain = list[tuple[str, int, str]]
"""A remote session as (git commit, seq, store commit id), oldest first."""


class Refused(GitError):
    """A remote session that cannot be pulled as it is (not written by `session push`, damaged, under
    a ref no session name fits, its copy's name taken, or the local session moved meanwhile): that
    session is reported `REJECTED` with this message, nothing of it is written, the others are pulled."""


@dataclass
class Staged:
    """A session's remote commits read and verified, not yet written: its log lines, the commits they
    parse to (offsets not known yet), the blobs the store lacks (bytes verified against their names),
    and the local log they follow (`before`, its last commit `head`)."""

    name: str
    outcome: Outcome
    part: Chain
    head: Commit | None
    lines: list[bytes]
    blobs: dict[str, bytes]
    commits: list[Commit]
    before: Sequence[Commit]


class Group:
    """Staged sessions whose blobs are written together, by one `write_objects` (one `syncfs`, each
    fan-out directory synced once), then their lines one session at a time: a pull of many small
    sessions pays one blob sync per group instead of one per session. At most `MAX_BYTES` of blobs
    (plus one session's) or `MAX_SESSIONS` sessions are held, so memory stays bounded."""

    MAX_BYTES = 64 << 20
    MAX_SESSIONS = 256

    def __init__(self) -> None:
        self.staged: list[Staged] = []
        self.blobs: dict[str, bytes] = {}
        self.size = 0

    def add(self, staged: Staged) -> bool:
        """Hold `staged`; True when the group is full and should be landed."""
        self.staged.append(staged)
        self.blobs.update(staged.blobs)
        self.size += sum(map(len, staged.blobs.values())) + sum(map(len, staged.lines))
        return self.size >= self.MAX_BYTES or len(self.staged) >= self.MAX_SESSIONS


def stage(
    store: SessionStore,
    reader: CatFile,
    name: str,
    part: Chain,
    before: Sequence[Commit],
    outcome: Outcome,
    pending: dict[str, bytes],
) -> Staged:
    """Read and verify the remote commits `part` after `before` (the local log) of session `name`
    (`outcome`: what landing it reports): `Refused` if any line or blob does not verify, or a count
    its blobs do not hold. `pending`: blobs verified for sessions staged before it and not written
    yet (a group reads each blob once)."""
    lines = [found.data if found else None for found in reader.read([f"{sha}:line" for sha, _, _ in part])]
    head = before[-1] if before else None
    commits: list[Commit] = []
    for (sha, _, cid), data in zip(part, lines, strict=True):
        commit = parse_line(data.rstrip(b"\n"), name, 0) if data and data.endswith(b"\n") else None
        if (
            data is None
            or commit is None
            or data.count(b"\n") != 1
            or commit.id != cid
            or commit.parent != (head.id if head else None)
            or commit.seq != (head.seq + 1 if head else 1)
        ):
            raise Refused(
                f"remote commit {cid[:7]} of session {name!r} (git {sha[:12]}) does not verify: "
                "nothing was pulled; the remote's copy is damaged"
            )
        commits.append(commit)
        head = commit
    needed: dict[str, str] = {}  # store blob id -> "<git commit>:objects/<id>"
    paths: dict[str, Path] = {}
    local: dict[str, bytes] = {}  # blobs the store holds, verified (their counts are checked below)
    for (sha, _, _), commit in zip(part, commits, strict=True):
        for oid in commit.named_blobs:
            if oid not in paths and oid not in pending:
                paths[oid] = store.objects.path(oid)
                held = _held(store, name, oid, paths[oid])
                if held is None:
                    needed[oid] = f"{sha}:objects/{oid}"
                else:
                    local[oid] = held
    got = reader.read(list(needed.values()))
    blobs = {oid: found.data if found else None for oid, found in zip(needed, got, strict=True)}
    for oid, data in blobs.items():
        if data is None or hash_bytes(data) != oid:
            raise Refused(
                f"blob {oid[:12]} of session {name!r} is missing or corrupt on the remote: nothing was pulled"
            )
    local_head = before[-1] if before else None
    check_counts(store, name, local_head, part, commits, {**local, **pending, **blobs})  # type: ignore[dict-item]
    return Staged(
        name,
        outcome,
        part,
        local_head,
        lines,  # type: ignore[arg-type]
        blobs,  # type: ignore[arg-type]
        commits,
        before,
    )


def _held(store: SessionStore, name: str, oid: str, path: Path) -> bytes | None:
    """The bytes of `oid` if the store holds it whole at `path`; None if it is absent or damaged (of
    another size, or not hashing to its name: the remote's verified bytes replace it, as
    `ObjectStore.write` replaces a damaged copy); `Refused` if something else is there."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        raise Refused(
            f"object {oid[:12]} of session {name!r} cannot be stored: {path} is {file_kind(st.st_mode)}, "
            "not a blob; move it out of the store, then pull again (nothing was pulled)"
        )
    try:
        return store.objects.read(oid)
    except CorruptObjectError:  # damaged, or gone meanwhile
        return None


def land(
    store: SessionStore,
    group: Group,
    landed: Callable[[Staged], None],
    refused: Callable[[Staged, Refused], None],
) -> None:
    """Write the group's sessions, gc held off from their blobs until their lines are in; `landed`
    is called for each only once its lines are durable, `refused` for one whose head moved.

    In this order, which a crash at any point respects (each session is left as it was, or with a
    prefix of the remote's verified lines, at worst a torn tail, every blob they name durable):
    1. every blob, durably (`write_objects`: on Linux two `syncfs`, whatever their number);
    2. each session's lines in one append under its lock, refused alone when its head moved since
       it was read: on Linux not synced one by one (no log sync, no `logs/` sync for a new log),
    3. one `syncfs` that makes every log of the group durable together (elsewhere each append was
       synced as it was written): only now are they acknowledged;
    4. the checkpoint refs the logs imply (after their lines: a ref never names a line not durable).
    """
    if not group.staged:
        return
    syncfs = filesystem_sync()
    with store_writes(store.locks, store.settings.lock_timeout_s):
        write_objects(store, group.blobs)
        written: list[tuple[Staged, list[Commit]]] = []
        for staged in group.staged:
            try:
                written.append((staged, _append(store, staged, sync=syncfs is None)))
            except Refused as err:
                refused(staged, err)
        if syncfs is not None and written:
            syncfs(store.logs.check())
        for staged, commits in written:
            if any(c.kind == "compaction" for c in commits):
                with store.lock(staged.name):
                    ensure_checkpoint_refs(store, staged.name, commits)
            else:
                ensure_checkpoint_refs(store, staged.name, commits)  # nothing to make: no lock needed
            landed(staged)


def _append(store: SessionStore, staged: Staged, *, sync: bool) -> list[Commit]:
    """Append `staged`'s lines under its session's lock (synced only with `sync`); the whole log's
    commits after it, offsets included (what the checkpoint refs are made from)."""
    changed = Refused(f"session {staged.name!r} changed while pulling: nothing was pulled; pull again")
    with store.lock(staged.name):
        log = store.log(staged.name)
        now = log.head()  # the ids chain: the same head id at the same place is the same history
        if _place(now) != _place(staged.head):
            raise changed
        try:  # cuts a torn tail from a crash (not data), refuses a head that moved since
            offset = append_verified(log, staged.head, b"".join(staged.lines), sync=sync)
        except StaleSessionError:
            raise changed from None
    commits = list(staged.before)
    for c in staged.commits:
        commits.append(dataclasses.replace(c, offset=offset))
        offset += c.size
    return commits


def check_counts(
    store: SessionStore,
    name: str,
    head: Commit | None,
    part: Chain,
    commits: Sequence[Commit],
    blobs: dict[str, bytes],
) -> None:
    """Refuse remote commits whose `count` (and `sizes`) their blobs do not hold, as fsck checks a
    log: such a line verifies (its id is rehashed), yet the session would not load once it is pulled.
    `blobs`: the verified new ones; the others are read from the store."""
    messages: dict[str, int] = {}
    count = head.count if head else 0
    for (sha, _, _), c in zip(part, commits, strict=True):
        added = 0
        for oid in c.named_blobs:
            if oid not in messages:
                messages[oid] = line_count(blobs[oid] if oid in blobs else store.objects.read(oid))
            added += messages[oid]
        count, agrees = c.count_after(count, added)
        if not agrees:
            raise Refused(
                f"remote commit {c.id[:7]} of session {name!r} (git {sha[:12]}) says {c.count} messages, "
                f"its blobs hold {count}: nothing was pulled; the remote's copy is damaged"
            )


def _place(commit: Commit | None) -> tuple[str, int] | None:
    return (commit.id, commit.offset) if commit else None


def ensure_checkpoint_refs(
    store: SessionStore, name: str, commits: Sequence[Commit] | None = None
) -> list[int]:
    """Create the checkpoint refs the log of `name` implies and lacks (caller holds its lock): the
    pulled compactions', and any a pull killed between its append and its refs left out. Refs are
    derivable from the log (DESIGN §2), so this is a repair, never a guess. `commits`: the whole log,
    when the caller has scanned it already. Returns the numbers made."""
    if commits is None:
        commits = store.log(name).scan(since_reset=False)[0]
    compactions = [c for c in commits if c.kind == "compaction"]
    if not compactions:
        return []
    have = {ref.k for ref in store.refs.list(name)}
    made = []
    for k, commit in enumerate(compactions, start=1):
        if k not in have:
            store.refs.create(name, k, commit.id, commit.offset)
            made.append(k)
    return made
