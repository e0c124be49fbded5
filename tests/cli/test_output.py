"""Shared CLI output helpers: relative times, numbers, colour decisions, progress off a terminal."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.cli.output import (
    MINUTE_US,
    Ages,
    Painter,
    colour_enabled,
    epoch_us,
    number,
    plural,
    printable,
    progress,
    relative_time,
    short_id,
)

NOW = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)


def _ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("stamp", "text"),
    [
        (_ago(seconds=5), "just now"),
        (_ago(minutes=12, seconds=40), "12 min ago"),
        (_ago(hours=1), "1 hour ago"),
        (_ago(hours=5, minutes=59), "5 hours ago"),
        (_ago(days=3), "3 days ago"),
        (_ago(days=65), "2 months ago"),
        (_ago(days=800), "2 years ago"),
        (_ago(seconds=-30), "in the future"),
        ("not a time", "not a time"),
    ],
)
def test_relative_time(stamp: str, text: str) -> None:
    assert relative_time(stamp, NOW) == text


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10 * 365 * 86400))
def test_relative_time_never_grows_backwards(seconds: int) -> None:
    """An older commit never reads as more recent than a newer one (same unit, or a larger one)."""
    order = ["just now", "min", "hour", "day", "month", "year"]

    def rank(text: str) -> tuple[int, int]:
        if text == "just now":
            return 0, 0
        n, unit = text.split()[:2]
        return order.index(unit.rstrip("s")), int(n)

    assert rank(relative_time(_ago(seconds=seconds), NOW)) <= rank(
        relative_time(_ago(seconds=seconds + 61), NOW)
    )


def test_numbers_and_ids() -> None:
    assert number(151022) == "151,022"
    assert plural(1, "msg") == "1 msg" and plural(1200, "msg") == "1,200 msgs"
    assert short_id("9f2c1e4abcdef") == "9f2c1e4" and short_id(None) == "-------"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert colour_enabled(_Tty()) and not colour_enabled(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_enabled(_Tty())
    assert Painter(False)("x", fg="red") == "x"
    assert Painter(True)("x", fg="red") == "\x1b[31mx\x1b[0m"


def test_progress_is_off_without_a_terminal() -> None:
    with progress("working") as bar:  # pytest captures stderr: not a terminal
        assert bar is None


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(max_size=20),
    style=st.fixed_dictionaries(
        {},
        optional={
            "fg": st.sampled_from(["green", "yellow", "red", "blue"]),
            "bold": st.booleans(),
            "dim": st.booleans(),
            "underline": st.booleans(),
        },
    ),
)
def test_painter_codes_wrap_text_exactly_as_click_style(text: str, style: dict) -> None:
    """`Painter.codes` (worked out once, for thousands of rows) puts around any text exactly what
    `click.style` would; without colour, nothing."""
    before, after = Painter(True).codes(**style)
    assert before + text + after == click.style(text, **style) == Painter(True)(text, **style)
    assert Painter(False).codes(**style) == ("", "")


@settings(max_examples=400, deadline=None)
@given(
    when=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.sampled_from([UTC, None])
    ),
    elapsed=st.one_of(
        st.integers(min_value=-3 * 60_000_000, max_value=3 * 60_000_000),  # around "just now"
        st.integers(min_value=-(10**15), max_value=10**15),
        st.integers(min_value=-5, max_value=5 * 365 * 1440).map(lambda m: m * 60_000_000 + st_offset(m)),
    ),
)
def test_ages_say_what_relative_time_says(when: datetime, elapsed: int) -> None:
    """`session list`'s relative times from the heads cache (`epoch_us`, one text per distinct
    minute) are exactly `relative_time`'s, at minute boundaries and either side of them too."""
    stamp = when.isoformat().replace("+00:00", "Z")
    now = (when if when.tzinfo else when.replace(tzinfo=UTC)) + timedelta(microseconds=elapsed)
    ages = Ages(now)
    when_us = epoch_us(stamp)
    assert when_us is not None
    first = ages[(ages.now_us - when_us) // MINUTE_US]
    assert first == relative_time(stamp, now)
    assert ages[(ages.now_us - when_us) // MINUTE_US] == first  # worked out once, then looked up


def st_offset(minute: int) -> int:
    """-1, 0 or +1 microsecond around a whole minute, chosen by the minute itself (deterministic)."""
    return minute % 3 - 1


def test_epoch_us_of_what_is_no_time() -> None:
    assert epoch_us("not a time") is None and epoch_us("2026-03-02T12:00:00Z") == 1772452800 * 10**6


_ACTED_ON = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@given(st.text())
@settings(max_examples=300)
def test_printable_leaves_nothing_a_terminal_acts_on_and_changes_nothing_else(text: str) -> None:
    """Every field the CLI prints goes through `printable` (issue 29.6), for any text."""
    shown = printable(text)
    assert not _ACTED_ON.search(shown)
    if not _ACTED_ON.search(text):
        assert shown == text  # plain text is shown as it is, backslashes included
    in_text = printable(text, tabs=True)  # message text: tabs kept, everything else escaped
    assert not _ACTED_ON.search(in_text.replace("\t", ""))
    assert in_text.count("\t") == text.count("\t")


def test_printable_writes_each_control_as_a_visible_escape() -> None:
    assert printable("a\x1b[31mb\x07\x00\n\t\r\x9b\u202e\x7f") == r"a\x1b[31mb\x07\x00\n\t\r\x9b\u202e\x7f"
    assert printable("tab\there", tabs=True) == "tab\there"
