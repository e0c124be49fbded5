"""`session compact`, `session end` and `session demo`: the commands that run the porcelain's LLM side.

All of them import pydantic-ai (through the session), so they do it inside the command.
"""

from __future__ import annotations

from pathlib import Path

import click

from .history_cmds import log_cmd
from .output import colour_enabled, open_store, require_session, store_path


@click.command("compact")
@click.argument("name")
@click.option("--focus", default=None, help="What the summary should keep in detail (like /compact FOCUS).")
@click.pass_context
def compact_cmd(ctx: click.Context, name: str, focus: str | None) -> None:
    """Full compaction of NAME now: summary + recent tail, persisted as a checkpoint.

    Runs whatever the levels and the compaction switch say; says the session is busy (and changes
    nothing) when a running turn holds its lock. `session checkout` of an earlier commit undoes it.
    """
    store = open_store(ctx)
    require_session(store, name)
    session = store.session(name, create=False)
    before = session.tokens
    commit = session.compact(focus=focus)
    ref = f"checkpoints/{name}/{commit.extra.get('checkpoint')}"
    click.echo(
        f"{commit.id[:7]} compaction tier {commit.tier} [{ref}] {before:,} -> {commit.tokens:,} tok, "
        f"{commit.count} messages"
    )


@click.command("end")
@click.argument("name")
@click.pass_context
def end_cmd(ctx: click.Context, name: str) -> None:
    """Record NAME in the team's MEMORY.md (one dated bullet; compressed past its caps)."""
    store = open_store(ctx)
    require_session(store, name)
    update = store.session(name, create=False).end()
    click.echo(update.describe())
    for note in update.notes:
        click.echo(f"  {note}")


@click.command("demo")
@click.option("--name", default=None, help="Session name (default: demo, demo-2, ... whichever is free).")
@click.pass_context
def demo_cmd(ctx: click.Context, name: str | None) -> None:
    """Run an offline scripted coding agent until micro, full and ultimate compaction have all fired.

    No network and no API key: the model is a pydantic-ai FunctionModel playing a script, while its
    tools really read a generated project and run commands in it. Writes to the store (created if
    missing), prints the gauge after every turn and `session log --oneline` at the end.
    """
    from ..cli.demo import run_demo

    path = store_path(ctx)
    session = run_demo(Path(path) if path else None, click.echo, color=colour_enabled(), name=name)
    click.echo(f"\n$ session log {session.name} --oneline")
    ctx.invoke(log_cmd, name=session.name, oneline=True, as_json=False, limit=None)


COMMANDS = [compact_cmd, end_cmd, demo_cmd]
