"""`session log`, `show`, `checkout` and `fork`: one session's history, git style.

`log` reads log lines only and never imports pydantic-ai (a subprocess test pins it); `show`,
`checkout` and `fork` load messages, so they import it inside their functions.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import click
import orjson

from ..plumbing.logs import Commit
from .output import (
    Painter,
    emit,
    local_time,
    number,
    open_store,
    painter,
    plural,
    relative_time,
    require_session,
    short_id,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..porcelain.store import SessionStore


def describe(commit: Commit, before: int | None) -> str:
    """What a commit did, in one line: `turn +6 msgs 151,022 tok`, `compaction tier 2 [...] a -> b tok`.

    `before` is the parent's token count (what a compaction started from); None for a first commit.
    """
    kind = commit.kind
    tokens = f"{number(commit.tokens)} tok"
    if kind == "compaction":
        ref = f"[checkpoints/{commit.session}/{commit.extra.get('checkpoint', '?')}]"
        source = " (imported)" if commit.extra.get("source") == "import" else ""
        return f"compaction tier {commit.tier}{source}  {ref}  {number(before or 0)} -> {tokens}"
    if kind in ("checkout", "fork"):
        origin = f" from {commit.extra['from']}" if kind == "fork" and "from" in commit.extra else ""
        return f"{kind:<10} -> {short_id(commit.target)}{origin}  {plural(commit.count, 'msg')}  {tokens}"
    return f"{kind:<10} +{plural(len(commit.sizes), 'msg')}  {tokens}{run_note(commit)}"


def run_note(commit: Commit) -> str:
    """What a turn line written inside an agent run adds (`integrations.runs.RUN_FIELDS`): the largest
    request its responses answered, and whether the run went on after it. A compaction right after a
    "mid-run" line is a mid-run checkpoint."""
    extra = commit.extra
    if "run" not in extra:
        return ""
    notes = [f"step {extra.get('step', '?')}"]
    if "peak" in extra:
        notes.append(f"peak {number(extra['peak'])} tok in {plural(extra.get('requests', 0), 'request')}")
    notes.append("mid-run" if extra.get("mid_run") else "end of run")
    return f"  ({', '.join(notes)})"


def _usage(usage: dict | None) -> str:
    if not usage:
        return ""
    return ", ".join(f"{key} {number(v) if isinstance(v, int) else v}" for key, v in sorted(usage.items()))


def _oneline(commit: Commit, before: int | None, head: bool, paint: Painter) -> str:
    deco = f"{paint('(head)', fg='cyan', bold=True)} " if head else ""
    text = describe(commit, before)
    if commit.kind != "turn":
        text = paint(text, fg="magenta" if commit.kind == "compaction" else "blue")
    return f"{paint(short_id(commit.id), fg='yellow')} {deco}{text}"


def _long(commit: Commit, before: int | None, head: bool, paint: Painter) -> list[str]:
    deco = f" {paint(f'(head -> {commit.session})', fg='cyan', bold=True)}" if head else ""
    lines = [
        f"{paint('commit ' + commit.id, fg='yellow')}{deco}",
        f"Seq:      {commit.session}@{commit.seq}",
        f"Date:     {local_time(commit.time)} ({relative_time(commit.time)})",
        f"Change:   {' '.join(describe(commit, before).split())}",
        f"State:    {plural(commit.count, 'message')}, {number(commit.tokens)} tokens",
    ]
    if usage := _usage(commit.usage):
        lines.append(f"Usage:    {usage}")
    return [*lines, ""]


@click.command("log")
@click.argument("name")
@click.option("--oneline", is_flag=True, help="One short line per commit.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per commit, per line.")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=1), help="Show at most N commits.")
@click.pass_context
def log_cmd(ctx: click.Context, name: str, oneline: bool, as_json: bool, limit: int | None) -> None:
    """Show the commits of session NAME, newest first."""
    store = open_store(ctx)
    require_session(store, name)
    commits, _ = store.log(name).scan(since_reset=False)
    tokens_before = {c.id: p.tokens for p, c in pairwise(commits)}
    newest = commits[::-1][:limit]
    if as_json:
        for commit in newest:
            click.echo(orjson.dumps(commit.to_json()).decode())
        return
    paint = painter()
    lines: list[str] = []
    for i, commit in enumerate(newest):
        before = tokens_before.get(commit.id)
        if oneline:
            lines.append(_oneline(commit, before, i == 0, paint))
        else:
            lines.extend(_long(commit, before, i == 0, paint))
    emit(lines[:-1] if lines and not lines[-1] else lines)


def messages_at(store: SessionStore, commit: Commit) -> list[ModelMessage]:
    """The replayed history after `commit` (imports pydantic-ai: for show and export only)."""
    from ..plumbing import codec
    from ..porcelain.session import state_at

    blobs, _ = state_at(store, commit)
    return store.objects.load(blobs, codec.decode)


@click.command("show")
@click.argument("rev")
@click.option("--json", "as_json", is_flag=True, help="The messages as pydantic-ai JSON.")
@click.option("--full", is_flag=True, help="Do not shorten tool results, thinking or arguments.")
@click.pass_context
def show_cmd(ctx: click.Context, rev: str, as_json: bool, full: bool) -> None:
    """Show the conversation as it stood at REV (NAME, NAME@SEQ, NAME~K, an id, checkpoints/NAME/K)."""
    from .render import render

    store = open_store(ctx)
    commit = store.resolve(rev)
    messages = messages_at(store, commit)
    if as_json:
        from ..plumbing.codec import adapter

        click.echo(adapter().dump_json(messages, indent=2).decode())
        return
    paint = painter()
    header = (
        f"{paint(short_id(commit.id), fg='yellow')} {commit.session}@{commit.seq}  "
        f"{plural(commit.count, 'message')}  {number(commit.tokens)} tok  {relative_time(commit.time)}"
    )
    emit([header, "", *render(messages, paint, full=full)])


@click.command("checkout")
@click.argument("rev")
@click.pass_context
def checkout_cmd(ctx: click.Context, rev: str) -> None:
    """Move the head of REV's session to REV; the log keeps everything after it."""
    store = open_store(ctx)
    target = store.resolve(rev)
    head = store.log(target.session).head()
    if head is not None and target.id in (head.id, head.target if head.kind == "checkout" else None):
        # `session checkout NAME` (git's "switch to it") or a repeated checkout: a commit would add nothing
        where = f"{short_id(target.id)} ({target.session}@{target.seq})"
        click.echo(f"{target.session}: already at {where}; nothing changed")
        return
    session = store.session(target.session, create=False)
    commit = session.checkout(target.id)
    click.echo(
        f"{session.name}: head is now {short_id(commit.id)} (checkout of {short_id(target.id)}, "
        f"{target.session}@{target.seq}): {plural(commit.count, 'message')}, {number(commit.tokens)} tok"
    )


@click.command("fork")
@click.argument("rev")
@click.argument("new")
@click.pass_context
def fork_cmd(ctx: click.Context, rev: str, new: str) -> None:
    """Start session NEW from the state at REV, sharing its blobs (nothing is copied)."""
    store = open_store(ctx)
    target = store.resolve(rev)
    session = store.fork(target.id, new)
    click.echo(
        f"forked {target.session}@{target.seq} ({short_id(target.id)}) into {session.name}: "
        f"{plural(session.persisted_count, 'message')}, {number(session.tokens)} tok"
    )


COMMANDS: list[click.Command] = [log_cmd, show_cmd, checkout_cmd, fork_cmd]
