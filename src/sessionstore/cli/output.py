"""What every command shares: opening the store, colour, paging, JSON, progress bars, number formats,
completion of session names and revisions, and the one-line form of every error.

Every command imports this module, so it imports nothing click does not already bring except our
errors: the store, settings, pathlib and orjson load inside the functions that need them (`session
list` on an empty store starts within ~1.3x `import click`; tests/cli/test_startup.py pins it).

Machine-readable output (docs/cli.md has every schema): `--json` prints ONE JSON document (an array
for `list`, `log` and `search`, an object for the rest), so `| python -m json.tool` and `jq` read it;
`--jsonl` streams one object per line where a command lists many things.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from ..errors import SessionStoreError

T = TypeVar("T")

if TYPE_CHECKING:
    from ..accounting.settings import Settings
    from ..porcelain.store import SessionStore

SHORT_ID = 7
"""Length of an abbreviated commit id, as git prints them."""


# --- the store ---------------------------------------------------------------------------------------


def store_path(ctx: click.Context) -> str | None:
    """The `--store` (before or after the command) or SESSIONSTORE_DIR value (None: the default root)."""
    obj = ctx.find_root().obj or {}
    return obj.get("store_path")


def open_store(
    ctx: click.Context, *, create: bool = False, overrides: dict[str, Any] | None = None
) -> SessionStore:
    """The store the command works on, opened once per invocation with its own settings (its project's
    pyproject.toml, the environment, then `overrides` from the command's flags); `NotAStoreError`
    (telling the user to run `session init`) if there is none."""
    from ..porcelain.store import SessionStore

    obj = ctx.find_root().ensure_object(dict)
    key = ("store", create, tuple(sorted((overrides or {}).items())))
    if key not in obj:
        # warm=False: a one-shot command has no idle time for a warm-up to use, and the read-only ones
        # (list, log, gauge) must not load pydantic-ai or a tokenizer at all
        obj[key] = SessionStore.open(store_path(ctx), create=create, overrides=overrides, warm=False)
    return obj[key]


def store_settings(ctx: click.Context, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings of the store the command names, whether or not it exists yet (`session config`,
    `session memory`): exactly what `SessionStore.open` would load for it."""
    from pathlib import Path

    from ..porcelain.session.layout import default_root, load_settings

    path = store_path(ctx)
    root = default_root() if path is None else Path(path)
    return load_settings(root, overrides=overrides)


def require_session(store: SessionStore, name: str) -> str:
    """The session `name` means (exact, a unique prefix such as an imported transcript's uuid, or a
    conversation id); an unknown name is refused with suggestions. No message is loaded."""
    from ..porcelain.history.lookup import require_session as find

    return find(store, name)


def resolve(store: SessionStore, rev: str) -> Any:
    """The commit `rev` names, read as people type it (see porcelain/history/lookup.py)."""
    from ..porcelain.history.lookup import resolve as find

    return find(store, rev)


# --- terminals and colour ------------------------------------------------------------------------------

_UNSAFE = "\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""What a terminal would act on rather than show: C0 controls (ESC, BEL, NUL, CR, newline, ...) but
tab, DEL, C1 controls (\x9b is a one-byte CSI), the Unicode line separators and the bidi overrides
that can reorder what a line seems to say."""
_FIELD = re.compile(f"[\t{_UNSAFE}]")
_TEXT = re.compile(f"[{_UNSAFE}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(found: re.Match[str]) -> str:
    char = found[0]
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str, *, tabs: bool = False) -> str:
    """`text` as a terminal shows it literally: every character it would act on instead (`_UNSAFE`:
    ESC, BEL, NUL, newline, ...) written as a visible escape (`\\x1b`, `\\n`, `\\u202e`). Every field
    the CLI prints goes through it before it is coloured: message text (one line at a time, `tabs`
    kept), tool names, ids, titles, paths, error text, session names. Printable ASCII (space to `~`,
    nothing `_UNSAFE` can match) is returned at C speed, other text after one regex search when there
    is nothing to escape."""
    if text.isascii() and text.isprintable():  # `session list` escapes every title of every row
        return text
    pattern = _TEXT if tabs else _FIELD
    return text if pattern.search(text) is None else pattern.sub(_escape, text)


def say(line: str, *, err: bool = False) -> None:
    """Echo one line of plain text (no colour of ours in it) through `printable`."""
    click.echo(printable(line), err=err)


def is_terminal(stream: IO[Any]) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def colour_enabled(stream: IO[Any] | None = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return is_terminal(stream if stream is not None else sys.stdout)


class Painter:
    """`click.style` when colour is on, the plain text otherwise (decided once per command)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, **style: Any) -> str:
        return click.style(text, **style) if self.enabled else text

    def codes(self, **style: Any) -> tuple[str, str]:
        """What `self(text, **style)` puts before and after `text` (both '' without colour): for
        output formatted row by row, where one `click.style` call per cell would cost more than the
        rest of the row."""
        if not self.enabled:
            return "", ""
        before, _, after = click.style("\0", **style).partition("\0")
        return before, after


