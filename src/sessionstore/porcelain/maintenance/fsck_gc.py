"""`fsck` (verify everything, repair what is derivable) and `gc` (prune unreachable old blobs).

fsck reads every log line, every blob a log reaches (verified against its name and decoded with the
reader's decoder) and every checkpoint ref, and lists every problem rather than stopping at the first.
It repairs only what can be rebuilt without guessing, and says exactly what it did: a torn log tail
(a last line WITHOUT its newline: cut, a copy kept in the trash: `log_ends`), a missing or malformed
checkpoint ref (rewritten from its compaction commit), a log git left with conflict markers (split:
ours stays NAME, theirs becomes NAME-<short id of theirs' head>, each with its refs; see
`conflict_split`), and what an interrupted import left behind. Damage is never cut: a
newline-terminated line that does not verify is named with the fix (restore from git or a backup),
and so is a log that no longer holds a commit its checkpoint refs or the heads cache recorded (lost
commits, with their seqs: a cut, which a crash never makes). The temp file a write killed mid-way
leaves (a checkpoint ref's, a title's, a move journal's) is a note, not a problem: gc removes it after
the grace period. fsck also finishes a `rm`/`rename` a crash cut (`crash_leftovers`).

gc never runs on a store fsck would call damaged (deleting with a misread log could delete reachable
data), never while a writer is between a blob and its commit line (`gc_exclusive`), and in a store git
tracks it keeps the blobs git tracks unless `include_committed` (another clone's fork may use them).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.errors import CorruptObjectError, ImmutableRefError, SessionStoreError
from sessionstore.plumbing.codec import line_count, unreadable_reason
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.fsutil import read_regular
from sessionstore.plumbing.locks import gc_exclusive
from sessionstore.plumbing.logs import MergeConflictError
from sessionstore.plumbing.objects import is_object_id
from sessionstore.porcelain.importing.staging_dir import leftover_imports, remove_leftover_import
from sessionstore.porcelain.maintenance import conflict_split, crash_leftovers
from sessionstore.porcelain.maintenance.log_ends import cut_tail, lost_commits
from sessionstore.porcelain.session.heads import HEADS_FILE, HeadsCache
from sessionstore.porcelain.session.layout import STORE_DIRS

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

Progress = Callable[[int, int], None]
"""Called with (done, total) as work advances; the CLI draws a bar from it on a terminal."""


@dataclass
class FsckReport:
    sessions: int = 0
    commits: int = 0
    objects: int = 0
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Worth knowing, not a problem (`ok` ignores them): temp files a crash left (`crash_leftovers`)."""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class GcReport:
    removed: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    kept_young: int = 0
    reachable: int = 0
    kept_committed: int = 0
    """Unreachable blobs kept because git tracks them (another clone's fork may reach them)."""
    trash_removed: list[str] = field(default_factory=list)
    """Trash entries (`session rm`) older than the grace period, deleted after the blobs
    (`SessionStore.gc`)."""
    temps_removed: list[str] = field(default_factory=list)
    """Temp files a write killed mid-way left (`crash_leftovers`: mostly a checkpoint ref's) older than
    the grace period, deleted (or, in a dry run, that would be), as store-relative paths."""
    temps_kept: int = 0
    """Such files younger than the grace period, kept: a writer may still be using one."""

    def tally(self, oid: str, freed: int | None) -> None:
        """Count an unreachable blob: removed (`freed` bytes) or, None, kept as younger than the grace."""
        if freed is None:
            self.kept_young += 1
        else:
            self.removed.append(oid)
            self.freed_bytes += freed


def _reachable(commits: list[Commit]) -> set[str]:
    out: set[str] = set()
    for c in commits:
        if c.blob:
            out.add(c.blob)
        out.update(c.blobs)
    return out


def blobs_named(path: Path) -> set[str]:
    """Every blob id a log file's lines name, read leniently (a line that does not parse names none):
    for logs that are not sessions' (a trash entry's), which gc keeps and `rm --undo` checks."""
    out: set[str] = set()
    try:
        data = read_regular(path, what="a removed session's log")
    except (OSError, SessionStoreError):
        return out
    for line in data.splitlines():
        try:
            commit = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(commit, dict):
            blobs = [commit.get("blob"), *(commit.get("blobs") or [])]
            out.update(b for b in blobs if isinstance(b, str) and is_object_id(b))
    return out


