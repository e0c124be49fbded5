"""`session import` and `session export`: transcripts in and out of the store.

Both load pydantic-ai, so every such import sits inside the command functions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..formats.registry import AUTO, FORMATS, read_transcripts
from .output import (
    FilePath,
    complete_rev,
    fail,
    json_options,
    number,
    open_store,
    plural,
    print_json,
    progress,
    resolve,
    short_id,
    stdout_bytes,
)

if TYPE_CHECKING:
    from ..formats.transcripts import ImportedTranscript
    from ..porcelain.importing.reimport import Growth
    from ..porcelain.store import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fix-auth.json"
"""A short pydantic-ai conversation with tool calls, shipped as package data for a first try."""

EXPORT_FORMATS = ("pydantic-ai", "html")


@click.command("import")
@click.argument("file", type=FilePath(path_type=Path, dir_okay=True), required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice((AUTO, *FORMATS)),
    default=AUTO,
    show_default=True,
    help="Transcript format; auto detects it from the content.",
)
@click.option("--as", "name", help="Session name (default: derived from the transcript).")
@click.option("--example", is_flag=True, help=f"Import the bundled example conversation ({EXAMPLE.name}).")
@click.option(
    "--claude-code", is_flag=True, help="Import this project's Claude Code transcripts not yet imported."
)
@click.option("--codex", is_flag=True, help="Import this project's Codex sessions not yet imported.")
@json_options(stream=False, dest="out")
@click.pass_context
def import_cmd(
    ctx: click.Context,
    file: Path | None,
    fmt: str,
    name: str | None,
    example: bool,
    claude_code: bool,
    codex: bool,
    out: str | None,
) -> int:
    """Import a transcript FILE, in any format `--format` names (detected from the content by default).

    `--claude-code` / `--codex` find the current project's transcripts where those tools keep them
    (Claude Code's projects folder for this directory, Codex's sessions folder) and import the ones
    not imported yet. An OpenAI file holding many conversations (tau-bench) imports one session each.

    \b
    Example:  session import ~/.claude/projects/-home-me-app/3fe1b6bc-....jsonl --as fix-auth
              session import --claude-code --codex
    """
    discover = claude_code or codex
    source = EXAMPLE if example else file
    if sum((example, file is not None, discover)) != 1:
        raise fail("give a transcript FILE, --example, or --claude-code/--codex (one of them)")
    store = open_store(ctx)
    if discover:
        if name is not None:
            raise fail("--as names one session: with --claude-code/--codex each keeps its own name")
        return import_discovered(store, claude_code=claude_code, codex=codex, out=out)
    assert source is not None
    if str(source) == "-" and not source.exists():
        raise fail("'-' is not a file: to import from stdin, give /dev/stdin (and --as NAME)")
    return import_file(store, source, fmt=fmt, name=name, out=out)


Plan = tuple["ImportedTranscript", str | None, "Growth | None"]
"""A transcript, the name to import it as, and how it grows an existing session (None: a new one)."""


def _plan(store: SessionStore, transcript: ImportedTranscript, name: str | None) -> Plan | str:
    """What importing `transcript` as `name` would do, or why it must not (the session exists and is
    not a prefix of the transcript): the caller refuses or skips it, having changed nothing."""
    from ..plumbing.names import check_name
    from ..porcelain.importing.reimport import NotAPrefix, growth

    target = check_name(name or transcript.suggested_name)
    if not store.exists(target):
        return transcript, name, None
    try:
        return transcript, target, growth(store, target, transcript)
    except NotAPrefix as why:
        return (
            f"session {target!r} already exists and is not a prefix of {transcript.source} ({why}): "
            f"import with --as NEW_NAME (nothing was written; `session log {target}` shows what it holds)"
        )


def _import_one(store: SessionStore, plan: Plan) -> dict[str, Any]:
    from ..porcelain.importing.new_session import append_steps, import_transcript

    transcript, name, grown = plan
    steps = transcript.steps if grown is None else grown.new
    with progress(f"importing {transcript.source.name}") as bar:
        if grown is None:
            session = import_transcript(store, transcript, name, progress=bar)
        elif steps:
            assert name is not None
            session = append_steps(store, name, steps, grown.head, progress=bar)
        else:
            session = store.session(transcript.suggested_name if name is None else name, create=False)
    compactions = sum(1 for s in steps if s.kind == "compaction")
    head = session.head
    action = "imported" if grown is None else "appended" if steps else "up to date"
    return {
        "source": str(transcript.source), "format": transcript.format, "session": session.name,
        "action": action, "turns": len(steps) - compactions, "compactions": compactions,
        "messages": session.persisted_count, "tokens": session.tokens, "head": head.id if head else None,
    }  # fmt: skip


def _say(record: dict[str, Any]) -> None:
    extra = f", {plural(record['compactions'], 'compaction')}" if record["compactions"] else ""
    head = short_id(record["head"])
    now = f"{plural(record['messages'], 'message')}, {number(record['tokens'])} tok, head {head}"
    if record["action"] == "up to date":
        click.echo(f"{record['session']} is up to date with {record['source']}: {now}; nothing to import")
    elif record["action"] == "appended":
        click.echo(
            f"appended {plural(record['turns'], 'new turn')}{extra} from {record['source']} to "
            f"{record['session']} (the stored session is its prefix): {now}"
        )
    else:
        click.echo(
            f"imported {record['source']} ({record['format']}) as {record['session']}: "
            f"{plural(record['turns'], 'turn')}{extra}, {now}"
        )


def import_file(store: SessionStore, source: Path, *, fmt: str, name: str | None, out: str | None) -> int:
    """`session import FILE`: each transcript in `source` as a new session, or its new turns appended
    to the session imported from it before; exit 0."""
    from ..plumbing.names import check_name

    if name is not None:
        check_name(name)  # refuse a bad --as before reading a possibly large file
    transcripts = read_transcripts(source, fmt)
    several = len(transcripts) > 1
    names = [
        (f"{name}-{t.suggested_name.rsplit('-', 1)[-1]}" if name else t.suggested_name) if several else name
        for t in transcripts
    ]
    uses = Counter(n or t.suggested_name for t, n in zip(transcripts, names, strict=True))
    if twice := next((n for n, k in uses.items() if k > 1), None):  # else one is in when the next fails
        raise fail(
            f"{source}: {uses[twice]} of its conversations would be session {twice!r}: give each record "
            "its own task_id (nothing was written)"
        )
    plans = [_plan(store, t, n) for t, n in zip(transcripts, names, strict=True)]  # refusals first
    if refused := next((p for p in plans if isinstance(p, str)), None):
        raise fail(refused)
    records = [_import_one(store, plan) for plan in plans if not isinstance(plan, str)]
    if out == "json":
        print_json({"imported": records, "skipped": []})
        return 0
    if several:
        total = sum(r["messages"] for r in records)
        first, last = records[0]["session"], records[-1]["session"]
        counts = {a: sum(r["action"] == a for r in records) for a in ("imported", "appended", "up to date")}
        shown = ", ".join(f"{n} {a}" for a, n in counts.items() if n)
        click.echo(
            f"{source} ({records[0]['format']}): {plural(len(records), 'session')} ({shown}), "
            f"{plural(total, 'message')}: {first} .. {last}"
        )
        return 0
    _say(records[0])
    return 0


def import_discovered(store: SessionStore, *, claude_code: bool, codex: bool, out: str | None) -> int:
    """`session import --claude-code/--codex`: this project's transcripts, new ones imported, grown
    ones appended to; exit 0."""
    from ..porcelain.importing import transcript_locations as discovery

    project = Path.cwd().resolve()
    found: list[tuple[str, Path]] = []
    where = []
    if claude_code:
        found += [("claude-code", p) for p in discovery.claude_code_transcripts(project)]
        where.append(str(discovery.claude_code_dir(project)))
    if codex:
        found += [("codex", p) for p in discovery.codex_transcripts(project)]
        where.append(f"{discovery.codex_dir()} (sessions held in {project})")
    done: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for fmt, path in found:
        (transcript,) = read_transcripts(path, fmt)
        plan = _plan(store, transcript, None)
        if isinstance(plan, str):  # not a prefix: leave that session alone, go on with the rest
            skipped.append({"source": str(path), "session": transcript.suggested_name, "reason": plan})
            continue
        record = _import_one(store, plan)
        if record["action"] == "up to date":
            skipped.append({"source": str(path), "session": record["session"], "reason": "up to date"})
        else:
            done.append(record)
    if out == "json":
        print_json({"imported": done, "skipped": skipped})
        return 0
    if not found:
        click.echo(f"no transcripts found in {' or '.join(where)}", err=True)
        return 0
    for record in done:
        _say(record)
    for skip in skipped:
        if skip["reason"] != "up to date":
            click.echo(f"session: skipped {skip['source']}: {skip['reason']}", err=True)
    fresh = sum(r["action"] == "imported" for r in done)
    click.echo(
        f"{plural(fresh, 'new transcript')} imported, {len(done) - fresh} grown, "
        f"{sum(s['reason'] == 'up to date' for s in skipped)} up to date",
        err=True,
    )
    return 0


@click.command("export")
@click.argument("rev", shell_complete=complete_rev)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="pydantic-ai",
    show_default=True,
    help="Output format: a ModelMessagesTypeAdapter JSON list, or html (one self-contained page).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write to this file (replaced atomically) instead of stdout.",
)
@click.pass_context
def export_cmd(ctx: click.Context, rev: str, fmt: str, output: Path | None) -> int:
    """Export the conversation at REV; `session import` reads it back unchanged.

    \b
    \b
    Example:  session export fix-auth@12 -o fix-auth.json
              session export fix-auth --format html -o fix-auth.html
    """
    return export(open_store(ctx), rev, output, fmt=fmt)


def export(store: SessionStore, rev: str, output: Path | None, *, fmt: str = "pydantic-ai") -> int:
    """`session export`: the messages at `rev` as pydantic-ai JSON (or an HTML page), to `output` or
    stdout; exit 0."""
    from ..formats.transcripts import export_pydantic_ai
    from ..plumbing.fsutil import atomic_replace
    from .history_cmds import messages_at

    commit = resolve(store, rev)
    if fmt == "html":
        from .html_page import render_page

        commits, _ = store.log(commit.session).scan(since_reset=False, end=commit.end)
        page = render_page(commit, commits, messages_at(store, commit), store.settings)
        data = page.encode()
    else:
        data = export_pydantic_ai(messages_at(store, commit))
    if output is None or str(output) == "-":  # `-o -` is stdout, by the usual convention
        stdout_bytes(data)
        return 0
    if not output.name or output.name in (".", ".."):
        suffix = "html" if fmt == "html" else "json"
        raise fail(f"cannot write {str(output)!r}: -o needs a file name, e.g. -o {commit.session}.{suffix}")
    if not output.parent.is_dir():
        raise fail(f"cannot write {output}: directory {output.parent} does not exist; create it first")
    try:
        atomic_replace(output, data)
    except OSError as err:  # read-only directory or file, full disk: nothing was replaced
        raise fail(f"cannot write {output}: {err.strerror or err}; choose another -o path") from None
    click.echo(
        f"exported {commit.session}@{commit.seq} ({short_id(commit.id)}): "
        f"{plural(commit.count, 'message')} to {output}",
        err=True,
    )
    return 0