def painter(stream: IO[Any] | None = None) -> Painter:
    return Painter(colour_enabled(stream))


def _screen_lines() -> int:
    import shutil  # terminals only: piped output never pays for it

    return shutil.get_terminal_size().lines


def paging_allowed() -> bool:
    """False under `session --no-pager` (or a command's own `--no-pager`), as `git --no-pager`."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return True
    if ctx.params.get("no_pager"):
        return False
    return not (ctx.find_root().obj or {}).get("no_pager")


def emit(lines: Iterable[str]) -> None:
    """Print lines; through a pager when stdout is a terminal and they do not fit on one screen.

    The pager is `$PAGER` (`less` by default) with `LESS=FRX` unless LESS is set, as git runs it:
    quit if one screen, keep colour, leave the text on the terminal. `PAGER=cat` or `--no-pager`
    turns it off."""
    out = list(lines)
    stdout = sys.stdout
    if is_terminal(stdout) and paging_allowed() and len(out) > _screen_lines() - 1:
        os.environ.setdefault("LESS", "FRX")
        os.environ.setdefault("LV", "-c")
        click.echo_via_pager("\n".join(out) + "\n", color=colour_enabled(stdout))
        return
    if out:  # one write: thousands of echo calls cost more than the command's own work
        click.echo("\n".join(out), color=colour_enabled(stdout))


ProgressCallback = Callable[[int, int], None]


@contextmanager
def progress(label: str) -> Iterator[ProgressCallback | None]:
    """A `(done, total)` callback drawing a bar on stderr, or None when stderr is not a terminal.

    The bar is created on the first call, when the total is known (fsck and gc learn it as they go).
    """
    stderr = sys.stderr
    if not is_terminal(stderr):
        yield None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None or state["total"] != total:
            if bar is not None:
                bar.render_finish()
            bar = click.progressbar(length=max(total, 1), label=label, file=stderr)
            state.update(bar=bar, total=total, done=0)
        bar.update(done - state["done"])
        state["done"] = done

    try:
        yield update
    finally:
        if (bar := state.get("bar")) is not None:
            bar.render_finish()


def print_json(document: Any) -> None:
    """One JSON document on stdout (indented, UTF-8, newline-terminated)."""
    import orjson

    stdout_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")


def print_jsonl(records: Iterable[Any]) -> None:
    """One compact JSON object per line, each written as it comes (for streams and `head`)."""
    import orjson

    for record in records:
        stdout_bytes(orjson.dumps(record) + b"\n")


def json_options(*, stream: bool, dest: str = "fmt") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--json` (one document) and, when `stream`, `--jsonl` (one object per line), as parameter
    `dest` ("json", "jsonl" or None for text)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        if stream:
            f = click.option(
                "--jsonl", dest, flag_value="jsonl", help="One JSON object per line (streamable)."
            )(f)
        return click.option(
            "--json", dest, flag_value="json", help="One JSON document (schema: docs/cli.md)."
        )(f)

    return decorate


class FilePath(click.Path):
    """`click.Path` refusing an empty value, which pathlib would read as '.' (the current directory),
    so the error would name a confusing '.' instead of the empty argument."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("is empty: give a file name", param, ctx)
        return super().convert(value, param, ctx)


def no_pager_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--no-pager", "no_pager", is_flag=True, help="Print straight to stdout.")(f)


def fail(message: str) -> SessionStoreError:
    """A user-facing refusal raised from a command (printed as one line, exit 2, by `cli`)."""
    return SessionStoreError(message)


def on_current_head(store: SessionStore, name: str, command: str, action: Callable[[Any], T]) -> T:
    """`action(session)` on session `name` as it is now, read again and done once more when another
    writer committed while the command waited for the lock (`StaleSessionError`): a shell command
    names a session, not the head it happened to read first. A second change is refused in CLI terms
    (the API's "reload it" means nothing to a shell user); either way nothing of this command is written.
    """
    from ..errors import StaleSessionError

    session = store.session(name, create=False)
    try:
        return action(session)
    except StaleSessionError:
        session.reload()
    try:
        return action(session)
    except StaleSessionError:
        raise fail(
            f"session {name!r} changed again while `session {command}` waited for its lock (another "
            f"process keeps writing to it): nothing was changed; run `session {command}` again when "
            "it is done"
        ) from None


def stdout_bytes(data: bytes) -> None:
    """Write raw bytes to stdout (JSON exports keep their exact encoding)."""
    if sys.stdout is None:  # `session export NAME >&-`: Python started without a file descriptor 1
        raise fail("cannot write: stdout is closed; redirect it to a file (> FILE) or a pipe")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


# --- formats ---------------------------------------------------------------------------------------


def short_id(commit_id: str | None) -> str:
    return commit_id[:SHORT_ID] if commit_id else "-------"


def number(n: int) -> str:
    """151022 -> '151,022'."""
    return f"{n:,}"


def plural(n: int, word: str) -> str:
    return f"{number(n)} {word}{'' if n == 1 else 's'}"


_UNITS = (("year", 365 * 86400), ("month", 30 * 86400), ("day", 86400), ("hour", 3600), ("min", 60))


