"""`session log`, `show`, `checkout` and `fork`: one session's history, git style.

`log` reads log lines only and never imports pydantic-ai (a subprocess test pins it); `show`,
`checkout` and `fork` load messages, so they import it inside their functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import click

from ..plumbing import logs
from ..plumbing.commits import Commit
from ..plumbing.names import is_valid_name
from ..porcelain.history.lookup import conversation_json, conversation_of
from .list_filters import last_option, named_or_last
from .output import (
    Painter,
    complete_rev,
    complete_session,
    emit,
    json_options,
    local_time,
    no_pager_option,
    number,
    on_current_head,
    open_store,
    painter,
    plural,
    print_json,
    print_jsonl,
    printable,
    relative_time,
    require_session,
    resolve,
    short_id,
)

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from ..porcelain.store import SessionStore


def describe(commit: Commit, before: int | None, target: str | None = None) -> str:
    """What a commit did, in one line: `turn +6 msgs 151,022 tok`, `compaction tier 2 [...] a -> b tok`.

    `before` is the parent's token count (what a compaction started from); None for a first commit.
    `target` names the state a checkout or fork holds (`fix-auth@3`), when known.
    """
    kind = commit.kind
    tokens = f"{number(commit.tokens)} tok"
    if kind == "compaction":
        ref = f"[checkpoints/{commit.session}/{commit.extra.get('checkpoint', '?')}]"
        source = " (imported)" if commit.extra.get("source") == "import" else ""
        note = f"  ({recorded})" if (recorded := recorded_note(commit)) else ""
        return f"compaction tier {commit.tier}{source}  {ref}  {number(before or 0)} -> {tokens}{note}"
    if kind in ("checkout", "fork"):
        where = f"{target} ({short_id(commit.target)})" if target else short_id(commit.target)
        origin = (
            f" from {commit.extra['from']}"
            if kind == "fork" and "from" in commit.extra and not target
            else ""
        )
        return f"{kind:<10} -> {where}{origin}  {plural(commit.count, 'msg')}  {tokens}"
    return f"{kind:<10} +{plural(len(commit.sizes), 'msg')}  {tokens}{run_note(commit)}"


def recorded_note(commit: Commit) -> str:
    """What the agent an imported compaction came from recorded about it, as its provider counted:
    `Claude Code recorded 155,432 -> 15,771 tok, auto` (either side alone when only one was written);
    "" when it recorded nothing."""
    recorded = commit.extra.get("recorded")
    if not isinstance(recorded, dict):
        return ""
    before, after = recorded.get("tokens_before"), recorded.get("tokens_after")
    if isinstance(before, int) and isinstance(after, int):
        tokens = f"{number(before)} -> {number(after)} tok"
    elif isinstance(before, int):
        tokens = f"{number(before)} tok before"
    elif isinstance(after, int):
        tokens = f"{number(after)} tok after"
    else:
        tokens = "no token counts"
    trigger = f", {recorded['trigger']}" if isinstance(recorded.get("trigger"), str) else ""
    return f"{recorded.get('by', 'the source')} recorded {tokens}{trigger}"


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


def flat_items(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """`{"details": {"cache": 5}}` as `("details.cache", 5)`: log text never shows a Python dict."""
    for key, value in sorted(data.items()):
        if isinstance(value, dict):
            yield from flat_items(value, f"{prefix}{key}.")
        elif value not in (None, 0, {}, []):
            yield f"{prefix}{key}", value


def _usage(usage: dict | None) -> str:
    if not usage:
        return ""
    shown = (
        f"{k} {number(v) if isinstance(v, int) and not isinstance(v, bool) else v}"
        for k, v in flat_items(usage)
    )
    return ", ".join(shown)


def targets(store: SessionStore, commits: list[Commit]) -> dict[str, str]:
    """`NAME@SEQ` of every checkout or fork target among `commits` (one log scan per source session)."""
    where = {c.id: f"{c.session}@{c.seq}" for c in commits}
    out: dict[str, str] = {}
    scanned = {commits[0].session} if commits else set()
    for c in commits:
        if c.target is None:
            continue
        source = c.extra.get("from")
        if c.target not in where and isinstance(source, str) and source not in scanned:
            scanned.add(source)
            if is_valid_name(source) and store.exists(source):
                where.update(
                    {o.id: f"{o.session}@{o.seq}" for o in store.log(source).scan(since_reset=False)[0]}
                )
        if c.target in where:
            out[c.id] = where[c.target]
    return out


def _oneline(commit: Commit, before: int | None, head: bool, paint: Painter, target: str | None) -> str:
    deco = f"{paint('(head)', fg='cyan', bold=True)} " if head else ""
    text = printable(describe(commit, before, target))
    if commit.kind != "turn":
        text = paint(text, fg="magenta" if commit.kind == "compaction" else "blue")
    return f"{paint(short_id(commit.id), fg='yellow')} {deco}{text}"


def _long(commit: Commit, before: int | None, head: bool, paint: Painter, target: str | None) -> list[str]:
    deco = f" {paint(f'(head -> {commit.session})', fg='cyan', bold=True)}" if head else ""
    lines = [
        f"{paint('commit ' + commit.id, fg='yellow')}{deco}",
        f"Seq:      {commit.session}@{commit.seq}",
        printable(f"Date:     {local_time(commit.time)} ({relative_time(commit.time)})"),
        printable(f"Change:   {' '.join(describe(commit, before, target).split())}"),
        f"State:    {plural(commit.count, 'message')}, {number(commit.tokens)} tokens",
    ]
    if usage := _usage(commit.usage):
        lines.append(printable(f"Usage:    {usage}"))
    if (record := conversation_of(commit)) is not None:
        lines.append(printable(f"Conversation: {conversation_label(record)}"))
    return [*lines, ""]


def conversation_label(record: dict[str, Any]) -> str:
    """A FileConversationStore record as `'support-42' (scope user:7)`."""
    cid = record.get("conversation_id")
    scope = record.get("scope")
    return f"{cid!r}" + (f" (scope {scope})" if scope else "")


def log(
    store: SessionStore, name: str, *, oneline: bool = False, fmt: str | None = None, limit: int | None = None
) -> int:
    """`session log`: the commits of session `name`, newest first; exit 0."""
    name = require_session(store, name)
    if limit is None:
        commits, _ = store.log(name).scan(since_reset=False)
    else:  # read back from the end only: one more commit than shown, for the oldest one's `before`
        commits = logs.tail(store.log(name), limit + 1)
    tokens_before = {c.id: p.tokens for p, c in pairwise(commits)}
    newest = commits[::-1][:limit]
    if fmt == "json":
        print_json([c.to_json() for c in newest])
        return 0
    if fmt == "jsonl":
        print_jsonl(c.to_json() for c in newest)
        return 0
    paint = painter()
    where = targets(store, commits)
    if any(c.target is not None and c.target not in where for c in newest):  # a target before the tail
        where = targets(store, store.log(name).scan(since_reset=False)[0])
    lines: list[str] = []
    for i, commit in enumerate(newest):
        before = tokens_before.get(commit.id)
        shape = _oneline if oneline else _long
        out = shape(commit, before, i == 0, paint, where.get(commit.id))
        lines.extend([out] if isinstance(out, str) else out)
    emit(lines[:-1] if lines and not lines[-1] else lines)
    return 0


@click.command("log")
@click.argument("name", required=False, shell_complete=complete_session)
@last_option
@click.option("--oneline", is_flag=True, help="One short line per commit.")
@json_options(stream=True)
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=1), help="Show at most N commits.")
@no_pager_option
@click.pass_context
def log_cmd(
    ctx: click.Context,
    name: str | None,
    last: bool,
    oneline: bool,
    fmt: str | None,
    limit: int | None,
    no_pager: bool,
) -> int:
    """Show the commits of session NAME (or, with --last, the most recent session), newest first.

    \b
    Example:  session log fix-auth --oneline -n 5
              session log --last -n 3
    """
    which = named_or_last(name, last, "NAME")
    store = open_store(ctx)
    return log(store, which(store), oneline=oneline, fmt=fmt, limit=limit)


def messages_at(store: SessionStore, commit: Commit) -> list[ModelMessage]:
    """The replayed history after `commit` (imports pydantic-ai: for show and export only)."""
    from ..plumbing import codec
    from ..porcelain.session.writer import state_at

    blobs, _ = state_at(store, commit)
    return store.objects.load(blobs, codec.decode)


def show(store: SessionStore, rev: str, *, fmt: str | None = None, full: bool = False) -> int:
    """`session show`: the conversation at `rev` as a transcript, or one JSON object; exit 0."""
    from .render import render

    commit = resolve(store, rev)
    messages = messages_at(store, commit)
    head = store.log(commit.session).head()
    record = conversation_of(head)
    if fmt == "json":
        from ..plumbing.codec import to_jsonable

        conversation = conversation_json(head)
        print_json({
            "rev": f"{commit.session}@{commit.seq}", "session": commit.session, "commit": commit.id,
            "seq": commit.seq, "time": commit.time, "count": commit.count, "tokens": commit.tokens,
            "conversation": conversation, "messages": to_jsonable(messages),
        })  # fmt: skip
        return 0
    paint = painter()
    when = printable(relative_time(commit.time))
    header = (
        f"{paint(short_id(commit.id), fg='yellow')} {commit.session}@{commit.seq}  "
        f"{plural(commit.count, 'message')}  {number(commit.tokens)} tok  {when}"
    )
    lines = [header]
    if record is not None:
        lines.append(printable(f"conversation {conversation_label(record)}"))
    emit([*lines, "", *render(messages, paint, full=full)])
    return 0


@click.command("show")
@click.argument("rev", required=False, shell_complete=complete_rev)
@last_option
@json_options(stream=False)
@click.option("--full", is_flag=True, help="Do not shorten tool results, thinking or arguments.")
@no_pager_option
@click.pass_context
def show_cmd(
    ctx: click.Context, rev: str | None, last: bool, fmt: str | None, full: bool, no_pager: bool
) -> int:
    """Show the conversation as it stood at REV (NAME, NAME@SEQ, NAME~K, an id, checkpoints/NAME/K),
    or, with --last, the most recent session as it is now.

    A unique start of a session name (an imported transcript's uuid) and a FileConversationStore
    conversation id name a session too.

    \b
    Example:  session show fix-auth~3 --full
    """
    which = named_or_last(rev, last, "REV")
    store = open_store(ctx)
    return show(store, which(store), fmt=fmt, full=full)


def checkout(store: SessionStore, rev: str, *, fmt: str | None = None) -> int:
    """`session checkout`: move the head of `rev`'s session to `rev`; exit 0."""
    target = resolve(store, rev)
    head = store.log(target.session).head()
    if head is not None and target.id in (head.id, head.target if head.kind == "checkout" else None):
        # `session checkout NAME` (git's "switch to it") or a repeated checkout: a commit would add nothing
        if fmt == "json":
            print_json({"changed": False, "head": head.to_json(), "target": target.to_json()})
            return 0
        where = f"{short_id(target.id)} ({target.session}@{target.seq})"
        click.echo(f"{target.session}: already at {where}; nothing changed")
        return 0
    # the commit of the session REV names, never re-read by id
    commit = on_current_head(store, target.session, f"checkout {rev}", lambda s: s.checkout(target))
    if fmt == "json":
        print_json({"changed": True, "head": commit.to_json(), "target": target.to_json()})
        return 0
    click.echo(
        f"{target.session}: head is now {short_id(commit.id)} (checkout of {short_id(target.id)}, "
        f"{target.session}@{target.seq}): {plural(commit.count, 'message')}, {number(commit.tokens)} tok"
    )
    return 0


@click.command("checkout")
@click.argument("rev", shell_complete=complete_rev)
@json_options(stream=False)
@click.pass_context
def checkout_cmd(ctx: click.Context, rev: str, fmt: str | None) -> int:
    """Move the head of REV's session to REV; the log keeps everything after it.

    \b
    Example:  session checkout fix-auth@12
    """
    return checkout(open_store(ctx), rev, fmt=fmt)


def fork(store: SessionStore, rev: str, new: str, *, fmt: str | None = None) -> int:
    """`session fork`: start session `new` from the state at `rev`; exit 0."""
    target = resolve(store, rev)
    session = store.fork(target, new)
    if fmt == "json":
        head = session.head
        print_json(
            {"session": session.name, "head": head.to_json() if head else None, "target": target.to_json()}
        )
        return 0
    click.echo(
        f"forked {target.session}@{target.seq} ({short_id(target.id)}) into {session.name}: "
        f"{plural(session.persisted_count, 'message')}, {number(session.tokens)} tok"
    )
    return 0


@click.command("fork")
@click.argument("rev", shell_complete=complete_rev)
@click.argument("new")
@json_options(stream=False)
@click.pass_context
def fork_cmd(ctx: click.Context, rev: str, new: str, fmt: str | None) -> int:
    """Start session NEW from the state at REV, sharing its blobs (nothing is copied).

    \b
    Example:  session fork fix-auth@12 spike
    """
    return fork(open_store(ctx), rev, new, fmt=fmt)
