"""`session rm`, `rm --undo`, `rename` and titles: what a session is called, over the store's public API.

Beside DESIGN §2's layout this module keeps two directories of its own:

- `titles/<name>`: a title set by `session rename --title` (one UTF-8 line). Without one, a
  session's title is derived from its first real user request (`derived_title`, the rule in
  `session.first_request`): recorded on the commit line where it is first known, or read from the
  first blobs of a log written before that (orjson, never pydantic-ai): `session list` shows it.
- `trash/<name>.<utc stamp>/`: what `rm` took away, as git's reflog keeps a deleted branch: `log.jsonl`,
  its checkpoint refs (`refs/`) and its `title`. The blobs stay where they are: `session gc` counts a
  trash entry younger than its grace period as reaching them (`trash_by_age`), so `rm --undo NAME`
  puts the newest entry back for that long; an older entry gc deletes (`purge_removed`), with the
  blobs only it reached (those older than the grace period: they are unreachable by then).

Atomicity. Moving the log file is the commit point of each operation (one `rename(2)`, directory
fsynced): before it, the session is where it was; after it, where it goes. Refs and title go with it
as one journalled move (`file_moves`): a kill -9 at any instant leaves no name with refs or a title but no
log, and the next naming command on those names (or `session fsck --repair`) finishes the move from
its journal. `rename` holds both sessions' locks (in name order, so two renames cannot deadlock);
`rm` and `rm --undo` hold the session's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.errors import SessionStoreError, StorePathError
from sessionstore.plumbing.commits import verifies
from sessionstore.plumbing.fsutil import atomic_replace, fsync_dir, read_regular
from sessionstore.plumbing.names import check_name
from sessionstore.porcelain.history.lookup import conversation_of
from sessionstore.porcelain.session import file_moves
from sessionstore.porcelain.session.first_request import (
    FIELD,
    TITLE_COMMITS,
    first_request,
    title_blobs,
)

if TYPE_CHECKING:
    from sessionstore.plumbing.commits import Commit
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

STAMP = "%Y%m%dT%H%M%S%fZ"
"""A trash entry's UTC time (no dot in it: the entry is `<name>.<stamp>` and names may hold dots)."""


_titles = file_moves.titles_dir
_trash = file_moves.trash_dir


# --- titles -----------------------------------------------------------------------------------------


def derived_title(store: SessionStore, name: str) -> str:
    """The first real user request of session `name` (in its first few commits), shortened; ''
    when there is none, or when a blob it is in is missing or damaged. Reads log lines and blobs
    with orjson only."""
    found = title_from_start(store, name, b"", False)
    return found[0] if found is not None else ""


def title_from_start(
    store: SessionStore, name: str, start: bytes, whole: bool, head: Commit | None = None
) -> tuple[str, int] | None:
    """`derived_title` of session `name` from `start`, its log's first bytes (`whole`: the entire
    log; else the log's first lines are read again when those in `start` do not settle it), with how
    many bytes of the log it depends on: the same bytes there give the same title. -1: not to be kept
    by its bytes: it depends on lines still to come (the log held no request in the commits looked
    through, so any change may change it), or a line records it, which is read again at no cost
    (no blob) whenever the log changes. `head`: the log's last commit as the caller read and
    verified it, if it did (a one-line log's title is then taken from it, not verified again).

    A line that records its `title` (`first_request.title_field`) is taken at its word once its id
    verifies: no blob is opened for it. For a line without one (written before the field), each of
    its blobs is read whole and hashed, and only its first `FIRST_BLOB_BYTES` looked through, as
    `derived_title` always did. None when such a blob is missing or does not verify against its id,
    or a line carrying a title does not verify: no title is made from unverified bytes (a flipped
    byte would misname the session), and the caller shows none and keeps none (`session fsck` names
    the damage)."""
    if head is not None and head.offset == 0 and isinstance(recorded := head.extra.get(FIELD), str):
        return recorded, -1  # the log's one line: nothing follows it
    found = _title_in(store, start, whole)
    if found is _MORE:
        found = _title_in(store, _log_start(store, name), True)
    return found


def _title_in(store: SessionStore, start: bytes, whole: bool) -> Any:
    """`title_from_start` of the lines in `start`, or `_MORE` when a line it needs is not all there
    (`whole` False: `start` may end inside a line)."""
    lines = start.split(b"\n")  # what `readline` gives, the torn tail or b"" included
    complete = len(lines) - 1  # those ending in a newline
    used = 0
    for i, first in enumerate(lines[:TITLE_COMMITS]):
        if i == complete and not whole:
            return _MORE
        if not first:
            return "", -1  # the end of the log
        try:
            commit = orjson.loads(first)
            recorded = commit.get(FIELD)
            blobs = title_blobs(commit) if recorded is None else []
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            return "", -1  # the end of the log (or a torn line)
        used += len(first) + 1
        if recorded is not None:
            if not isinstance(recorded, str) or not verifies(commit):
                return None
            if recorded:
                return recorded, -1
        for blob in blobs:
            request = _blob_request(store, blob)
            if request is None:
                return None
            if request:
                return request, used
    return "", used


