"""A session's commit chain on object storage: `logs/<session>/<seq, 12 digits>`, one commit each.

Each object holds one commit line, byte for byte what a log file would hold (its newline included),
so ids, parents and the hash chain are those of DESIGN §2. A commit's position (`Commit.offset`) is
its seq and `size` is 1, so `end` is the next seq and a checkpoint ref holds the seq it points at.

Lockstep (DESIGN §3, §13): `append` creates the object of seq `expected.seq + 1` only if it is
absent. Of two writers that loaded the same head, one creates it and the other gets
`StaleSessionError`, as on files; no lock is held, and a writer killed at any point leaves either its
whole commit or none (a PUT is atomic), so there is no torn tail to repair.

Replay (`scan(since_reset=True)`) lists the session's checkpoint refs, takes the newest, and lists
and reads the commits from its seq forward only: O(commits since the checkpoint) requests, whatever
the log's length. Every commit read is verified: its id, its seq against its key, the chain's links.

`heads/<session>` holds the head's line after each append, written on a background request thread
(coalesced per session): a hint that lets `session list` read every head in O(sessions / 1000)
listings. It may lag (a writer killed before it lands, two writers' hints landing out of order); no
reader that decides anything trusts it over the commits.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import replace
from itertools import pairwise
from typing import Any

import orjson

from ..errors import CorruptLogError, CorruptObjectError, StaleSessionError
from .bucket import Bucket
from .commits import Commit, from_body, parse_line
from .object_refs import ObjectRefs

SEQ_DIGITS = 12


class ObjectLog:
    """Reader and writer of one session's commit chain in a bucket (`backend.CommitChain`)."""

    def __init__(self, bucket: Bucket, session: str) -> None:
        self.bucket = bucket
        self.session = session
        self.folder = f"logs/{session}/"

    @property
    def path(self) -> str:
        """Where the chain is, for messages."""
        return f"{self.bucket.url}/{self.folder}"

    def key(self, seq: int) -> str:
        return f"{self.folder}{seq:0{SEQ_DIGITS}d}"

    def _seqs(self, after: int = 0) -> list[int]:
        """The seqs present after `after`, ascending (one listing per `PAGE` commits)."""
        metas = self.bucket.list(self.folder, after=self.key(after))
        return [int(m.key) for m in metas if len(m.key) == SEQ_DIGITS and m.key.isdigit()]

    def _damage(self, seq: int, why: str) -> CorruptLogError:
        return CorruptLogError(
            f"log of session {self.session!r} is damaged at commit {seq} ({why}): restore {self.key(seq)} "
            f"in {self.bucket.url} from a backup; `session fsck` lists every problem"
        )

    def _fetch(self, seqs: list[int], gone: CorruptLogError | None = None) -> list[Commit]:
        """The commits at `seqs`, read concurrently, each verified (id, and seq against its key); `gone`
        is raised for one that is absent (default: it was listed, and removed since)."""
        out = []
        for seq, data in zip(seqs, self.bucket.get_many([self.key(s) for s in seqs]), strict=True):
            if data is None:
                raise gone or self._damage(
                    seq, "it was listed and is gone: was the session removed meanwhile?"
                )
            commit = parse_line(data[:-1], self.session, seq) if data.endswith(b"\n") else None
            if commit is None or commit.seq != seq:
                self._raise(seq, commit)
            out.append(positioned(commit))
        return out

    def exists(self) -> bool:
        return bool(self._seqs())

    def head(self, after: Commit | None = None) -> Commit | None:
        """The newest commit: one listing of the chain's keys and one read. `after`: a commit of this
        chain the caller holds (a writer that lost a race): only the keys after it are listed, and it
        is returned when nothing follows it, so catching up costs O(commits since), not O(chain)."""
        seqs = self._seqs(after=after.seq if after else 0)
        if not seqs:
            return after
        return self._fetch(seqs[-1:])[0]

    def since(self, held: Commit | None) -> list[tuple[Commit, bytes]] | None:
        """The commits after `held` (a commit of this chain the caller read before; None: from the
        start), oldest first, each with its line, verified and chained onto `held`: one listing and
        one read per new commit. None when `held` is no longer in the chain (the session was removed,
        or removed and written again): the caller reads it again from the start."""
        start = held.seq if held else 1
        seqs = self._seqs(after=start - 1)
        if held is not None:
            if not seqs or seqs[0] != held.seq:
                return None
            seqs = seqs[1:]
        out: list[tuple[Commit, bytes]] = []
        previous = held
        for seq, data in zip(seqs, self.bucket.get_many([self.key(s) for s in seqs]), strict=True):
            commit = parse_line(data[:-1], self.session, seq) if data and data.endswith(b"\n") else None
            if data is None or commit is None or commit.seq != seq:
                return None if data is None else self._raise(seq, commit)
            if commit.parent != (previous.id if previous else None):
                if held is not None and previous is held:
                    return None  # a different commit follows the seq we held: the chain was replaced
                raise self._damage(seq, "it does not follow the commit before it")
            out.append((positioned(commit), data))
            previous = commit
        return out

    def _raise(self, seq: int, commit: Commit | None) -> Any:
        raise self._damage(seq, "its id does not verify" if commit is None else "its seq is not its key")

    def size(self) -> int:
        """The position after the head (0: no commit)."""
        seqs = self._seqs()
        return seqs[-1] + 1 if seqs else 0

    def scan(self, *, since_reset: bool, end: int | None = None) -> tuple[list[Commit], int]:
        """Commits oldest first (all, or from the newest reset point) before seq `end` when given, and
        the position after the last. With `since_reset` only the commits from the newest checkpoint
        before `end` on are listed and read."""
        start, ref_id = 1, None
        if since_reset:
            start, ref_id = self._checkpoint_before(end)
        seqs = [s for s in self._seqs(after=start - 1) if end is None or s < end]
        if ref_id is not None and (not seqs or seqs[0] != start):
            raise self._damage(
                start, f"checkpoint ref names commit {ref_id[:12]} at {start}, which is missing"
            )
        commits = self._fetch(seqs)
        for before, after in pairwise(commits):
            if after.seq != before.seq + 1 or after.parent != before.id:
                raise self._damage(after.seq, "it does not follow the commit before it")
        if commits and commits[0].seq == 1 and commits[0].parent is not None:
            raise self._damage(1, "the first commit has a parent")
        if ref_id is not None and commits[0].id != ref_id:
            raise self._damage(start, f"its checkpoint ref names commit {ref_id[:12]}")
        if since_reset:
            resets = [i for i, c in enumerate(commits) if c.is_reset]
            commits = commits[resets[-1] :] if resets else commits
        return commits, (commits[-1].end if commits else 0)

    def _checkpoint_before(self, end: int | None) -> tuple[int, str | None]:
        """(seq, commit id) of the newest readable checkpoint before `end`; (1, None) when none."""
        refs = ObjectRefs(self.bucket)
        for k in reversed(refs.numbers(self.session)):
            try:
                ref = refs.read(self.session, k)
            except (CorruptObjectError, LookupError):
                continue  # a malformed ref (fsck names it) only makes the replay start earlier
            if ref.offset >= 1 and (end is None or ref.offset < end):
                return ref.offset, ref.commit_id
        return 1, None

    def read_at(self, offset: int) -> Commit:
        """The commit of seq `offset` (what a checkpoint ref points at)."""
        gone = CorruptLogError(
            f"the log of session {self.session!r} has no commit {offset}, which a checkpoint points at: "
            f"acknowledged commits are missing; restore {self.path} from a backup"
        )
        return self._fetch([offset], gone)[0]

    def append(self, line: bytes, body: dict[str, Any], expected: Commit | None) -> Commit:
        """Create the commit object after `expected` only if it is absent (the lockstep); the
        acknowledged commit, or `StaleSessionError` when another writer created that seq first."""
        seq = expected.seq + 1 if expected else 1
        if body["seq"] != seq or body["parent"] != (expected.id if expected else None):
            raise ValueError(
                f"commit {body['id'][:12]} does not follow {expected.id[:12] if expected else 'nothing'}"
            )
        if not self.bucket.create(self.key(seq), line):
            raise StaleSessionError(
                f"session {self.session!r} changed in {self.bucket.url} since it was loaded (another writer "
                "committed first): reload it (store.session(name)) and retry"
            )
        _HINTS.note(self.bucket, self.session, seq, line)
        return from_body(body, session=self.session, offset=seq, size=1)

    def extend(self, lines: bytes, expected: Commit | None) -> int:
        """Create verified commit lines after `expected`, one object each, in order; the first's seq."""
        parent, first = expected, None
        for raw in lines.splitlines(keepends=True):
            if parse_line(raw.rstrip(b"\n"), self.session, 0) is None:
                raise ValueError("extend: a line whose id does not verify")
            parent = self.append(raw, orjson.loads(raw), parent)
            first = first or parent.seq
        return first or (expected.end if expected else 0)

    def torn_tail(self) -> bytes:
        """Always b"": a PUT is whole or absent, so object storage has no torn tail."""
        return b""

    def repair_tail(self) -> int:
        return 0

    def remove(self) -> None:
        """Delete every commit of the session and its head hint."""
        for seq in self._seqs():
            self.bucket.delete(self.key(seq))
        self.bucket.delete(f"heads/{self.session}")


def positioned(commit: Commit) -> Commit:
    """`commit` as this backend places it: its position (`offset`) its seq, its size one position."""
    return replace(commit, offset=commit.seq, size=1)


class _Hints:
    """Writes `heads/<session>` hints on a request thread, the newest per session, never blocking a
    writer. Pending hints are written before the interpreter exits (the request threads are joined)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, str], tuple[Bucket, int, bytes]] = {}
        self._idle = threading.Event()
        self._idle.set()

    def note(self, bucket: Bucket, session: str, seq: int, line: bytes) -> None:
        with self._lock:
            now = self._pending.get((id(bucket), session))
            if now is None or now[1] < seq:
                self._pending[(id(bucket), session)] = (bucket, seq, line)
            if not self._idle.is_set():
                return
            self._idle.clear()
        bucket.in_background(self._drain)

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._idle.set()
                    return
                (_, session), (bucket, _, line) = self._pending.popitem()
            with contextlib.suppress(Exception):  # a hint only: the next append writes it again
                bucket.put(f"heads/{session}", line)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every noted hint is written; False on timeout."""
        return self._idle.wait(timeout)


_HINTS = _Hints()
flush_hints = _HINTS.flush
