"""Which sessions `session list` shows and in which order (a name glob, `--since`, `--sort`), and which
session `--last` means for `chat`, `show` and `log`: the most recent one. Read from the session heads
(the cache `session list` keeps), never a blob.

A session's time is its head commit's: when it last changed (for an import, when the conversation
happened), what `session list` shows as its age.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import click

from .output import epoch_us, fail

if TYPE_CHECKING:
    from ..porcelain.store import SessionStore

SORTS = ("name", "time", "tokens")
"""`--sort`: by name (the default), newest first, largest context first."""
_AGE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>m|min|h|d|w)")
_UNITS = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def since_us(text: str, now: datetime | None = None) -> int:
    """`--since TEXT` as a cutoff in `epoch_us`: an age (`30m`, `2h`, `3d`, `1w`: that long ago) or a
    date or time (`2026-03-01`, `2026-03-01T09:00`; without a zone, the local time, as git reads one)."""
    now = now or datetime.now(UTC)
    text = text.strip()
    if (m := _AGE.fullmatch(text)) is not None:
        cutoff = now - timedelta(**{_UNITS[m["unit"]]: float(m["n"])})
    else:
        try:
            cutoff = datetime.fromisoformat(text)
        except ValueError:
            raise fail(
                f"--since {text!r} is neither an age nor a date: give 30m, 2h, 3d, 1w, or a date like "
                "2026-03-01 (or 2026-03-01T09:00)"
            ) from None
        if cutoff.tzinfo is None:
            cutoff = cutoff.astimezone()  # a naive time is the local one
    cutoff_us = epoch_us(cutoff.astimezone(UTC).isoformat())
    assert cutoff_us is not None
    return cutoff_us


@dataclass(frozen=True)
class Selection:
    """What `session list` was asked to show: a name glob (`fnmatch`, case-sensitive as names are),
    sessions changed since a time, and an order."""

    pattern: str | None = None
    since: int | None = None
    """Cutoff in `epoch_us`: only sessions whose head is at least this recent (an empty one is not)."""
    sort: str = "name"

    @property
    def everything(self) -> bool:
        return self.pattern is None and self.since is None and self.sort == "name"

    def order(self, names: list[str], when: dict[str, int | None], tokens: dict[str, int]) -> list[int]:
        """Indexes of `names` (sorted by name) to show, in the order to show them."""

        def stamp(name: str) -> int:
            found = when.get(name)
            return -1 if found is None else found  # an empty session: older than any

        keep = [
            i
            for i, name in enumerate(names)
            if (self.pattern is None or fnmatchcase(name, self.pattern))
            and (self.since is None or stamp(name) >= self.since)
        ]
        if self.sort == "time":  # newest first; by name among equals (the sort is stable)
            keep.sort(key=lambda i: -stamp(names[i]))
        elif self.sort == "tokens":
            keep.sort(key=lambda i: -tokens.get(names[i], 0))
        return keep


def head_times(store: SessionStore) -> tuple[dict[str, int | None], dict[str, int]]:
    """Each session's head time (`epoch_us`, None when empty) and context tokens, from the heads cache."""
    when: dict[str, int | None] = {}
    tokens: dict[str, int] = {}
    for info in store.infos():
        when[info.name] = epoch_us(info.head.time) if info.head is not None else None
        tokens[info.name] = info.tokens
    return when, tokens


def last_session(store: SessionStore) -> str:
    """The session whose head is the most recent (`--last`); the first by name among equals."""
    when, _ = head_times(store)
    dated = [(-stamp, name) for name, stamp in when.items() if stamp is not None]
    if not dated:
        raise fail("--last: no session has a commit yet (`session import FILE` brings one in)")
    return min(dated)[1]


def last_option(f: Any) -> Any:
    return click.option(
        "--last", is_flag=True, help="The most recent session (the first row of `session list --sort time`)."
    )(f)


def named_or_last(given: str | None, last: bool, what: str) -> Callable[[SessionStore], str]:
    """What names the session: `given` (NAME or REV), or with `--last` the most recent session; exactly
    one of them, checked now (a usage error, before any store is opened), read from the store later."""
    if last and given is not None:
        raise click.UsageError(f"give {what} or --last, not both", click.get_current_context(silent=True))
    if given is None and not last:
        raise click.UsageError(
            f"Missing argument '{what}' (or --last for the most recent session)",
            click.get_current_context(silent=True),
        )
    return last_session if given is None else lambda store: given
