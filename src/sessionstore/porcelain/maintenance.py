"""`fsck` (verify everything, repair what is derivable) and `gc` (prune unreachable old blobs).

fsck reads every log line, every blob a log reaches and every checkpoint ref; it repairs only what can
be rebuilt without guessing: a torn log tail (truncated) and a missing checkpoint ref (recreated from
its compaction commit). gc never runs on a store fsck would call damaged: deleting with a misread log
could delete reachable data.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import CorruptObjectError, ImmutableRefError, SessionStoreError
from ..plumbing.codec import line_count
from ..plumbing.logs import Commit

if TYPE_CHECKING:
    from .layout import StoreLayout as SessionStore

Progress = Callable[[int, int], None]
"""Called with (done, total) as work advances; the CLI draws a bar from it on a terminal."""


@dataclass
class FsckReport:
    sessions: int = 0
    commits: int = 0
    objects: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class GcReport:
    removed: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    kept_young: int = 0
    reachable: int = 0


def _reachable(commits: list[Commit]) -> set[str]:
    out: set[str] = set()
    for c in commits:
        if c.blob:
            out.add(c.blob)
        out.update(c.blobs)
    return out


def fsck(store: SessionStore, *, repair: bool = False, progress: Progress | None = None) -> FsckReport:
    """Check logs, blobs, counts and checkpoint refs; with `repair`, fix torn tails and missing refs."""
    report = FsckReport()
    names = store.sessions()
    report.problems.extend(
        f"logs/{stray} is not a session log (a directory, or a name no session can have): move it out "
        "of the store's logs/"
        for stray in store.stray_logs()
    )
    lines: dict[str, int] = {}  # verified blob -> message count
    for i, name in enumerate(names):
        report.sessions += 1
        log = store.log(name)
        try:
            commits, valid_end = log.scan(since_reset=False)
        except CorruptObjectError as err:
            report.problems.append(str(err))
            continue
        report.commits += len(commits)
        if log.path.stat().st_size > valid_end:
            if repair:
                with store.lock(name):
                    log.repair_tail()
                report.repaired.append(f"{name}: truncated a torn last line")
            else:
                report.problems.append(
                    f"{name}: torn last line (a crash mid-append); `session fsck --repair` cuts it"
                )
        _check_counts(store, name, commits, lines, report)
        _check_refs(store, name, commits, repair, report)
        if progress:
            progress(i + 1, len(names))
    for oid in store.objects:
        report.objects += 1
        if oid not in lines:
            try:
                store.objects.read(oid)
            except CorruptObjectError as err:
                report.problems.append(f"unreachable {err}")
    return report


def _check_counts(
    store: SessionStore, name: str, commits: list[Commit], lines: dict[str, int], report: FsckReport
) -> None:
    count = 0
    for c in commits:
        blobs = c.blobs if c.is_reset else ([c.blob] if c.blob else [])
        try:
            added = 0
            for oid in blobs:
                if oid not in lines:
                    lines[oid] = line_count(store.objects.read(oid))
                added += lines[oid]
        except CorruptObjectError as err:
            report.problems.append(f"{name}@{c.seq}: {err}")
            count = c.count
            continue
        count = added if c.is_reset else count + added
        if count != c.count or len(c.sizes) != (count if c.is_reset else added):
            report.problems.append(f"{name}@{c.seq}: commit says {c.count} messages, its blobs hold {count}")
            count = c.count


def _check_refs(
    store: SessionStore, name: str, commits: list[Commit], repair: bool, report: FsckReport
) -> None:
    checkpoints = [c for c in commits if c.kind == "compaction"]
    try:
        refs = {r.k: r for r in store.refs.list(name)}
    except CorruptObjectError as err:
        report.problems.append(str(err))
        return
    for k, c in enumerate(checkpoints, start=1):
        ref = refs.pop(k, None)
        if ref is None:
            if repair:
                try:
                    store.refs.create(name, k, c.id, c.offset)
                    report.repaired.append(f"{name}: recreated checkpoints/{name}/{k}")
                except ImmutableRefError:
                    report.problems.append(f"{name}: checkpoints/{name}/{k} appeared during repair")
            else:
                report.problems.append(
                    f"{name}: checkpoints/{name}/{k} is missing; `session fsck --repair` recreates it"
                )
        elif (ref.commit_id, ref.offset) != (c.id, c.offset):
            report.problems.append(
                f"{name}: checkpoints/{name}/{k} points at {ref.commit_id[:12]}, expected {c.id[:12]}"
            )
    for ref in refs.values():
        report.problems.append(f"{name}: {ref.name} has no compaction commit in the log")


def gc(
    store: SessionStore, *, grace_days: float = 14.0, dry_run: bool = False, progress: Progress | None = None
) -> GcReport:
    """Delete blobs no log reaches that are older than the grace period, under the store lock."""
    number = isinstance(grace_days, int | float) and not isinstance(grace_days, bool)
    if not number or not grace_days >= 0:  # `not >=` refuses nan, which would keep nothing
        raise SessionStoreError(f"gc grace period must be a number ≥ 0 days, got {grace_days!r}")
    report = GcReport()
    cutoff = time.time() - grace_days * 86400
    with store.store_lock():
        if stray := store.stray_logs():  # it may be a renamed log: its blobs would look unreachable
            raise SessionStoreError(f"gc refused: logs/{stray[0]} is not a session log; move it out of logs/")
        reachable: set[str] = set()
        for name in store.sessions():
            try:
                commits, _ = store.log(name).scan(since_reset=False)
            except CorruptObjectError as err:
                raise SessionStoreError(f"gc refused: {err}") from None
            reachable |= _reachable(commits)
        report.reachable = len(reachable)
        candidates = [oid for oid in store.objects if oid not in reachable]
        for i, oid in enumerate(candidates):
            path = store.objects.path(oid)
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            freed = st.st_size if st.st_mtime <= cutoff else None
            if freed is not None and not dry_run:
                freed = store.objects.prune(oid, cutoff)  # re-checks a writer's touch, race-free
            if freed is None:
                report.kept_young += 1
            else:
                report.removed.append(oid)
                report.freed_bytes += freed
            if progress:
                progress(i + 1, len(candidates))
        for oid, trash in store.objects.pruning_leftovers():  # a gc that crashed mid-prune
            if not dry_run:
                if oid in reachable:
                    with contextlib.suppress(FileExistsError):
                        os.link(trash, store.objects.path(oid))
                trash.unlink(missing_ok=True)
        for tmp in store.objects.stray_temps():
            try:
                old = tmp.stat().st_mtime < time.time() - 3600
            except FileNotFoundError:
                continue  # a writer (who takes no store lock) finished with it meanwhile
            if old and not dry_run:
                tmp.unlink(missing_ok=True)
    return report
