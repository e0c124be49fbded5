"""`session import` and `session export`: transcripts in and out of the store.

Both load pydantic-ai, so every such import sits inside the command functions.
"""

from __future__ import annotations

from pathlib import Path

import click

from .output import fail, number, open_store, plural, progress, short_id, stdout_bytes

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fix-auth.json"
"""A short pydantic-ai conversation with tool calls, shipped as package data for a first try."""

IMPORT_FORMATS = ("auto", "pydantic-ai", "claude-code", "codex")
EXPORT_FORMATS = ("pydantic-ai", "html")


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
@click.pass_context
def import_cmd(ctx: click.Context, file: Path | None, fmt: str, name: str | None, example: bool) -> None:
    """Import a transcript FILE (pydantic-ai JSON, Claude Code or Codex JSONL) as a new session."""
    from ..formats.transcripts import read_transcript
    from ..plumbing.names import check_name
    from ..porcelain.importing import import_transcript

    source = EXAMPLE if example else file
    if source is None or (example and file is not None):
        raise fail("give a transcript FILE to import, or --example for the bundled one (not both)")
    if str(source) == "-" and not source.exists():
        raise fail("'-' is not a file: to import from stdin, give /dev/stdin (and --as NAME)")
    store = open_store(ctx)
    if name is not None:
        check_name(name)  # refuse a bad --as before reading a possibly large file
    transcript = read_transcript(source, fmt)
    with progress(f"importing {source.name}") as bar:
        session = import_transcript(store, transcript, name, progress=bar)
    steps = transcript.steps
    compactions = sum(1 for s in steps if s.kind == "compaction")
    turns = plural(len(steps) - compactions, "turn")
    extra = f", {plural(compactions, 'compaction')}" if compactions else ""
    head = short_id(session.head.id if session.head else None)
    click.echo(
        f"imported {source} ({transcript.format}) as {session.name}: {turns}{extra}, "
        f"{plural(session.persisted_count, 'message')}, {number(session.tokens)} tok, head {head}"
    )


@click.command("export")
@click.argument("rev")
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
def export_cmd(ctx: click.Context, rev: str, fmt: str, output: Path | None) -> None:
    """Export the conversation at REV; `session import` reads it back unchanged."""
    from ..formats.transcripts import export_pydantic_ai
    from ..plumbing.fsutil import atomic_replace
    from .history_cmds import messages_at

    store = open_store(ctx)
    commit = store.resolve(rev)
    if fmt == "html":
        from .html_page import render_page

        commits, _ = store.log(commit.session).scan(since_reset=False, end=commit.end)
        page = render_page(commit, commits, messages_at(store, commit), store.settings)
        data = page.encode()
    else:
        data = export_pydantic_ai(messages_at(store, commit))
    if output is None or str(output) == "-":  # `-o -` is stdout, by the usual convention
        stdout_bytes(data)
        return
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


COMMANDS: list[click.Command] = [import_cmd, export_cmd]
