"""`session init`, `list`, `fsck` and `gc`: the store as a whole.

`list` reads one head line per session and the checkpoint refs, never a blob: it must not import
pydantic-ai (a subprocess test pins it).
"""

from __future__ import annotations

import sys

import click
import orjson

from ..errors import CorruptObjectError, NotAStoreError
from ..porcelain.gauge import Gauge, commit_gauges
from ..porcelain.store import SessionInfo, SessionStore
from .output import (
    Painter,
    emit,
    number,
    open_store,
    painter,
    plural,
    progress,
    relative_time,
    short_id,
)


@click.command("init")
@click.pass_context
def init_cmd(ctx: click.Context) -> None:
    """Create the session store (default: .sessions at the git top level)."""
    try:
        existing = open_store(ctx, create=False)
    except NotAStoreError:  # not a store yet; a path that cannot become one is refused by the create
        existing = None
    if existing is not None:
        count = plural(len(existing.sessions()), "session")
        click.echo(f"{existing.root} is already a session store ({count})")
        return
    store = open_store(ctx, create=True)
    click.echo(f"Initialized empty session store in {store.root.resolve()}")


def gauge_cell(reading: Gauge, paint: Painter) -> str:
    """The context column of `session list`: `◕ 71%`, coloured by the band the triggers use."""
    text = f"{reading.glyph} {reading.percent}%"
    return paint(text, fg=reading.band) if reading.band else text


def _infos(store: SessionStore) -> tuple[list[SessionInfo], dict[str, str]]:
    """Every session's info, and the damaged ones with their error: one bad log hides no other."""
    try:
        return store.infos(), {}  # the fast path: one listing per directory
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


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session, per line.")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """List sessions: messages, context, checkpoints and when each last changed."""
    store = open_store(ctx)
    infos, damaged = _infos(store)
    readings = commit_gauges([info.head for info in infos], store.settings)
    if as_json:
        for info, reading in zip(infos, readings, strict=True):
            head = info.head
            record = {
                "name": info.name,
                "messages": info.count,
                "tokens": info.tokens,
                "percent": reading.percent,
                "window": reading.window,
                "checkpoints": info.checkpoints,
                "head": head.id if head else None,
                "seq": head.seq if head else 0,
                "time": head.time if head else None,
            }
            click.echo(orjson.dumps(record).decode())
        for name, error in damaged.items():
            click.echo(orjson.dumps({"name": name, "error": error}).decode())
        return
    if not infos and not damaged:
        click.echo("no sessions yet: `session import FILE` brings one in", err=True)
        return
    paint = painter()
    rows = [
        (
            info.name,
            plural(info.count, "msg"),
            f"{reading.glyph} {reading.percent}%",
            plural(info.checkpoints, "checkpoint") if info.checkpoints else "",
            relative_time(info.head.time) if info.head else "empty",
        )
        for info, reading in zip(infos, readings, strict=True)
    ]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(5)]
    lines = []
    for (name, msgs, level, ckpts, when), info, reading in zip(rows, infos, readings, strict=True):
        cells = [
            paint(name.ljust(widths[0]), bold=True),
            msgs.rjust(widths[1]),
            " " * (widths[2] - len(level)) + gauge_cell(reading, paint),
            *([ckpts.ljust(widths[3])] if widths[3] else []),  # no empty column when none has any
            when.ljust(widths[4]),
            paint(short_id(info.head.id if info.head else None), fg="yellow"),
        ]
        lines.append(("  " + "  ".join(cells)).rstrip())
    for name, why in damaged.items():
        label = paint(name.ljust(widths[0]), bold=True)
        if "git merge conflict" in why:  # MergeConflictError: two clones appended to this session
            lines.append(f"  {label}  {paint('merge conflict', fg='red')}: `session fsck --repair` splits it")
        else:
            lines.append(f"  {label}  {paint('damaged', fg='red')}: run `session fsck`")
    emit(lines)


@click.command("fsck")
@click.option("--repair", is_flag=True, help="Cut torn log tails and recreate missing checkpoint refs.")
@click.pass_context
def fsck_cmd(ctx: click.Context, repair: bool) -> None:
    """Verify every log, blob and checkpoint ref; exit 1 while problems remain."""
    from ..porcelain import maintenance

    store = open_store(ctx)
    with progress("checking sessions") as bar:
        report = maintenance.fsck(store, repair=repair, progress=bar)
    paint = painter()
    for line in report.repaired:
        click.echo(f"{paint('repaired', fg='green')}: {line}")
    for line in report.problems:
        click.echo(f"{paint('problem', fg='red')}: {line}")
    summary = (
        f"checked {plural(report.sessions, 'session')}, {plural(report.commits, 'commit')}, "
        f"{plural(report.objects, 'object')}"
    )
    if report.ok:
        click.echo(f"{summary}: ok")
        return
    fix = "" if repair else "; `session fsck --repair` fixes what is derivable"
    click.echo(f"{summary}: {plural(len(report.problems), 'problem')}{fix}", err=True)
    sys.exit(1)


@click.command("gc")
@click.option(
    "--grace",
    "grace_days",
    type=click.FloatRange(min=0),
    default=14.0,
    show_default=True,
    help="Keep unreachable blobs younger than this many days.",
)
@click.option("--dry-run", is_flag=True, help="Report what would be removed; delete nothing.")
@click.option(
    "--include-committed",
    is_flag=True,
    help="Also remove unreachable blobs git tracks (another clone may need them).",
)
@click.pass_context
def gc_cmd(ctx: click.Context, grace_days: float, dry_run: bool, include_committed: bool) -> None:
    """Delete blobs no session reaches that are older than the grace period."""
    from ..porcelain import maintenance

    store = open_store(ctx)
    with progress("collecting garbage") as bar:
        report = maintenance.gc(
            store, grace_days=grace_days, dry_run=dry_run, include_committed=include_committed, progress=bar
        )
    verb = "would remove" if dry_run else "removed"
    committed = (
        f", {number(report.kept_committed)} unreachable that git tracks (--include-committed removes them)"
        if report.kept_committed
        else ""
    )
    click.echo(
        f"{verb} {plural(len(report.removed), 'unreachable object')} ({number(report.freed_bytes)} bytes); "
        f"kept {number(report.kept_young)} younger than {grace_days:g} days{committed} and "
        f"{number(report.reachable)} reachable"
    )


COMMANDS: list[click.Command] = [init_cmd, list_cmd, fsck_cmd, gc_cmd]
