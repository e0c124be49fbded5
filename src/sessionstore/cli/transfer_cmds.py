"""`session import` and `session export`: transcripts in and out of the store.

Both load pydantic-ai, so every such import sits inside the command functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .output import (
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
    from ..porcelain.store import SessionStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fix-auth.json"
"""A short pydantic-ai conversation with tool calls, shipped as package data for a first try."""

IMPORT_FORMATS = ("auto", "pydantic-ai", "claude-code", "codex", "openai-chat")
EXPORT_FORMATS = ("pydantic-ai",)


@click.command("import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=True), required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(IMPORT_FORMATS),
    default="auto",
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
    """Import a transcript FILE (pydantic-ai JSON, Claude Code or Codex JSONL, OpenAI chat messages).

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


def transcripts_of(source: Path, fmt: str) -> list[ImportedTranscript]:
    """The transcripts in `source`: one, or one per conversation of an OpenAI chat file."""
    from ..formats import openai_chat
    from ..formats.transcripts import read_text, read_transcript

    if fmt == "openai-chat":
        return openai_chat.read_openai_chat(source)
    if fmt == "auto":
        text = read_text(source)
        if openai_chat.looks_like(text):
            return openai_chat.read_openai_chat(source, text)
    return [read_transcript(source, fmt)]


def _import_one(store: SessionStore, transcript: ImportedTranscript, name: str | None) -> dict[str, Any]:
    from ..porcelain.importing import import_transcript

    with progress(f"importing {transcript.source.name}") as bar:
        session = import_transcript(store, transcript, name, progress=bar)
    compactions = sum(1 for s in transcript.steps if s.kind == "compaction")
    head = session.head
    return {
        "source": str(transcript.source), "format": transcript.format, "session": session.name,
        "turns": len(transcript.steps) - compactions, "compactions": compactions,
        "messages": session.persisted_count, "tokens": session.tokens, "head": head.id if head else None,
    }  # fmt: skip


def _say(record: dict[str, Any]) -> None:
    extra = f", {plural(record['compactions'], 'compaction')}" if record["compactions"] else ""
    click.echo(
        f"imported {record['source']} ({record['format']}) as {record['session']}: "
        f"{plural(record['turns'], 'turn')}{extra}, {plural(record['messages'], 'message')}, "
        f"{number(record['tokens'])} tok, head {short_id(record['head'])}"
    )


def import_file(store: SessionStore, source: Path, *, fmt: str, name: str | None, out: str | None) -> int:
    """`session import FILE`: each transcript in `source` as a new session; exit 0."""
    from ..plumbing.names import check_name

    if name is not None:
        check_name(name)  # refuse a bad --as before reading a possibly large file
    transcripts = transcripts_of(source, fmt)
    several = len(transcripts) > 1
    if several:  # refuse a taken name before writing any: nothing is half-imported
        names = [
            f"{name}-{t.suggested_name.rsplit('-', 1)[-1]}" if name else t.suggested_name for t in transcripts
        ]
        if taken := [n for n in names if store.exists(n)]:
            raise fail(
                f"{source}: session {taken[0]!r} already exists ({len(taken)} of {len(names)} names "
                "taken): import with --as PREFIX; nothing was written"
            )
    else:
        names = [name]
    records = [_import_one(store, t, n) for t, n in zip(transcripts, names, strict=True)]
    if out == "json":
        print_json({"imported": records, "skipped": []})
        return 0
    if several:
        total = sum(r["messages"] for r in records)
        first, last = records[0]["session"], records[-1]["session"]
        click.echo(
            f"imported {source} ({records[0]['format']}): {plural(len(records), 'session')}, "
            f"{plural(total, 'message')}: {first} .. {last}"
        )
        return 0
    _say(records[0])
    return 0


def import_discovered(store: SessionStore, *, claude_code: bool, codex: bool, out: str | None) -> int:
    """`session import --claude-code/--codex`: this project's transcripts not imported yet; exit 0."""
    from ..porcelain import discovery

    project = Path.cwd().resolve()
    found: list[tuple[str, Path]] = []
    where = []
    if claude_code:
        found += [("claude-code", p) for p in discovery.claude_code_transcripts(project)]
        where.append(str(discovery.claude_code_dir(project)))
    if codex:
        found += [("codex", p) for p in discovery.codex_transcripts(project)]
        where.append(f"{discovery.codex_dir()} (sessions held in {project})")
    imported: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for fmt, path in found:
        (transcript,) = transcripts_of(path, fmt)
        if store.exists(transcript.suggested_name):
            skipped.append({"source": str(path), "session": transcript.suggested_name, "reason": "imported"})
            continue
        imported.append(_import_one(store, transcript, None))
    if out == "json":
        print_json({"imported": imported, "skipped": skipped})
        return 0
    if not found:
        click.echo(f"no transcripts found in {' or '.join(where)}", err=True)
        return 0
    for record in imported:
        _say(record)
    click.echo(
        f"{plural(len(imported), 'new transcript')} imported, {len(skipped)} already imported", err=True
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
    help="Output format (a ModelMessagesTypeAdapter JSON list).",
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
    Example:  session export fix-auth@12 -o fix-auth.json
    """
    return export(open_store(ctx), rev, output)


def export(store: SessionStore, rev: str, output: Path | None) -> int:
    """`session export`: the messages at `rev` as pydantic-ai JSON, to `output` or stdout; exit 0."""
    from ..formats.transcripts import export_pydantic_ai
    from ..plumbing.fsutil import atomic_replace
    from .history_cmds import messages_at

    commit = resolve(store, rev)
    data = export_pydantic_ai(messages_at(store, commit))
    if output is None or str(output) == "-":  # `-o -` is stdout, by the usual convention
        stdout_bytes(data)
        return 0
    if not output.name or output.name in (".", ".."):
        raise fail(f"cannot write {str(output)!r}: -o needs a file name, e.g. -o {commit.session}.json")
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


COMMANDS: list[click.Command] = [import_cmd, export_cmd]
