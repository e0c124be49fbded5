"""The regex a user hands `session search`: RE2 (linear time), Python's `re` only when asked.

A backtracking engine has catastrophic cases: `(a+)+$` on 35 characters ran past 60 s under `re`.
RE2 (`google-re2`) matches in time linear in the text for every pattern it accepts, so a search
can never hang on its pattern. RE2 lacks what needs backtracking: backreferences (`\\1`,
`(?P=name)`), lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), atomic groups, possessive quantifiers and
conditionals. A pattern using one is refused with one line naming the feature and the fix, as
ripgrep does without `-P`, unless the caller asks for the backtracking engine (`--pcre`): then the
pattern runs on `re`, and `time_limit` stops a search that runs longer than `BACKTRACK_SECONDS`.

RE2 differs from `re` in two more ways a user may meet: `\\w`, `\\d`, `\\s` and `\\b` are ASCII only
(write `\\pL`, `\\pN` or `[[:^space:]]` for other scripts), and `$` matches only at the very end of a
text, not also before a final newline. Case folding (`-i`) is Unicode in both.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import re2

from sessionstore.errors import SessionStoreError

BACKTRACK_SECONDS = 10.0
"""How long a search on Python's backtracking engine (`--pcre`) may run before it is stopped."""

_FEATURES = (  # (what RE2's error or the pattern shows, the feature's name for people)
    ("(?P=", "a named backreference (?P=name)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?>", "an atomic group (?>...)"),
    ("(?(", "a conditional (?(...)...)"),
    ("*+", "a possessive quantifier (*+)"),
    ("++", "a possessive quantifier (++)"),
    ("?+", "a possessive quantifier (?+)"),
    ("}+", "a possessive quantifier ({n}+)"),
    ("\\Z", "\\Z (RE2 writes it \\z)"),
)
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\([1-9])")


def _options(ignore_case: bool) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would log every refused pattern on stderr
    options.case_sensitive = not ignore_case
    return options


def compile_user_regex(pattern: str, *, ignore_case: bool = False, backtracking: bool = False) -> Any:
    """`pattern` compiled for searching: an RE2 regex when RE2 accepts it; else, with `backtracking`,
    a Python `re` pattern (run it under `time_limit`). Either has `search(text)` returning a match
    with `span()` and `group()`.

    Refuses, with one `SessionStoreError` line, a pattern no engine accepts (naming the problem) and,
    without `backtracking`, one that needs a feature RE2 lacks (naming the feature and the fix).
    """
    try:
        return re2.compile(pattern, _options(ignore_case))
    except re2.error as err:
        said = err.args[0] if err.args else err
        reason = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as err:
        raise SessionStoreError(f"invalid pattern {pattern!r}: {err}; escape special characters") from None
    if backtracking:
        return compiled
    raise SessionStoreError(
        f"pattern {pattern!r} uses {needed_feature(pattern, reason)}, which the linear-time engine (RE2) "
        f"lacks: rewrite it without, or pass --pcre to run it on Python's backtracking engine (stopped "
        f"after {BACKTRACK_SECONDS:g}s)"
    )


def needed_feature(pattern: str, reason: str) -> str:
    """What in `pattern` RE2 refused (`reason` is RE2's error), named for people."""
    backreference = _BACKREFERENCE.search(reason)
    if backreference:
        return f"a backreference (\\{backreference[1]})"
    for mark, name in _FEATURES:
        if mark in pattern:
            return name
    return f"syntax RE2 does not support ({reason})"


class PatternTimeout(SessionStoreError):
    """A search on the backtracking engine ran longer than its limit."""


@contextmanager
def time_limit(pattern: str, seconds: float | None = None) -> Iterator[None]:
    """Stop the block with `PatternTimeout` once it has run `seconds` (default `BACKTRACK_SECONDS`; a
    SIGALRM timer, which `re` sees between its steps). Off the main thread no timer can be set: the
    block runs unlimited."""
    seconds = BACKTRACK_SECONDS if seconds is None else seconds
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise PatternTimeout(
            f"pattern {pattern!r} ran {seconds:g}s on Python's backtracking engine (--pcre) and was "
            "stopped: nested repeats such as (a+)+ backtrack exponentially; simplify it or drop --pcre"
        )

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
