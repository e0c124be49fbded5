"""Slash commands are parsed before anything is sent: each line is a message, a command or one error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.cli.chat_slash import COMMANDS, Command, Invalid, Message, help_lines, parse, session_rev


@given(st.text())
def test_every_line_parses_to_exactly_one_outcome(line: str) -> None:
    parsed = parse(line)
    if not line.strip():
        assert parsed is None
    elif not line.strip().startswith("/"):
        assert parsed == Message(line.strip("\n"))  # sent as typed, never reinterpreted
    else:
        assert isinstance(parsed, Message | Command | Invalid)
        if isinstance(parsed, Invalid):
            assert "\n" not in parsed.error and parsed.error
        if isinstance(parsed, Command):
            assert parsed.name in COMMANDS


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/compact", Command("compact")),
        ("/compact  keep the auth decisions ", Command("compact", "keep the auth decisions")),
        ("/COMPACT x", Command("compact", "x")),
        ("/gauge", Command("gauge")),
        ("/log", Command("log")),
        ("/log 3", Command("log", "3")),
        ("/checkout fix-auth@2", Command("checkout", "fix-auth@2")),
        ("/fork spike", Command("fork", "spike")),
        ("/help", Command("help")),
        ("/exit", Command("exit")),
        ("/quit", Command("exit")),
        ("//etc/hosts is odd", Message("/etc/hosts is odd")),
        ("hello /compact", Message("hello /compact")),
    ],
)
def test_commands_and_their_arguments(line: str, expected: object) -> None:
    assert parse(line) == expected


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("/compat", ["unknown command /compat", "/help"]),
        ("/checkout", ["/checkout needs REV"]),
        ("/fork", ["/fork needs NEW"]),
        ("/fork a b", ["/fork takes one NEW"]),
        ("/log many", ["/log takes a positive number", "/log 20"]),
        ("/log 0", ["positive number"]),
        ("/gauge now", ["/gauge takes no argument"]),
        ("/exit please", ["/exit takes no argument"]),
    ],
)
def test_mistakes_are_one_line_naming_the_fix(line: str, words: list[str]) -> None:
    parsed = parse(line)
    assert isinstance(parsed, Invalid)
    for word in words:
        assert word in parsed.error


def test_help_lists_every_command_and_the_keys() -> None:
    text = "\n".join(help_lines())
    for name in COMMANDS:
        assert f"/{name}" in text
    assert "Ctrl-C" in text and "Ctrl-D" in text


def test_revisions_typed_in_a_chat_are_relative_to_its_session() -> None:
    assert session_rev("@3", "fix-auth") == "fix-auth@3"
    assert session_rev("~1", "fix-auth") == "fix-auth~1"
    assert session_rev("other@2", "fix-auth") == "other@2"
    assert session_rev("checkpoints/fix-auth/1", "fix-auth") == "checkpoints/fix-auth/1"


@pytest.mark.parametrize(("line", "word"), [("/\n0", "/"), ("/fork\nspike", None), ("/log\t3", None)])
def test_any_whitespace_ends_the_command_word_so_no_error_spans_lines(line: str, word: str | None) -> None:
    # Found by hypothesis: "/\n0" once named the command "/\n0", printing a two-line error.
    parsed = parse(line)
    if word is None:
        assert isinstance(parsed, Command)
    else:
        assert isinstance(parsed, Invalid) and "\n" not in parsed.error and f"command {word}:" in parsed.error