def store_dir_problems(store: SessionStore) -> list[str]:
    """One line for each store directory at a fixed place (`STORE_DIRS`) that is a symlink or not a
    directory (nothing is read through those). A store on object storage has no directories: none."""
    out: list[str] = []
    if store.on_object_storage:
        return out
    for sub in STORE_DIRS:
        try:
            store.top.below(sub).check()
        except SessionStoreError as err:
            out.append(str(err))
    return out


def fsck(store: SessionStore, *, repair: bool = False, progress: Progress | None = None) -> FsckReport:
    """Check logs, blobs, counts and checkpoint refs; with `repair`, fix what is derivable (see above)."""
    report = FsckReport()
    if dirs := store_dir_problems(store):
        report.problems.extend(dirs)
        return report
    report.problems.extend(
        f"logs/{stray} is not a session log (a directory, or a name no session can have): move it out "
        "of the store's logs/"
        for stray in store.stray_logs()
    )
    files = not store.on_object_storage  # moves, imports, caches and temp files live in a directory
    if files:  # first: the sessions a finished move completes are checked below
        crash_leftovers.check_moves(store, repair, report.problems, report.repaired)
        _check_leftover_imports(store, repair, report)
    lines: dict[str, int] = {}  # verified blob -> message count
    names = store.sessions()
    rows = HeadsCache(store).load() if files else {}  # its marks: how long each log was (`log_ends`)
    for i, name in enumerate(names):
        for checked in _check_session(store, name, repair, lines, report, rows):
            report.sessions += 1 if checked else 0
        if progress:
            progress(i + 1, len(names))
    for path, kind in store.objects.irregular():
        report.problems.append(
            f"objects/{path} is {kind}, not a blob: move it out of the store (it is never read or followed)"
        )
    for oid in store.objects:
        report.objects += 1
        if oid not in lines:
            try:
                store.objects.read(oid)
            except CorruptObjectError as err:
                report.problems.append(f"unreachable {err}")
    if files:
        _check_heads_cache(store, repair, report)
        if note := crash_leftovers.temps_note(store):
            report.notes.append(note)
    return report


def _check_heads_cache(store: SessionStore, repair: bool, report: FsckReport) -> None:
    """The session list's cache (index/sessions.json) against the logs; rebuilt with `repair`."""
    cache = HeadsCache(store)
    problems = cache.check()
    if problems and repair:
        try:
            cache.rebuild()
        except SessionStoreError as err:  # a damaged log: its own problem is reported above
            report.problems.append(f"{HEADS_FILE} not rebuilt: {err}")
            return
        report.repaired.append(f"rebuilt {HEADS_FILE} from the logs (it was damaged or out of date)")
    else:
        report.problems.extend(problems)


def _check_session(
    store: SessionStore,
    name: str,
    repair: bool,
    lines: dict[str, int],
    report: FsckReport,
    rows: dict[str, Any] | None = None,
) -> list[bool]:
    """Check one session (two after a conflict split); one True per session checked."""
    log = store.log(name)
    try:
        commits, valid_end = log.scan(since_reset=False)
    except MergeConflictError as err:
        if not repair:
            report.problems.append(str(err))
            return [False]
        try:
            split = conflict_split.split_session(store, name)
        except SessionStoreError as failed:
            report.problems.append(str(failed))
            return [False]
        report.repaired.extend(split.said)
        return [
            checked
            for part in (name, split.theirs)
            for checked in _check_session(store, part, False, lines, report, rows)
        ]
    except (CorruptObjectError, SessionStoreError) as err:
        report.problems.append(str(err))
        return [False]
    report.commits += len(commits)
    lost = lost_commits(store, name, commits, valid_end, rows or {})
    torn = log.size() - valid_end
    if lost:
        report.problems.append(lost)  # never repaired: only restoring the log brings them back
    if torn and repair:
        with store.lock(name):
            done = cut_tail(store, name)
        if done:
            what = (
                "the start of a lost commit's line (see the problem above)"
                if lost
                else "a last line without its newline, which a crash mid-append leaves (never acknowledged)"
            )
            report.repaired.append(
                f"{name}: cut {done[0]} bytes at the end of logs/{name}.jsonl: {what}; a copy is in {done[1]}"
            )
    elif torn and not lost:
        report.problems.append(
            f"{name}: torn last line ({torn} bytes without a newline: a crash mid-append); "
            "`session fsck --repair` cuts it, keeping a copy in the trash"
        )
    _check_counts(store, name, commits, lines, report)
    _check_refs(store, name, commits, repair and not lost, report)
    return [True]


