"""Moving a session's files (its log, checkpoint refs and title) as one crash-safe step.

`session rm`, `rm --undo` and `rename` each move a log (one `rename(2)`: the commit point) and, with
it, the session's refs directory and title. Renamed one after the other, a kill -9 between them left
a session without its title (which is not derivable) and a title or refs at a name that has no log,
which a later session of that name would inherit. So a move is journalled:

1. the journal `trash/.moving-<token>.json` (written whole: temp file, fsync, rename) says what moves
   where (store-relative paths) and whose locks the move holds;
2. the followers (refs, title) are renamed into its staging directory `trash/.moving-<token>/`, out
   of every name's way;
3. the log is renamed: the commit point;
4. the followers are renamed from staging to their destination; staging, then the journal, deleted.

Whatever instant a crash hits, no name has refs or a title without its log: before step 3 the session
is whole at its old place but for the staged followers, after it at its new place but for them.
`finish` completes an interrupted move from the journal alone, under the same locks: forward if the
log reached its destination, back otherwise. Every naming command finishes the interrupted moves of
the names it touches before it starts; `session fsck` names them and `fsck --repair` finishes them.

A follower that finds its destination taken (a ref a writer recreated from the log meanwhile, say) is
kept aside in `trash/.stale-<what>-<token>` rather than overwritten or deleted: nothing is lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import AbstractContextManager, ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

import orjson

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.fsutil import atomic_replace, fsync_dir, read_regular
from sessionstore.plumbing.storedir import StoreDir


class SessionStore(Protocol):
    """What moving needs of a store (`layout.StoreLayout` has it): its directory and session locks."""

    @property
    def root(self) -> Path: ...

    @property
    def top(self) -> StoreDir: ...

    def lock(self, name: str) -> AbstractContextManager[None]: ...


TRASH = "trash"
"""Where `session rm` puts a session (`naming`), and where journals and set-aside files live."""
TITLES = "titles"
"""A session's set title: `titles/<name>` (`naming`)."""
JOURNAL_PREFIX = ".moving-"


