"""User regexes run on RE2 (linear time); Python's `re` only for what RE2 lacks, and only on request.

Before, `session search '(a+)+$'` ran past 60 s on a 35-character message (Python's `re` backtracks
2^34 ways); the CLI test runs the real `session` executable with a timeout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import T0
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.history import user_regex
from sessionstore.porcelain.history.user_regex import PatternTimeout, compile_user_regex, time_limit
from sessionstore.porcelain.store import SessionStore

CATASTROPHIC = ["(a+)+$", "(a|a)+$", "(a*)*b", "(a|aa)+$", "^(([a-z])+.)+[A-Z]([a-z])+$"]
VICTIM = "a" * 34 + "!"  # 35 characters


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_run_on_re2(pattern: str) -> None:
    compiled = compile_user_regex(pattern)
    assert not isinstance(compiled, re.Pattern)  # RE2's: no backtracking, whatever the text
    assert compiled.search(VICTIM * 100) is None or pattern == "(a*)*b"


def test_session_search_returns_at_once_on_a_catastrophic_pattern(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    store.session("victim").append([ModelRequest(parts=[UserPromptPart(VICTIM, timestamp=T0)])])
    session_bin = str(Path(sys.executable).with_name("session"))
    for pattern in ("(a+)+$", "(a|aa)+$"):
        done = subprocess.run(
            [session_bin, "--store", str(store.root), "search", pattern],
            capture_output=True,
            text=True,
            timeout=30,  # Python's re needs hours for 2^34 paths
        )
        assert (done.returncode, done.stdout, done.stderr) == (1, "", "")  # no match, nothing said
    done = subprocess.run(
        [session_bin, "--store", str(store.root), "search", "a{34}!"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and "victim@1 user: " in done.stdout


@pytest.mark.parametrize(
    ("pattern", "feature"),
    [
        (r"(a)\1", r"a backreference (\1)"),
        (r"(?P<x>a)(?P=x)", "a named backreference"),
        ("foo(?=bar)", "lookahead (?=...)"),
        ("foo(?!bar)", "negative lookahead (?!...)"),
        ("(?<=x)foo", "lookbehind (?<=...)"),
        ("(?<!x)foo", "negative lookbehind (?<!...)"),
        ("(?>a+)b", "an atomic group"),
        ("a++b", "a possessive quantifier"),
        (r"end\Z", r"\Z (RE2 writes it \z)"),
    ],
)
def test_a_pattern_needing_backtracking_is_refused_naming_the_feature(pattern: str, feature: str) -> None:
    with pytest.raises(SessionStoreError) as err:
        compile_user_regex(pattern)
    said = str(err.value)
    assert "\n" not in said and feature in said and "RE2" in said and "--pcre" in said, said
    assert isinstance(compile_user_regex(pattern, backtracking=True), re.Pattern)  # on request: `re`


def test_an_invalid_pattern_is_named_by_pythons_parser() -> None:
    with pytest.raises(SessionStoreError, match=r"invalid pattern '\(a': missing \), unterminated"):
        compile_user_regex("(a", backtracking=True)


def test_the_backtracking_engine_is_stopped_by_its_time_limit() -> None:
    compiled = compile_user_regex(r"(a+)+\1$", backtracking=True)
    started = time.monotonic()
    with (
        pytest.raises(PatternTimeout, match=r"ran 0.3s on Python's backtracking engine"),
        time_limit("p", 0.3),
    ):
        compiled.search(VICTIM)
    assert time.monotonic() - started < 10


def test_re2_refuses_nothing_it_can_run_silently(capfd: pytest.CaptureFixture[str]) -> None:
    """RE2 logs a refused pattern on stderr unless told not to: the user sees one line, ours."""
    with pytest.raises(SessionStoreError):
        compile_user_regex(r"(a)\1")
    assert capfd.readouterr().err == ""


@settings(max_examples=200, deadline=None)
@given(
    pattern=st.lists(
        st.sampled_from(["a", "b", ".", "a*", "b+", "(a|b)", "[ab]", "x?", "^", "$", "(ab)+", " "]),
        max_size=6,
    ).map("".join),
    text=st.text(alphabet="abx \n", max_size=30),
    ignore_case=st.booleans(),
)
def test_re2_finds_what_re_finds_for_patterns_both_run(pattern: str, text: str, ignore_case: bool) -> None:
    """On the syntax both engines share (ASCII text), RE2 and `re` agree on the first match. (Not on a
    text ending in a newline: there `re`'s `$` also matches before that newline, RE2's only after.)"""
    text = text.rstrip("\n")
    ours = compile_user_regex(pattern, ignore_case=ignore_case).search(text)
    theirs = re.compile(pattern, re.IGNORECASE if ignore_case else 0).search(text)
    assert (ours and ours.span()) == (theirs and theirs.span())


def test_the_default_limit_is_read_when_the_search_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_regex, "BACKTRACK_SECONDS", 0.2)
    with pytest.raises(PatternTimeout), time_limit("p"):
        compile_user_regex(r"(a+)+\1$", backtracking=True).search(VICTIM)
