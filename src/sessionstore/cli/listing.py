"""`session list`: every session's row, from the heads cache (index/sessions.json) and, for an
unchanged store, the columns it remembered (`HeadsCache.memo`); only the head lines and first blobs
of sessions that changed since are read, never pydantic-ai (a subprocess test pins it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from fnmatch import fnmatchcase
from itertools import repeat
from typing import TYPE_CHECKING, Any

import click

from ..errors import CorruptObjectError
from ..plumbing.collector import paused_gc
from ..porcelain.session.heads import Cells, HeadsCache, Row
from ..porcelain.session.heads import infos as cached_infos
from ..porcelain.store import SessionInfo, SessionStore
from .list_filters import Selection, head_times
from .output import (
    MINUTE_US,
    Ages,
    Painter,
    emit,
    epoch_us,
    painter,
    plural,
    print_json,
    print_jsonl,
    printable,
    short_id,
)

if TYPE_CHECKING:
    from ..plumbing.commits import Commit
    from ..porcelain.session.layout import StoreLayout


def _derived_title(
    store: StoreLayout, name: str, start: bytes, whole: bool, head: Commit | None
) -> tuple[str, int] | None:
    """`naming.title_from_start`, imported only when the heads cache lacks a title (never on an empty
    store): once per listing, not once per session."""
    derive = _LAZY.get("title")
    if derive is None:
        from ..porcelain.history.naming import title_from_start as derive

        _LAZY["title"] = derive
    return derive(store, name, start, whole, head)


_LAZY: dict[str, Any] = {}
"""What the rows the cache lacks need, imported at the first such row (`_derived_title`, `cells_of`)."""


def _infos(store: SessionStore) -> tuple[list[SessionInfo], dict[str, str]]:
    """Every session's info, and the damaged ones with their error: one bad log hides no other."""
    try:
        if store.on_object_storage:  # the heads' hints, O(sessions / 1000) requests (DESIGN §13)
            return store.infos(), {}
        # the fast path: the heads cache (index/sessions.json)
        return cached_infos(store, titler=_derived_title), {}
    except CorruptObjectError:
        pass
    infos: list[SessionInfo] = []
    damaged: dict[str, str] = {}
    for name in store.sessions():
        try:
            infos.append(store.info(name))
        except CorruptObjectError as err:
            damaged[name] = str(err)
    return infos, damaged