def _check_counts(
    store: SessionStore, name: str, commits: list[Commit], lines: dict[str, int], report: FsckReport
) -> None:
    count = 0
    for c in commits:
        try:
            added = 0
            for oid in c.named_blobs:
                if oid not in lines:
                    data = store.objects.read(oid)
                    lines[oid] = line_count(data)
                    if why := unreadable_reason(data):
                        report.problems.append(f"{name}@{c.seq}: object {oid[:12]} does not load: {why}")
                added += lines[oid]
        except CorruptObjectError as err:
            report.problems.append(f"{name}@{c.seq}: {err}")
            count = c.count
            continue
        count, agrees = c.count_after(count, added)
        if not agrees:
            report.problems.append(f"{name}@{c.seq}: commit says {c.count} messages, its blobs hold {count}")
            count = c.count


def _check_refs(
    store: SessionStore, name: str, commits: list[Commit], repair: bool, report: FsckReport
) -> None:
    checkpoints = [c for c in commits if c.kind == "compaction"]
    refs = dict(store.refs.entries(name))
    for k, c in enumerate(checkpoints, start=1):
        ref = refs.pop(k, None)
        if ref is None or isinstance(ref, CorruptObjectError):
            if repair:
                try:
                    with store.lock(name):  # a ref writer holds it: gc's exclusion then covers this one too
                        store.refs.rewrite_malformed(name, k, c.id, c.offset)
                    verb = "recreated" if ref is None else "rewrote the malformed"
                    report.repaired.append(f"{name}: {verb} checkpoints/{name}/{k}")
                except ImmutableRefError:
                    report.problems.append(f"{name}: checkpoints/{name}/{k} appeared during repair")
            elif ref is None:
                report.problems.append(
                    f"{name}: checkpoints/{name}/{k} is missing; `session fsck --repair` recreates it"
                )
            else:
                report.problems.append(str(ref))
        elif (ref.commit_id, ref.offset) != (c.id, c.offset):
            report.problems.append(
                f"{name}: checkpoints/{name}/{k} points at {ref.commit_id[:12]}, expected {c.id[:12]}"
            )
    for k, ref in refs.items():
        if isinstance(ref, CorruptObjectError):
            report.problems.append(str(ref))
        else:
            report.problems.append(f"{name}: {ref.name} has no compaction commit in the log (k={k})")


def _check_leftover_imports(store: SessionStore, repair: bool, report: FsckReport) -> None:
    for name, what in leftover_imports(store):
        if repair:
            if remove_leftover_import(store, name):
                report.repaired.append(f"{name}: removed {what} an interrupted import left (never published)")
        else:
            report.problems.append(
                f"{name}: {what} an interrupted import left (never published); `session fsck --repair` "
                "removes it"
            )


