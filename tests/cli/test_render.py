"""The `session show` transcript: roles, calls, shortening, dimmed thinking, any part kind."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.messages import messages, sample_turns
from sessionstore.cli.output import Painter
from sessionstore.cli.render import KEEP_LINES, format_call, render, shorten

PLAIN = Painter(False)


def test_calls_read_like_python() -> None:
    assert (
        format_call("read_file", {"path": "src/auth.py", "n": 3}, False)
        == 'read_file(path="src/auth.py", n=3)'
    )
    long = format_call("write", {"body": "z" * 500}, False)
    assert long.endswith("…)") and len(long) < 120
    assert format_call("write", {"body": "z" * 500}, True).count("z") == 500


def test_shorten_keeps_the_first_lines_and_says_how_many() -> None:
    lines, note = shorten("\n".join(str(i) for i in range(50)), False)
    assert lines == ["0", "1", "2"][:KEEP_LINES] and note == "(50 lines, shortened; --full shows all)"
    assert shorten("one line", False) == (["one line"], None)
    lines, note = shorten("y" * 5000, False)  # one huge line is shortened too
    assert len(lines[0]) < 400 and note == "(1 line, shortened; --full shows all)"
    assert shorten("a\nb\nc\nd", True) == (["a", "b", "c", "d"], None)


def test_a_turn_renders_with_a_role_column() -> None:
    turn = [
        ModelRequest(parts=[UserPromptPart("add a test for the expired-token path")]),
        ModelResponse(
            parts=[
                ThinkingPart("check auth first"),
                ToolCallPart("read_file", {"path": "src/auth.py"}, tool_call_id="c"),
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", "\n".join(["x"] * 212), tool_call_id="c")]),
    ]
    assert render(turn, PLAIN) == [
        "user       add a test for the expired-token path",
        "",
        "assistant  [thinking]",
        "           check auth first",
        '           read_file(path="src/auth.py")',
        "",
        "tool       read_file -> x",
        "           x",
        "           x",
        "           (212 lines, shortened; --full shows all)",
    ]


def test_thinking_is_dimmed_only_with_colour() -> None:
    message = ModelResponse(parts=[ThinkingPart("secret plan"), TextPart("hello")])
    coloured = render([message], Painter(True))
    assert any("\x1b[2m" in line and "secret plan" in line for line in coloured)
    assert not any("\x1b[2m" in line and "hello" in line for line in coloured)
    assert "\x1b[" not in "".join(render([message], PLAIN))


def test_summaries_failures_media_and_opaque_parts_are_marked() -> None:
    out = render(
        [
            ModelRequest(parts=[CompactionPart(content="## Goal\nship it"), CompactionPart(content=None)]),
            ModelRequest(parts=[UserPromptPart(["see", ImageUrl("https://x.test/a.png")])]),
            ModelResponse(parts=[ThinkingPart("")]),
            ModelRequest(parts=[ToolReturnPart("run", "boom", tool_call_id="c", outcome="failed")]),
        ],
        PLAIN,
    )
    assert "summary    [compaction summary]" in out and "           ## Goal" in out
    assert "           (opaque provider summary)" in out
    assert "           [image-url: https://x.test/a.png]" in out
    assert "assistant  [thinking, not readable]" in out
    assert "tool       run [failed] -> boom" in out


def test_every_stored_part_kind_renders() -> None:
    out = render([m for turn in sample_turns() for m in turn], PLAIN)
    text = "\n".join(out)
    assert "[application/pdf" in text or "[binary" in text
    assert "grep [retried] -> bad query" in text and "retry: " in text


@settings(max_examples=60, deadline=None)
@given(st.lists(messages, max_size=4), st.booleans(), st.booleans())
def test_any_history_renders_one_row_per_part(history: list, full: bool, colour: bool) -> None:
    out = render(history, Painter(colour), full=full)
    starts = [line for line in out if line and not line.startswith(" ")]
    assert len(starts) <= sum(len(m.parts) for m in history) + len(history)
    assert all("\n" not in line for line in out)
