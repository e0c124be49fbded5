"""`session search` and `session diff`: finding what was said, and what changed between two states.

Both read blobs with orjson (porcelain/history/search.py and diff.py) and never import pydantic-ai.
"""

from __future__ import annotations

from contextlib import nullcontext
from itertools import islice
from typing import TYPE_CHECKING

import click

from ..porcelain.history.diff import Diff, Message
from ..porcelain.history.search import ROLES, Query, search
from ..porcelain.history.user_regex import time_limit
from .output import (
    Painter,
    complete_rev,
    complete_session,
    emit,
    json_options,
    no_pager_option,
    number,
    open_store,
    painter,
    plural,
    print_json,
    print_jsonl,
    printable,
    require_session,
    resolve,
    short_id,
)

if TYPE_CHECKING:
    from ..porcelain.store import SessionStore

EXIT_NO_MATCH = 1
"""As grep: exit 1 when nothing matched, so `session search X && ...` reads naturally."""


def search_sessions(
    store: SessionStore,
    pattern: str,
    names: list[str],
    *,
    role: str | None = None,
    tool: str | None = None,
    all_history: bool = False,
    ignore_case: bool = False,
    limit: int | None = None,
    fmt: str | None = None,
    pcre: bool = False,
) -> int:
    """`session search`: matches as `NAME@SEQ role: ...match...`; exit 0 if any, 1 if none.

    The pattern runs on RE2 (linear time); with `pcre`, one RE2 refuses (a backreference, lookaround)
    runs on Python's `re`, stopped after `user_regex.BACKTRACK_SECONDS`."""
    query = Query.compile(pattern, role=role, tool=tool, ignore_case=ignore_case, backtracking=pcre)
    chosen = [require_session(store, n) for n in names] if names else None
    hits = islice(search(store, query, chosen, all_history=all_history), limit)
    searching = time_limit(pattern) if query.backtracking else nullcontext()  # never around a pager
    if fmt == "jsonl":
        found = 0
        with searching:
            for hit in hits:
                print_jsonl([hit.to_json()])
                found += 1
        return 0 if found else EXIT_NO_MATCH
    with searching:
        collected = list(hits)
    if fmt == "json":
        print_json([h.to_json() for h in collected])
        return 0 if collected else EXIT_NO_MATCH
    paint = painter()
    lines = []
    for h in collected:  # every field shown literally (`printable`), then coloured
        where = paint(f"{h.session}@{h.seq}", fg="yellow")
        who = paint(printable(f"{h.role}" + (f" {h.tool}" if h.tool else "")), bold=True)
        match = paint(printable(h.match), fg="red", bold=True)
        lines.append(f"{where} {who}: {printable(h.before)}{match}{printable(h.after)}")
    emit(lines)
    return 0 if collected else EXIT_NO_MATCH


@click.command("search")
@click.argument("pattern")
@click.argument("names", nargs=-1, shell_complete=complete_session)
@click.option("--role", type=click.Choice(ROLES), help="Only parts of this role.")
@click.option("--tool", help="Only calls to and results of this tool.")
@click.option("--all-history", is_flag=True, help="Also what compactions replaced and checkouts left.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match regardless of case.")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=1), help="Stop after N matches.")
@click.option(
    "--pcre",
    is_flag=True,
    help="Allow backreferences and lookaround (Python's backtracking engine, stopped after 10 s).",
)
@json_options(stream=True)
@no_pager_option
@click.pass_context
def search_cmd(
    ctx: click.Context,
    pattern: str,
    names: tuple[str, ...],
    role: str | None,
    tool: str | None,
    all_history: bool,
    ignore_case: bool,
    limit: int | None,
    fmt: str | None,
    pcre: bool,
    no_pager: bool,
) -> int:
    """Search sessions (all, or NAME...) for the regex PATTERN in text, tool arguments and tool output.

    Prints `NAME@SEQ role: ...match...`; `session show NAME@SEQ` shows the message in context. By
    default each session's current state is searched; exit 1 when nothing matches.

    \b
    Example:  session search 'expired.token' fix-auth --role tool
              session search -i 'deprecated' --tool read_file --all-history --json
    """
    return search_sessions(
        open_store(ctx), pattern, list(names), role=role, tool=tool, all_history=all_history,
        ignore_case=ignore_case, limit=limit, fmt=fmt, pcre=pcre,
    )  # fmt: skip


def _message_line(sign: str, message: Message, paint: Painter) -> str:
    colour = "green" if sign == "+" else "red"
    text = printable(f"{sign} {message.role:<10} {message.preview}  ({number(message.tokens)} tok)")
    return paint(text, fg=colour)


def diff_lines(result: Diff, paint: Painter) -> list[str]:
    """The text of `session diff`: both states, each compaction between them, then the messages."""
    old, new = result.old, result.new

    def side(c):  # type: ignore[no-untyped-def]
        return f"{c.session}@{c.seq} ({short_id(c.id)}, {plural(c.count, 'msg')}, {number(c.tokens)} tok)"

    lines = [paint(f"{side(old)} -> {side(new)}", bold=True)]
    for comp in result.compactions:
        c = comp.commit
        ref = f"checkpoints/{c.session}/{c.extra.get('checkpoint', '?')}"
        replaced = sum(m.tokens for m in comp.replaced)
        summary = sum(m.tokens for m in comp.summary)
        lines += [
            "",
            paint(printable(f"compaction tier {c.tier} at {c.session}@{c.seq} [{ref}]"), fg="magenta"),
            f"  replaced {plural(len(comp.replaced), 'message')} ({number(replaced)} tok) with "
            f"{plural(len(comp.summary), 'message')} ({number(summary)} tok); kept {comp.kept} verbatim",
            "  summary:",
            *(
                f"    {printable(line, tabs=True)}".rstrip()
                for m in comp.summary
                for line in m.text.splitlines()
            ),
        ]
    removed = sum(m.tokens for m in result.removed)
    added = sum(m.tokens for m in result.added)
    lines += [
        "",
        f"-{plural(len(result.removed), 'message')} ({number(removed)} tok), "
        f"+{plural(len(result.added), 'message')} ({number(added)} tok)",
    ]
    lines += [_message_line("-", m, paint) for m in result.removed]
    lines += [_message_line("+", m, paint) for m in result.added]
    return lines


def diff(store: SessionStore, rev1: str, rev2: str, *, fmt: str | None = None) -> int:
    """`session diff`: messages removed and added from `rev1` to `rev2`; exit 0."""
    from ..porcelain.history.diff import diff as compare

    result = compare(store, resolve(store, rev1), resolve(store, rev2))
    if fmt == "json":
        print_json(result.to_json())
        return 0
    emit(diff_lines(result, painter()))
    return 0


@click.command("diff")
@click.argument("rev1", shell_complete=complete_rev)
@click.argument("rev2", shell_complete=complete_rev)
@json_options(stream=False)
@no_pager_option
@click.pass_context
def diff_cmd(ctx: click.Context, rev1: str, rev2: str, fmt: str | None, no_pager: bool) -> int:
    """Messages removed and added between REV1 and REV2, and what each compaction between them did
    (what its summary replaced, in messages and tokens, and the summary itself).

    \b
    Example:  session diff fix-auth~1 fix-auth      (what the last commit changed)
    """
    return diff(open_store(ctx), rev1, rev2, fmt=fmt)