NAME_WIDTH = 36
"""Widest name column of `session list` (a uuid); a longer name is cut with `…` (see `show NAME`)."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def list_records(store: SessionStore) -> list[dict[str, Any]]:
    """`session list --json`: one object per session (schema in docs/cli.md)."""
    from ..porcelain.history.lookup import conversation_json
    from ..porcelain.history.naming import title, titled
    from ..porcelain.session.gauge import commit_gauges

    infos, damaged = _infos(store)
    readings = commit_gauges([info.head for info in infos], store.settings)
    named = titled(store)
    out: list[dict[str, Any]] = []
    for info, reading in zip(infos, readings, strict=True):
        head = info.head
        out.append({
            "name": info.name, "title": _title(store, info, named, title), "messages": info.count,
            "tokens": info.tokens, "percent": reading.percent, "window": reading.window,
            "checkpoints": info.checkpoints, "head": head.id if head else None,
            "seq": head.seq if head else 0, "time": head.time if head else None,
            "conversation": conversation_json(head),
        })  # fmt: skip
    out.extend({"name": name, "error": error} for name, error in damaged.items())
    return out


def _title(
    store: SessionStore, info: SessionInfo, named: frozenset[str], title: Callable[[SessionStore, str], str]
) -> str:
    """`title(store, name)`, from the heads cache unless the session has a set title (`titled`)."""
    if info.title is not None and info.name not in named:
        return info.title
    return title(store, info.name)


def list_sessions(store: SessionStore, *, fmt: str | None = None, only: Selection | None = None) -> int:
    """`session list`: every session (or those `only` selects, in its order) with its size, gauge,
    checkpoints, age and title; exit 0."""
    only = only or Selection()
    if fmt in ("json", "jsonl"):
        records = list_records(store)
        if not only.everything:
            names = [r["name"] for r in records]
            when = {r["name"]: epoch_us(r["time"]) if r.get("time") else None for r in records}
            picked = only.order(names, when, {r["name"]: r.get("tokens", 0) for r in records})
            records = [records[i] for i in picked]
        (print_json if fmt == "json" else print_jsonl)(records)
        return 0
    paint = painter()
    # Thousands of rows, none of them garbage (see `paused_gc`), and all of them freed before the
    # collector resumes: it would otherwise go over every one left from the pause at its next turn.
    with paused_gc():
        names, columns, damaged = table(store, paint)
        if columns is None and not damaged:
            click.echo("no sessions yet: `session import FILE` brings one in", err=True)
            return 0
        if not only.everything:
            names, columns, damaged = _selected(store, only, names, columns, damaged)
            if not names and not damaged:
                click.echo("no session matches (`session list` shows them all)", err=True)
                return 0
        lines = list_lines(store, names, columns, damaged, paint)
        del columns, names
        emit(lines)
        del lines
    return 0


def _selected(
    store: SessionStore,
    only: Selection,
    names: list[str],
    columns: dict[str, Any] | None,
    damaged: dict[str, str],
) -> tuple[list[str], dict[str, Any] | None, dict[str, str]]:
    """The rows `only` selects, in its order (a damaged session is kept when its name matches)."""
    when, tokens = head_times(store)
    picked = only.order(names, when, tokens)
    if columns is not None:
        columns = {
            key: [value[i] for i in picked] if isinstance(value, list) else value
            for key, value in columns.items()
        }
    damaged = {n: why for n, why in damaged.items() if only.pattern is None or fnmatchcase(n, only.pattern)}
    return [names[i] for i in picked], columns, damaged


LIST_CELLS = "session-list 2"
"""The format of the cells `cells_of` makes; change it with them, so cached cells are made again."""


def cells_of(store: SessionStore) -> tuple[Cells, str]:
    """What `session list` shows of a head that does not depend on the time or on other sessions
    (messages, level and its band, the time as `epoch_us`, the short id, the conversation label), as
    the heads cache keeps it, and the tag naming everything else they depend on: the cells' format,
    the settings (all of them) and every `SESSIONSTORE_*` variable (the levels read the threshold
    override from the environment). More than the readings read, never less: a changed tag only
    makes the cells again. Nothing is imported for it: a listing the cache holds reads no gauge."""
    from ..accounting.settings import ENV_PREFIX

    settings = store.settings
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIX))
    tag = f"{LIST_CELLS} {settings!r} {env!r}"

    readings: dict[tuple[Any, ...] | None, tuple[str, str]] = {}  # (level, band) per distinct state
    counts: dict[int, str] = {}  # "N msgs" per distinct count

    def cells(head: Commit | None) -> list[Any]:
        if "gauges" not in _LAZY:  # lazily: only a head the cache lacks
            from ..porcelain.history.lookup import conversation_of
            from ..porcelain.session.gauge import commit_gauges

            _LAZY["gauges"], _LAZY["conversation"] = commit_gauges, conversation_of
        # what `commit_gauges` reads of a head (its window, its level, whether it is a compaction)
        extra = head.extra if head is not None else {}
        state = None if head is None else (
            extra.get("capacity"), extra.get("measured", head.tokens), head.kind == "compaction"
        )  # fmt: skip
        level = readings.get(state)
        if level is None:  # one gauge per distinct state, as `commit_gauges` shares them
            reading = _LAZY["gauges"]([head], settings)[0]
            level = readings[state] = (f"{reading.glyph} {reading.percent}%", reading.band)
        label = None  # the title column: a conversation's id and scope, else the title
        if "conversation" in extra and (record := _LAZY["conversation"](head)) is not None:
            scope = f" [{record['scope']}]" if record.get("scope") else ""
            label = printable(f"conversation {_cut(str(record.get('conversation_id')), 40)}{scope}")
        if head is None:
            return ["0 msgs", level[0], level[1], "empty", short_id(None), label]
        count = head.count
        msgs = counts.get(count) or counts.setdefault(count, plural(count, "msg"))
        when = epoch_us(head.time)
        return [msgs, level[0], level[1], head.time if when is None else when, short_id(head.id), label]

    return cells, tag


def table(store: SessionStore, paint: Painter) -> tuple[list[str], dict[str, Any] | None, dict[str, str]]:
    """Every session's name, their `_columns` (None: no session), and the damaged ones with their
    error: one bad log hides no other. Without colour, the columns themselves are what the heads cache
    remembers (`HeadsCache.memo`): an unchanged store is listed without a row being looked at."""
    cells, tag = cells_of(store)
    if store.on_object_storage:  # no heads cache file: the rows from the heads' hints, untitled
        infos, damaged = _infos(store)
        rows = [(info.name, info.checkpoints, "", cells(info.head)) for info in infos]
        return [row[0] for row in rows], _columns(rows, paint), damaged
    cache = HeadsCache(store)
    try:  # the fast path: what the heads cache (index/sessions.json) holds is not made again
        if not paint.enabled:
            names, columns = cache.memo(_derived_title, cells, tag, lambda rows: _columns(rows, paint))
        else:
            rows = cache.listing(_derived_title, cells, tag)
            names, columns = [row[0] for row in rows], _columns(rows, paint)
        return names, columns, {}
    except CorruptObjectError:
        pass
    infos, damaged = _infos(store)
    rows = [(info.name, info.checkpoints, None, cells(info.head)) for info in infos]
    return [row[0] for row in rows], _columns(rows, paint), damaged


def _columns(rows: list[Row], paint: Painter) -> dict[str, Any] | None:
    """The columns of `session list` that do not depend on the time, one list each (None: no rows):
    each row's `prefix` (name, messages, level and checkpoints, padded to the widest and coloured by
    `paint`), its time (`epoch_us`, or the text to show), short id and label (a conversation's, else
    the derived title; `conv`: a conversation's, which a set title does not replace)."""
    if not rows:
        return None
    cells = [row[3] for row in rows]
    names = [name if len(name) <= NAME_WIDTH else _cut(name, NAME_WIDTH) for name, _, _, _ in rows]
    msgs = [c[0] for c in cells]
    levels = [c[1] for c in cells]
    ckpts = [plural(n, "checkpoint") if n else "" for _, n, _, _ in rows]
    w_name, w_msgs, w_level, w_ckpts = (max(map(len, column)) for column in (names, msgs, levels, ckpts))
    bold, bold_end = paint.codes(bold=True)
    if paint.enabled:
        bands = {band: paint.codes(fg=band) for band in ("green", "yellow", "red")}
        bands[None] = ("", "")
        levels = [
            f"{' ' * (w_level - len(level))}{bands[c[2]][0]}{level}{bands[c[2]][1]}"
            for level, c in zip(levels, cells, strict=True)
        ]
    else:
        levels = list(map(str.rjust, levels, repeat(w_level)))
    if w_ckpts:  # no empty column when none has any
        ckpts = [f"{text.ljust(w_ckpts)}  " for text in ckpts]
    return {
        "prefix": [
            f"  {bold}{name.ljust(w_name)}{bold_end}  {m.rjust(w_msgs)}  {level}  {ckpt}"
            for name, m, level, ckpt in zip(names, msgs, levels, ckpts, strict=True)
        ],
        "when": [c[3] for c in cells],
        "sid": [c[4] for c in cells],
        "label": [  # a derived title is the user's own words: shown literally
            c[5] if c[5] is not None else printable(derived or "")
            for (_, _, derived, _), c in zip(rows, cells, strict=True)
        ],
        "conv": [c[5] is not None for c in cells],
        "w_name": w_name,
    }


def list_lines(
    store: SessionStore,
    names: list[str],
    columns: dict[str, Any] | None,
    damaged: dict[str, str],
    paint: Painter,
) -> list[str]:
    """The lines of `session list`: one per session, columns padded to the widest cell.

    Runs once per session of a store of thousands, on the columns `_columns` made (or the heads
    cache remembered): the relative time once per distinct minute (`Ages`), a set title read for
    each session that has one, then each line one f-string with the colour codes worked out once
    (`Painter.codes`), never one `click.style` per cell."""
    lines: list[str] = []
    bold, bold_end = paint.codes(bold=True)
    w_name = 0
    if columns is not None:
        from ..porcelain.history.naming import title, titled

        named = titled(store)
        ages = Ages()
        now_us = ages.now_us
        whens = [
            when if when.__class__ is str else ages[(now_us - when) // MINUTE_US] for when in columns["when"]
        ]
        w_when = max(map(len, whens))
        labels = columns["label"]
        if named:  # a set title, read now (it may have been edited in place), unless a conversation's
            labels = [
                printable(title(store, name)) if name in named and not conv else label
                for name, label, conv in zip(names, labels, columns["conv"], strict=True)
            ]
        yellow, yellow_end = paint.codes(fg="yellow")
        dim, dim_end = paint.codes(dim=True)
        lines = [
            f"{prefix}{when.ljust(w_when)}  {yellow}{sid}{yellow_end}  {dim}{label}{dim_end}".rstrip()
            for prefix, when, sid, label in zip(columns["prefix"], whens, columns["sid"], labels, strict=True)
        ]
        w_name = columns["w_name"]
    for name, why in damaged.items():
        cell = f"{bold}{_cut(name, NAME_WIDTH).ljust(w_name)}{bold_end}"
        if "git merge conflict" in why:  # MergeConflictError: two clones appended to this session
            lines.append(f"  {cell}  {paint('merge conflict', fg='red')}: `session fsck --repair` splits it")
        else:
            lines.append(f"  {cell}  {paint('damaged', fg='red')}: run `session fsck`")
    return lines
