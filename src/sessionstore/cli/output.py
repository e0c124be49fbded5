"""What every command shares: opening the store, colour, paging, progress bars and number formats.

Nothing here imports pydantic-ai: `session log` and `session list` import this module and must start
in the time it takes to import click.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click

from ..accounting.settings import Settings
from ..errors import SessionStoreError
from ..porcelain.layout import default_root, load_settings
from ..porcelain.store import SessionStore

SHORT_ID = 7
"""Length of an abbreviated commit id, as git prints them."""


# --- the store ---------------------------------------------------------------------------------------


def store_path(ctx: click.Context) -> str | None:
    """The `--store` / SESSIONSTORE_DIR value given to the `session` group (None: the default root)."""
    obj = ctx.find_root().obj or {}
    return obj.get("store_path")


def open_store(
    ctx: click.Context, *, create: bool = False, overrides: dict[str, Any] | None = None
) -> SessionStore:
    """The store the command works on, opened once per invocation with its own settings (its project's
    pyproject.toml, the environment, then `overrides` from the command's flags); `NotAStoreError`
    (telling the user to run `session init`) if there is none."""
    obj = ctx.find_root().ensure_object(dict)
    key = ("store", create, tuple(sorted((overrides or {}).items())))
    if key not in obj:
        obj[key] = SessionStore.open(store_path(ctx), create=create, overrides=overrides)
    return obj[key]


def store_settings(ctx: click.Context, overrides: dict[str, Any] | None = None) -> Settings:
    """The settings of the store the command names, whether or not it exists yet (`session config`,
    `session memory`): exactly what `SessionStore.open` would load for it."""
    path = store_path(ctx)
    root = default_root() if path is None else Path(path)
    return load_settings(root, overrides=overrides)


def require_session(store: SessionStore, name: str) -> None:
    """Refuse a session name that does not exist, suggesting close ones (no message is loaded)."""
    store.require(name)


# --- terminals and colour ------------------------------------------------------------------------------


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


def painter(stream: IO[Any] | None = None) -> Painter:
    return Painter(colour_enabled(stream))


def _screen_lines() -> int:
    import shutil  # terminals only: piped output never pays for it

    return shutil.get_terminal_size().lines


def emit(lines: Iterable[str]) -> None:
    """Print lines; through a pager when stdout is a terminal and they do not fit on one screen."""
    out = list(lines)
    stdout = sys.stdout
    if is_terminal(stdout) and len(out) > _screen_lines() - 1:
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


def fail(message: str) -> SessionStoreError:
    """A user-facing refusal raised from a command (printed as one line, exit 2, by `cli`)."""
    return SessionStoreError(message)


def stdout_bytes(data: bytes) -> None:
    """Write raw bytes to stdout (JSON exports keep their exact encoding)."""
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
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def relative_time(stamp: str, now: datetime | None = None) -> str:
    """An ISO-8601 UTC time as '12 min ago', '3 days ago', 'just now' (the commit time if unparsable)."""
    when = parse_time(stamp)
    if when is None:
        return stamp
    seconds = ((now or datetime.now(UTC)) - when).total_seconds()
    if seconds < 0:
        return "in the future"
    for unit, size in _UNITS:
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit} ago" if unit == "min" else f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"


def local_time(stamp: str) -> str:
    """The commit time in the local zone, as git log prints dates."""
    when = parse_time(stamp)
    return when.astimezone().strftime("%a %b %d %H:%M:%S %Y %z") if when else stamp