@dataclass(frozen=True)
class Move:
    """One journalled move. Paths are store-relative (`trash/x.STAMP/log.jsonl`).

    `log`: (from, to) of the log, the commit point. `followers`: (from, to) pairs that go with it and
    may be absent. `made`: a directory the move creates before anything moves into it (rm's trash
    entry), removed if the move is rolled back. `emptied`: a directory the move leaves empty (undo's
    trash entry), removed after it. `locks`: the sessions whose locks the move is made under. `inode`:
    the moved log's inode (`run` records it; a rename keeps it), so a finish tells the moved log from a
    session created at either name after the crash."""

    what: str
    locks: tuple[str, ...]
    log: tuple[str, str]
    followers: tuple[tuple[str, str], ...] = ()
    made: str | None = None
    emptied: str | None = None
    inode: int | None = None

    def paths(self) -> list[str]:
        """Every store-relative path the move reads or writes (gc leaves a trash entry among them)."""
        pairs = [self.log, *self.followers]
        return [p for pair in pairs for p in pair] + [p for p in (self.made, self.emptied) if p is not None]

    def to_json(self) -> bytes:
        return orjson.dumps({
            "what": self.what, "locks": list(self.locks), "log": list(self.log),
            "followers": [list(p) for p in self.followers], "made": self.made, "emptied": self.emptied,
            "inode": self.inode,
        })  # fmt: skip

    @classmethod
    def from_json(cls, data: bytes) -> Move:
        """The move a journal describes; `ValueError` if it is not one this module wrote."""
        raw = orjson.loads(data)
        try:
            move = cls(
                what=str(raw["what"]),
                locks=tuple(str(n) for n in raw["locks"]),
                log=_pair(raw["log"]),
                followers=tuple(_pair(p) for p in raw["followers"]),
                made=_relative(raw["made"]) if raw["made"] is not None else None,
                emptied=_relative(raw["emptied"]) if raw["emptied"] is not None else None,
                inode=int(raw["inode"]) if raw.get("inode") is not None else None,
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a move journal ({err})") from None
        return move


def _relative(path: object) -> str:
    """`path` if it is a store-relative path that stays inside the store, else `ValueError`."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"not a path: {path!r}")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or "\\" in path:
        raise ValueError(f"not a path inside the store: {path!r}")
    return path


def _pair(value: object) -> tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"not a (from, to) pair: {value!r}")
    return _relative(value[0]), _relative(value[1])


def trash_dir(store: SessionStore) -> StoreDir:
    return store.top / TRASH


def titles_dir(store: SessionStore) -> StoreDir:
    return store.top / TITLES


def at(store: SessionStore, path: str) -> Path:
    """Store-relative `path` (`trash/x.STAMP/log.jsonl`), every directory on the way checked and
    `path` itself refused if it is a symlink (`StoreDir.entry`): what every move reads, renames or
    removes."""
    return directory_of(store, path).entry(path.rpartition("/")[2])


def directory_of(store: SessionStore, path: str) -> StoreDir:
    """The directory store-relative `path` is in."""
    return store.top.below(path.rpartition("/")[0])


def stray_temps(store: SessionStore) -> list[Path]:
    """The `.tmp-*` files a crash mid-write left in `trash/` (a journal) and `titles/` (a title):
    regular files only. Both are written under a session lock, so with writers held off (gc) none is
    in use."""
    return [*trash_dir(store).temp_files(), *titles_dir(store).temp_files()]


def rename_durably(src: Path, dst: Path) -> bool:
    """Rename `src` to `dst` if `src` exists, then fsync both directories; True if it moved."""
    try:
        os.rename(src, dst)
    except FileNotFoundError:
        return False
    fsync_dir(dst.parent)
    if src.parent != dst.parent:
        fsync_dir(src.parent)
    return True


def set_aside(store: SessionStore, path: Path, what: str) -> None:
    """Move `path` (if it exists; checked by the caller: `at`) to `trash/.stale-<what>-<token>`: out
    of a name's way, not deleted."""
    import secrets

    if os.path.lexists(path):
        rename_durably(path, trash_dir(store).make() / f".stale-{what}-{secrets.token_hex(6)}")


def run(store: SessionStore, move: Move) -> None:
    """Make `move` (the caller holds the locks of `move.locks`), journalled as the module says."""
    import dataclasses
    import secrets

    for path in move.paths():  # every place it touches is checked before anything moves
        at(store, path)
    with suppress(FileNotFoundError):  # no log: nothing to tell apart later
        move = dataclasses.replace(move, inode=os.lstat(at(store, move.log[0])).st_ino)
    journal = trash_dir(store).make() / f"{JOURNAL_PREFIX}{secrets.token_hex(8)}.json"
    atomic_replace(journal, move.to_json())
    staging = _staging(journal)
    staging.mkdir()
    fsync_dir(staging.parent)
    if move.made is not None:
        os.mkdir(at(store, move.made))
        fsync_dir(at(store, move.made).parent)
    for i, (src, _) in enumerate(move.followers):
        rename_durably(at(store, src), staging / str(i))
    rename_durably(at(store, move.log[0]), at(store, move.log[1]))  # the commit point
    _settle(store, journal, move, forward=True)


def _staging(journal: Path) -> Path:
    return journal.with_suffix("")


def _settle(store: SessionStore, journal: Path, move: Move, *, forward: bool) -> None:
    """Put the staged followers at their destination (`forward`) or back where they were, tidy the
    directories the move made or emptied, and delete staging, then the journal."""
    staging = _staging(journal)
    for i, (src, dst) in enumerate(move.followers):
        staged, where = staging / str(i), dst if forward else src
        if not os.path.lexists(staged):
            continue
        target = at(store, where)
        if os.path.lexists(target):  # taken meanwhile (a ref recreated from the log): keep both
            set_aside(store, staged, "-".join(PurePosixPath(src).parts[-2:]))
        else:
            directory_of(store, where).make()  # `titles/` before the first title, say
            rename_durably(staged, target)
    leftover = move.emptied if forward else move.made
    if leftover is not None:
        _remove_if_empty(at(store, leftover))
    _remove_if_empty(staging)
    journal.unlink(missing_ok=True)
    fsync_dir(journal.parent)


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        return  # absent, or holds something: then it is not ours to remove
    fsync_dir(directory.parent)


@dataclass(frozen=True)
class Interrupted:
    """A journal a crash left (or a move running right now): its file and the move it describes,
    None if it does not parse."""

    journal: Path
    move: Move | None

    @property
    def what(self) -> str:
        return self.move.what if self.move else f"the move journalled in {TRASH}/{self.journal.name}"


def interrupted(store: SessionStore) -> list[Interrupted]:
    """Every move journal in the trash, in name order."""
    trash = trash_dir(store)
    names = sorted(trash.listdir())
    return [
        Interrupted(trash.path / name, _read(trash.path / name))
        for name in names
        if name.startswith(JOURNAL_PREFIX) and name.endswith(".json")
    ]


def _read(journal: Path) -> Move | None:
    try:
        return Move.from_json(read_regular(journal, what="move journal"))
    except (FileNotFoundError, SessionStoreError, ValueError, orjson.JSONDecodeError):
        return None


def finish(store: SessionStore, found: Interrupted) -> str | None:
    """Complete one interrupted move under its locks (taken in name order): forward if its log
    reached its destination, else back. What was done, or None if it was finished meanwhile."""
    if found.move is None:
        if not found.journal.exists():
            return None
        raise SessionStoreError(
            f"{TRASH}/{found.journal.name} is not a move journal this version can read: look at it and "
            f"{TRASH}/{_staging(found.journal).name}/, put what is staged there back by hand, then "
            "delete both (nothing was changed)"
        )
    move = found.move
    with ExitStack() as held:
        for name in sorted(set(move.locks)):
            held.enter_context(store.lock(name))
        if _read(found.journal) != move:
            return None  # finished by another process meanwhile
        src, dst = (at(store, p) for p in move.log)
        if _is_moved_log(dst, move):
            _settle(store, found.journal, move, forward=True)
            return f"finished `{move.what}`, interrupted after its log moved"
        if _is_moved_log(src, move):
            _settle(store, found.journal, move, forward=False)
            return f"undid `{move.what}`, interrupted before its log moved"
        raise SessionStoreError(
            f"`{move.what}` was interrupted and its log is at neither {move.log[0]} nor {move.log[1]}: "
            f"its refs and title wait in {TRASH}/{_staging(found.journal).name}/"
        )


def _is_moved_log(path: Path, move: Move) -> bool:
    """True if `path` is the log `move` moves: the same inode (a session created at that name after a
    crash is another file), or, for a journal without one, whatever is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return move.inode is None or st.st_ino == move.inode


def finish_involving(store: SessionStore, names: Iterable[str]) -> list[str]:
    """Finish the interrupted moves made under any of `names`' locks (call it holding no lock: each
    finish takes its own, in name order, so two never deadlock); what each did."""
    wanted = set(names)
    done = []
    for found in interrupted(store):
        mine = found.move is not None and wanted & set(found.move.locks)
        if mine and (said := finish(store, found)) is not None:
            done.append(said)
    return done
