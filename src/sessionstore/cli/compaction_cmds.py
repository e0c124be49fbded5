"""`session compact`, `session end` and `session demo`: the commands that run the porcelain's LLM side.

All of them import pydantic-ai (through the session), so they do it inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .history_cmds import log
from .output import (
    colour_enabled,
    complete_session,
    fail,
    on_current_head,
    open_store,
    require_session,
    store_path,
)

if TYPE_CHECKING:
    from ..porcelain.store import SessionStore


def compact(store: SessionStore, name: str, *, focus: str | None = None) -> int:
    """`session compact`: full compaction of `name` now; exit 0. An empty or blank `focus` is refused
    before anything is read or written (it would silently mean "no focus")."""
    if focus is not None and not focus.strip():
        raise fail(
            "--focus is empty: say what the summary should keep in detail "
            '(--focus "the auth tests"), or leave --focus out'
        )
    name = require_session(store, name)
    before: list[int] = []

    def run(session: Any) -> Any:
        before[:] = [session.tokens]
        return session.compact(focus=focus)

    commit = on_current_head(store, name, f"compact {name}", run)
    ref = f"checkpoints/{name}/{commit.extra.get('checkpoint')}"
    click.echo(
        f"{commit.id[:7]} compaction tier {commit.tier} [{ref}] {before[0]:,} -> {commit.tokens:,} tok, "
        f"{commit.count} messages"
    )
    return 0


@click.command("compact")
@click.argument("name", shell_complete=complete_session)
@click.option("--focus", default=None, help="What the summary should keep in detail (like /compact FOCUS).")
@click.pass_context
def compact_cmd(ctx: click.Context, name: str, focus: str | None) -> int:
    """Full compaction of NAME now: summary + recent tail, persisted as a checkpoint.

    Runs whatever the levels and the compaction switch say; says the session is busy (and changes
    nothing) when a running turn holds its lock. `session checkout` of an earlier commit undoes it.

    \b
    Example:  session compact fix-auth --focus "the auth tests"
    """
    return compact(open_store(ctx), name, focus=focus)


def end(store: SessionStore, name: str) -> int:
    """`session end`: one dated bullet for `name` in MEMORY.md; exit 0."""
    update = store.session(require_session(store, name), create=False).end()
    click.echo(update.describe())
    for note in update.notes:
        click.echo(f"  {note}")
    return 0


@click.command("end")
@click.argument("name", shell_complete=complete_session)
@click.pass_context
def end_cmd(ctx: click.Context, name: str) -> int:
    """Record NAME in the team's MEMORY.md (one dated bullet; compressed past its caps).

    \b
    Example:  session end fix-auth
    """
    return end(open_store(ctx), name)


@click.command("demo")
@click.option("--name", default=None, help="Session name (default: demo, demo-2, ... whichever is free).")
@click.pass_context
def demo_cmd(ctx: click.Context, name: str | None) -> int:
    """Run an offline scripted coding agent until micro, full and ultimate compaction have all fired.

    No network and no API key: the model is a pydantic-ai FunctionModel playing a script, while its
    tools really read a generated project and run commands in it. Writes to the store (created if
    missing), prints the gauge after every turn, and ends with what shows what happened: the gauge,
    the last five commits, and the command that writes the page (transcript and context chart).

    \b
    Example:  session --store /tmp/demo demo
    """
    from ..cli.demo import run_demo
    from .accounting_cmds import gauge_of

    path = store_path(ctx)
    session = run_demo(Path(path) if path else None, click.echo, color=colour_enabled(), name=name)
    store, name = open_store(ctx), session.name
    click.echo(f"\n$ session gauge {name}")
    gauge_of(store, name, plain=False, fmt=None, model=None)
    click.echo(f"\n$ session log {name} --oneline -n 5")
    log(store, name, oneline=True, limit=5)
    click.echo(f"\n$ session export {name} --format html > {name}.html   # the page: transcript and chart")
    return 0