def parse_time(stamp: str) -> datetime | None:
    """An ISO-8601 time (a trailing `Z` included, as commits write it) as an aware datetime (UTC when
    it names no zone), or None when it is not one."""
    try:
        when = datetime.fromisoformat(stamp)  # Python 3.11 reads `Z`; `session list` parses one per row
    except (ValueError, TypeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def relative_time(stamp: str, now: datetime | None = None) -> str:
    """An ISO-8601 UTC time as '12 min ago', '3 days ago', 'just now' (the commit time if unparsable)."""
    when = parse_time(stamp)
    if when is None:
        return stamp
    return ago(((now or datetime.now(UTC)) - when).total_seconds())


def ago(seconds: float) -> str:
    """`seconds` elapsed as `relative_time` says it: 'in the future' below 0, 'just now' below a minute."""
    if seconds < 0:
        return "in the future"
    for unit, size in _UNITS:
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit} ago" if unit == "min" else f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
MINUTE_US = 60_000_000


def epoch_us(stamp: str) -> int | None:
    """`parse_time(stamp)` as whole microseconds since the epoch (exact: a datetime's resolution),
    or None when it is no time: what `Ages` takes, stored by `session list`'s heads cache."""
    when = parse_time(stamp)
    return None if when is None else (when - _EPOCH) // _MICROSECOND


class Ages(dict[int, str]):
    """`relative_time` of many times given as `epoch_us`, against one `now` (`session list`, once
    per session): every unit is a whole number of minutes, so the text depends only on the whole
    minutes elapsed, `ages[(ages.now_us - when_us) // MINUTE_US]` (negative: in the future), worked
    out once per distinct minute (a plain dict lookup in the loop). The same text as `relative_time`
    gives for the same `now`."""

    def __init__(self, now: datetime | None = None) -> None:
        super().__init__()
        self.now_us = ((now or datetime.now(UTC)) - _EPOCH) // _MICROSECOND

    def __missing__(self, minute: int) -> str:
        text = self[minute] = ago(minute * 60)  # any time within the minute says the same
        return text


def local_time(stamp: str) -> str:
    """The commit time in the local zone, as git log prints dates."""
    when = parse_time(stamp)
    return when.astimezone().strftime("%a %b %d %H:%M:%S %Y %z") if when else stamp


# --- errors ------------------------------------------------------------------------------------------


def describe_os_error(err: OSError) -> str:
    """`err` as one line naming the path (its directory, for one of our temp files) and what to check."""
    reason = err.strerror or str(err) or type(err).__name__
    if not isinstance(err.filename, str | bytes):  # a write to a descriptor: stdout, or a store file
        return f"cannot write: {reason}; check free disk space and where the output goes"
    path = os.fsdecode(err.filename)
    if os.path.basename(path).startswith(".tmp-"):  # a temp file of a durable write: name its target
        target = err.filename2
        path = os.fsdecode(target) if isinstance(target, str | bytes) else os.path.dirname(path) or "."
    return f"cannot write or read {path}: {reason}; check its permissions and free space"


def error_line(err: Exception) -> str:
    """The one stderr line for a refused operation (`session: ...`)."""
    plain = isinstance(err, SessionStoreError) or not isinstance(err, OSError)  # LockTimeout is both
    text = str(err) if plain else describe_os_error(err)
    return f"session: {printable(text)}"


def warn(message: str) -> None:
    say(f"session: {message}", err=True)


# --- completion --------------------------------------------------------------------------------------


def _completion_store(ctx: click.Context) -> SessionStore | None:
    """The store named on the command line being completed (`--store` is recorded as it is parsed:
    no command runs)."""
    from ..porcelain.store import SessionStore

    try:
        return SessionStore.open(store_path(ctx), create=False, warm=False)
    except SessionStoreError:
        return None


def complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Session names starting with what was typed (click's shell_complete)."""
    from click.shell_completion import CompletionItem

    store = _completion_store(ctx)
    names = store.sessions() if store is not None else []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_rev(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Revisions: session names, `NAME@SEQ` once an `@` is typed, `checkpoints/NAME/K`."""
    from click.shell_completion import CompletionItem

    from ..plumbing.names import is_valid_name

    store = _completion_store(ctx)
    if store is None:
        return []
    if "@" in incomplete:
        name = incomplete.split("@", 1)[0]
        if not is_valid_name(name) or not store.exists(name):
            return []
        head = store.log(name).head()
        seqs = range(head.seq, 0, -1) if head else ()
        return [CompletionItem(f"{name}@{s}") for s in seqs if f"{name}@{s}".startswith(incomplete)]
    if incomplete.startswith("checkpoints/"):
        refs = [r.name for n in store.refs.sessions() if store.exists(n) for r in store.refs.list(n)]
        return [CompletionItem(r) for r in refs if r.startswith(incomplete)]
    names = [n for n in store.sessions() if n.startswith(incomplete)]
    extra = ["checkpoints/"] if "checkpoints/".startswith(incomplete) and incomplete else []
    return [CompletionItem(n) for n in names + extra]
