"""`session init`, `list`, `fsck` and `gc`: the store as a whole (`list`'s rows: cli/listing.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import NotAStoreError
from ..porcelain.store import SessionStore
from .list_filters import SORTS, Selection, since_us
from .listing import list_sessions
from .output import (
    complete_session,
    json_options,
    number,
    open_store,
    painter,
    plural,
    print_json,
    printable,
    progress,
    store_path,
)

if TYPE_CHECKING:
    from ..porcelain.maintenance.fsck_gc import FsckReport


def init(path: str | None) -> int:
    """`session init`: create the store at `path` (default root), or say it already is one; exit 0."""
    try:
        existing = SessionStore.open(path, create=False, warm=False)
    except NotAStoreError:  # not a store yet; a path that cannot become one is refused by the create
        existing = None
    if existing is not None:
        count = plural(len(existing.sessions()), "session")
        above = path is None and existing.root.parent != Path.cwd().resolve()
        here = f", found above {Path.cwd()}; `session --store .sessions init` makes one here"
        where = here if above else ""
        click.echo(f"{existing.root} is already a session store ({count}{where})")
        return 0
    store = SessionStore.open(path, create=True, warm=False)
    click.echo(f"Initialized empty session store in {store.root.resolve()}")
    return 0


@click.command("init")
@click.pass_context
def init_cmd(ctx: click.Context) -> int:
    """Create the session store (default: .sessions at the git top level).

    \b
    Example:  session init && session import --example
    """
    return init(store_path(ctx))


@click.command("list")
@click.argument("pattern", required=False, shell_complete=complete_session)
@json_options(stream=True)
@click.option(
    "--sort", type=click.Choice(SORTS), default="name", show_default=True,
    help="By name, by time (newest first) or by tokens (largest context first).",
)  # fmt: skip
@click.option(
    "--since", default=None, help="Only sessions changed since: an age (30m, 2h, 3d, 1w) or a date."
)
@click.pass_context
def list_cmd(ctx: click.Context, fmt: str | None, pattern: str | None, sort: str, since: str | None) -> int:
    """List sessions: messages, context, checkpoints, when each last changed, and its title.

    PATTERN (a glob, e.g. 'fix-*') shows only the sessions whose names match it.

    \b
    Example:  session list --sort time --since 3d
              session list 'taubench-*' --json | jq '.[] | select(.percent > 60) | .name'
    """
    only = Selection(pattern, since_us(since) if since is not None else None, sort)
    return list_sessions(open_store(ctx), fmt=fmt, only=only)


def fsck(store: SessionStore, *, repair: bool = False, fmt: str | None = None) -> int:
    """`session fsck`: exit 0 when the store is sound, 1 while problems remain."""
    from ..porcelain.maintenance import fsck_gc as maintenance

    with progress("checking sessions") as bar:
        report = maintenance.fsck(store, repair=repair, progress=bar)
    _check_conversation_index(store, repair, report)
    if fmt == "json":
        print_json({
            "ok": report.ok, "sessions": report.sessions, "commits": report.commits,
            "objects": report.objects, "problems": report.problems, "repaired": report.repaired,
            "notes": report.notes,
        })  # fmt: skip
        return 0 if report.ok else 1
    paint = painter()
    for line in report.repaired:
        click.echo(f"{paint('repaired', fg='green')}: {printable(line)}")
    for line in report.problems:
        click.echo(f"{paint('problem', fg='red')}: {printable(line)}")
    for line in report.notes:
        click.echo(f"{paint('note', fg='yellow')}: {printable(line)}")
    summary = (
        f"checked {plural(report.sessions, 'session')}, {plural(report.commits, 'commit')}, "
        f"{plural(report.objects, 'object')}"
    )
    if report.ok:
        click.echo(f"{summary}: ok")
        return 0
    fix = "" if repair else "; `session fsck --repair` fixes what is derivable"
    click.echo(f"{summary}: {plural(len(report.problems), 'problem')}{fix}", err=True)
    return 1


def _check_conversation_index(store: SessionStore, repair: bool, report: FsckReport) -> None:
    """FileConversationStore's index (integrations, above the porcelain fsck): checked, and rebuilt
    from the logs with `repair`; only when the store has one."""
    from ..integrations.conversation_index import INDEX_FILE, check_index, rebuild_index

    if store.on_object_storage:
        return
    problems = check_index(store)  # none when it has none (checks index/ first)
    if problems and repair:
        listed = rebuild_index(store)
        report.repaired.append(f"rebuilt {INDEX_FILE} from the logs ({plural(listed, 'conversation')})")
    else:
        report.problems.extend(problems)


@click.command("fsck")
@click.option("--repair", is_flag=True, help="Cut torn log tails and recreate missing checkpoint refs.")
@json_options(stream=False)
@click.pass_context
def fsck_cmd(ctx: click.Context, repair: bool, fmt: str | None) -> int:
    """Verify every log, blob and checkpoint ref; exit 1 while problems remain.

    \b
    Example:  session fsck --repair
    """
    return fsck(open_store(ctx), repair=repair, fmt=fmt)


def gc(
    store: SessionStore,
    *,
    grace_days: float = 14.0,
    dry_run: bool = False,
    include_committed: bool = False,
    fmt: str | None = None,
) -> int:
    """`session gc`: delete unreachable blobs older than `grace_days`; exit 0."""
    with progress("collecting garbage") as bar:
        report = store.gc(
            grace_days=grace_days, dry_run=dry_run, include_committed=include_committed, progress=bar
        )
    if fmt == "json":
        print_json({
            "dry_run": dry_run, "grace_days": grace_days, "removed": report.removed,
            "freed_bytes": report.freed_bytes, "kept_young": report.kept_young,
            "kept_committed": report.kept_committed, "reachable": report.reachable,
            "trash_removed": report.trash_removed, "temps_removed": report.temps_removed,
            "temps_kept": report.temps_kept,
        })  # fmt: skip
        return 0
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
    if report.trash_removed:
        click.echo(
            f"{verb} {number(len(report.trash_removed))} trash "
            f"{'entry' if len(report.trash_removed) == 1 else 'entries'} older than {grace_days:g} days "
            "(`session rm --undo` can no longer restore them)"
        )
    if report.temps_removed or report.temps_kept:
        young = (
            f"; kept {number(report.temps_kept)} younger than {grace_days:g} days"
            if report.temps_kept
            else ""
        )
        click.echo(
            f"{verb} {plural(len(report.temps_removed), 'leftover temp file')} of writes a crash interrupted "
            f"(refs/checkpoints/*/.tmp-*, titles/.tmp-*, trash/.tmp-*){young}"
        )
    return 0


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
@json_options(stream=False)
@click.pass_context
def gc_cmd(
    ctx: click.Context, grace_days: float, dry_run: bool, include_committed: bool, fmt: str | None
) -> int:
    """Delete blobs no session reaches that are older than the grace period.

    \b
    Example:  session gc --grace 0 --dry-run
    """
    return gc(
        open_store(ctx), grace_days=grace_days, dry_run=dry_run, include_committed=include_committed, fmt=fmt
    )