_MORE: Any = object()


def _log_start(store: SessionStore, name: str) -> bytes:
    """The log's first `TITLE_COMMITS` lines (fewer at its end)."""
    try:  # never through a link: the path checks logs/, O_NOFOLLOW the log itself
        fd = os.open(store.log(name).path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""  # absent, a symlink or worse: reading the log names what it is
    with open(fd, "rb") as f:
        return b"".join([f.readline() for _ in range(TITLE_COMMITS)])


def _blob_request(store: SessionStore, blob: object) -> str | None:
    """`first_request` of blob `blob`; None when the blob is missing, unreadable or damaged (its
    bytes do not hash to `blob`). Runs once per session of an older log when `session list`
    rebuilds its cache."""
    if not isinstance(blob, str):  # a damaged line's field: no object
        return None
    try:  # `ObjectStore.read`: the id checked, never through a link, the bytes verified against it
        data = store.objects.read(blob)
    except StorePathError:
        raise  # a linked directory is refused, never read as a missing blob
    except (OSError, SessionStoreError):
        return None
    return first_request(data)


def title(store: SessionStore, name: str) -> str:
    """The title `session list` shows: the one set with `set_title`, else `derived_title`."""
    try:
        data = read_regular(_titles(store).file(check_name(name)), what=f"title of session {name!r}")
        return data.decode("utf-8").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return derived_title(store, name)


def titled(store: SessionStore) -> frozenset[str]:
    """Names of the sessions that have a set title (one listing: `session list` asks once); none on
    object storage, where titles are not kept yet."""
    if store.on_object_storage:
        return frozenset()
    return frozenset(_titles(store).listdir())


def set_title(store: SessionStore, name: str, text: str | None) -> None:
    """Set (or, with None or '', clear) the title of existing session `name`; durable."""
    store.directory_only("`session rename --title`", "titles are kept in a file beside the logs")
    file_moves.finish_involving(store, [name])  # a title a crash left staged is put in place first
    _existing(store, name)
    clean = " ".join((text or "").split())
    with store.lock(name):
        path = _titles(store).entry(name)
        if not clean:
            if os.path.lexists(path):
                path.unlink()
                fsync_dir(path.parent)
            return
        _titles(store).make()
        atomic_replace(path, (clean + "\n").encode())


# --- rm and undo ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Removed:
    """A trash entry: which session, when it was removed, and where it waits."""

    name: str
    when: str
    path: Path


def _existing(store: SessionStore, name: str) -> None:
    store.require(check_name(name))  # the store's unknown-session error, with its suggestions


def _relative(store: SessionStore, path: Path) -> str:
    return path.relative_to(store.root).as_posix()


def _followers(store: SessionStore, name: str) -> list[str]:
    """Store-relative paths of what goes with `name`'s log: its refs directory and its title."""
    return [_relative(store, store.refs.dir / name), _relative(store, _titles(store).path / name)]


def _clear_the_way(store: SessionStore, name: str) -> None:
    """Set aside refs or a title at `name` that have no log there (never valid: an older crash, or a
    hand edit), so a session arriving at `name` cannot inherit them; kept in the trash, not deleted."""
    if not store.exists(name):
        refs, title_file = _followers(store, name)
        file_moves.set_aside(store, file_moves.at(store, refs), f"refs-{name}")
        file_moves.set_aside(store, file_moves.at(store, title_file), f"title-{name}")


def remove(store: SessionStore, name: str) -> Removed:
    """Move session `name`'s log, checkpoint refs and title to the trash (see the module docstring)."""
    store.directory_only("`session rm`", "it moves the session into a trash directory, and a bucket has none")
    file_moves.finish_involving(store, [name])
    _existing(store, name)
    stamp = datetime.now(UTC).strftime(STAMP)
    entry = _trash(store).path / f"{name}.{stamp}"
    with store.lock(name):
        _existing(store, name)
        log = _relative(store, store.log(name).path)
        refs, title_file = _followers(store, name)
        into = _relative(store, entry)
        file_moves.run(store, file_moves.Move(
            what=f"session rm {name}", locks=(name,), log=(log, f"{into}/log.jsonl"),
            followers=((refs, f"{into}/refs"), (title_file, f"{into}/title")), made=into,
        ))  # fmt: skip
    return Removed(name, stamp, entry)


def removed(store: SessionStore, name: str | None = None) -> list[Removed]:
    """Trash entries (of `name`, or all), oldest first."""
    store.directory_only(
        "`session rm --list`", "it moves the session into a trash directory, and a bucket has none"
    )
    trash = _trash(store)
    out = []
    for entry in trash.listdir():
        base, _, stamp = entry.rpartition(".")
        if base and not entry.startswith(".") and stamp.endswith("Z") and (name is None or base == name):
            out.append(Removed(base, stamp, trash.path / entry))
    return sorted(out, key=lambda r: (r.name, r.when))


def removed_log(store: SessionStore, entry: Removed) -> Path:
    """The log file of trash entry `entry`, its directories checked (a link in their place refused)."""
    return (_trash(store) / entry.path.name).entry("log.jsonl")


def removed_at(entry: Removed) -> float:
    """When `entry` went to the trash, as a Unix time (its stamp)."""
    return datetime.strptime(entry.when, STAMP).replace(tzinfo=UTC).timestamp()


def trash_by_age(store: SessionStore, grace_days: float) -> tuple[list[Removed], list[Removed]]:
    """Trash entries split at the gc grace period: (young: `rm --undo` may still want their blobs,
    so gc keeps them; old: gc deletes them after their blobs)."""
    cutoff = datetime.now(UTC).timestamp() - grace_days * 86400
    young, old = [], []
    for entry in removed(store):
        try:
            (young if removed_at(entry) > cutoff else old).append(entry)
        except ValueError:  # a stamp this code did not write: keep the entry and its blobs
            young.append(entry)
    return young, old


def purge_removed(store: SessionStore, entries: list[Removed]) -> list[str]:
    """Delete trash entries for good (`session gc`, once older than its grace period); their names."""
    import shutil

    # An interrupted move may still need an entry (its log, or where its followers go): kept until
    # `fsck --repair` or the next naming command finishes that move.
    busy = {path for found in file_moves.interrupted(store) if found.move for path in found.move.paths()}
    out = []
    trash = _trash(store)
    for entry in entries:
        home = trash / entry.path.name
        if entry.path == home.path and home.exists():  # a link in its place is refused, never entered
            mine = _relative(store, entry.path)
            if any(path == mine or path.startswith(mine + "/") for path in busy):
                continue
            shutil.rmtree(home.check_tree())  # a link anywhere in it is refused, not deleted
            out.append(f"{entry.name}.{entry.when}")
    if out:
        fsync_dir(trash.path)
    return out


def undo_remove(store: SessionStore, name: str) -> Removed:
    """Put back the newest trash entry of `name`; refused if a session has that name again or if gc
    has already removed blobs it needs (nothing changes then)."""
    store.directory_only(
        "`session rm --undo`", "it moves the session into a trash directory, and a bucket has none"
    )
    check_name(name)
    file_moves.finish_involving(store, [name])
    entries = [e for e in removed(store, name) if os.path.lexists(removed_log(store, e))]
    if not entries:
        raise SessionStoreError(f"no removed session {name!r} to restore: `session rm --list` shows them")
    entry = entries[-1]
    with store.lock(name):
        if store.exists(name):
            raise SessionStoreError(
                f"session {name!r} exists again: rename it first (`session rename {name} NEW`), then undo"
            )
        from sessionstore.porcelain.maintenance.fsck_gc import (
            blobs_named,
        )  # here: `session list` imports this module, not fsck's

        if missing := sum(not store.objects.exists(b) for b in blobs_named(removed_log(store, entry))):
            raise SessionStoreError(
                f"cannot restore {name!r}: `session gc` has removed {missing} of its blobs since it was "
                f"removed; its log stays in {entry.path}"
            )
        _clear_the_way(store, name)
        refs, title_file = _followers(store, name)
        came = _relative(store, entry.path)
        file_moves.run(store, file_moves.Move(
            what=f"session rm --undo {name}", locks=(name,),
            log=(f"{came}/log.jsonl", _relative(store, store.log(name).path)),
            followers=((f"{came}/refs", refs), (f"{came}/title", title_file)), emptied=came,
        ))  # fmt: skip
    return entry


# --- rename ---------------------------------------------------------------------------------------------


def rename(store: SessionStore, old: str, new: str) -> None:
    """Rename session `old` to `new`, with its checkpoint refs and title (both locks held)."""
    store.directory_only(
        "`session rename`",
        "a rename is one atomic rename of the log, which a bucket cannot do "
        "(`session fork OLD NEW` copies the history under the new name)",
    )
    file_moves.finish_involving(store, [old, new])
    _existing(store, old)
    check_name(new)
    if old == new:
        raise SessionStoreError(f"session {old!r} already has that name: nothing to do")
    if conversation_of(store.log(old).head()) is not None:
        raise SessionStoreError(
            f"session {old!r} holds a FileConversationStore conversation, whose session name comes from "
            "its id: rename it through that store (fork it to a new id), not here"
        )
    first, second = sorted((old, new))
    with store.lock(first), store.lock(second):
        _existing(store, old)
        if store.exists(new):
            raise SessionStoreError(f"session {new!r} already exists: choose another name (nothing changed)")
        _clear_the_way(store, new)
        log = (_relative(store, store.log(old).path), _relative(store, store.log(new).path))
        pairs = tuple(zip(_followers(store, old), _followers(store, new), strict=True))
        file_moves.run(
            store,
            file_moves.Move(what=f"session rename {old} {new}", locks=(old, new), log=log, followers=pairs),
        )