def git_tracked_objects(store: SessionStore) -> set[str] | None:
    """Object ids of the blobs git tracks in the repository holding the store; None if git tracks
    none of the store (not a repository, or git is not installed)."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--", "objects"],
            cwd=store.root, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout:
        return None
    out = set()
    for path in done.stdout.split(b"\0"):
        parts = path.decode("utf-8", "replace").split("/")
        if len(parts) >= 2:
            out.add(parts[-2] + parts[-1])
    return out


def gc(
    store: SessionStore,
    *,
    grace_days: float = 14.0,
    dry_run: bool = False,
    include_committed: bool = False,
    progress: Progress | None = None,
    also_reaching: Callable[[], Iterable[Path]] | None = None,
) -> GcReport:
    """Delete blobs no log reaches that are older than the grace period, under the store lock, with
    writers held off (`gc_exclusive`); blobs git tracks stay unless `include_committed`.

    `also_reaching()`, called once writers are held off, names more log files whose blobs count as
    reachable (a removed session's log in the trash, while `rm --undo` may still want it); a line of
    theirs that does not parse is skipped, never taken to reach nothing more."""
    number = isinstance(grace_days, int | float) and not isinstance(grace_days, bool)
    if not number or not grace_days >= 0:  # `not >=` refuses nan, which would keep nothing
        raise SessionStoreError(f"gc grace period must be a number ≥ 0 days, got {grace_days!r}")
    if dirs := store_dir_problems(store):
        raise SessionStoreError(f"gc refused: {dirs[0]}")
    report = GcReport()
    cutoff = time.time() - grace_days * 86400
    if store.on_object_storage:
        return _gc_objects(store, cutoff, dry_run=dry_run, progress=progress)
    tracked = None if include_committed else git_tracked_objects(store)
    with store.store_lock(), gc_exclusive(store.locks, store.settings.lock_timeout_s):
        # No writer is between a blob and its commit line now (DESIGN §2), so every blob a log will
        # reach is reached by a line already on disk: the scan below sees it.
        if stray := store.stray_logs():  # it may be a renamed log: its blobs would look unreachable
            raise SessionStoreError(f"gc refused: logs/{stray[0]} is not a session log; move it out of logs/")
        for path, kind in store.objects.irregular():  # what fsck names: a linked fan-out directory, ...
            (store.objects.home / path.split("/")[0]).check()  # one that is a link or a file: refused
            raise SessionStoreError(
                f"gc refused: objects/{path} is {kind}, not a blob; move it out of the store"
            )
        reachable = _all_reachable(store)
        for path in also_reaching() if also_reaching is not None else ():
            reachable |= blobs_named(path)
        report.reachable = len(reachable)
        candidates = [oid for oid in store.objects if oid not in reachable]
        for i, oid in enumerate(candidates):
            if tracked is not None and oid in tracked:
                report.kept_committed += 1
                continue
            path = store.objects.path(oid)
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            freed = st.st_size if st.st_mtime <= cutoff else None
            if freed is not None and not dry_run:
                freed = store.objects.prune(oid, cutoff)  # re-checks a touch, and survives a crash
            report.tally(oid, freed)
            if progress:
                progress(i + 1, len(candidates))
        if not dry_run:
            store.objects.settle_pruning(reachable)  # what a gc that crashed mid-prune left aside
        for tmp in store.objects.stray_temps():
            try:
                old = tmp.lstat().st_mtime < time.time() - 3600
            except FileNotFoundError:
                continue  # a writer finished with it meanwhile
            if old and not dry_run:
                tmp.unlink(missing_ok=True)
        report.temps_removed, report.temps_kept = crash_leftovers.prune_temps(store, cutoff, dry_run=dry_run)
    return report


def _all_reachable(store: SessionStore) -> set[str]:
    """Every blob some session's log reaches; `SessionStoreError` (gc refused) on a damaged log."""
    reachable: set[str] = set()
    for name in store.sessions():
        try:
            commits, _ = store.log(name).scan(since_reset=False)
        except (CorruptObjectError, SessionStoreError) as err:
            raise SessionStoreError(f"gc refused: {err}") from None
        reachable |= _reachable(commits)
    return reachable


def _gc_objects(store: SessionStore, cutoff: float, *, dry_run: bool, progress: Progress | None) -> GcReport:
    """gc on object storage (DESIGN §13): no lock holds writers off, so the grace period alone keeps a
    blob whose commit is still being written, measured from each object's last-modified time (a
    writer that reuses an old blob writes it again, renewing that time: `object_blobs`). A blob is
    deleted only if no log reached it when the logs were read and it was last written before `cutoff`,
    read again just before the delete."""
    report = GcReport()
    reachable = _all_reachable(store)
    report.reachable = len(reachable)
    candidates = [(oid, when, size) for oid, when, size in store.objects.times() if oid not in reachable]
    for i, (oid, when, size) in enumerate(candidates):
        freed = None
        if when <= cutoff:
            freed = size if dry_run else store.objects.prune(oid, cutoff)
        report.tally(oid, freed)
        if progress:
            progress(i + 1, len(candidates))
    return report
