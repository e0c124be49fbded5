"""What a tool call did, from its arguments and its return (no prose), and the one walk over a history."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

from sessionstore.summary.record import Call, call_of, exit_code, failed, walk


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Read", {"file_path": "/r/a.py", "limit": 50}, Call("Read", read="/r/a.py")),
        ("Write", {"file_path": "/r/b.py", "content": "x"}, Call("Write", changed=("/r/b.py",))),
        (
            "Edit",
            {"file_path": "/r/c.py", "old_string": "a", "new_string": "b"},
            Call("Edit", changed=("/r/c.py",)),
        ),
        ("Bash", {"command": "pytest -q", "description": "t"}, Call("Bash", command="pytest -q")),
        (
            "Bash",
            {"command": "cat docs/RUNBOOK.md"},
            Call("Bash", read="docs/RUNBOOK.md", command="cat docs/RUNBOOK.md"),
        ),
        (
            "exec_command",
            '{"cmd": "sed -n \'1,80p\' CONTRIBUTING.md"}',
            Call("exec_command", read="CONTRIBUTING.md", command="sed -n '1,80p' CONTRIBUTING.md"),
        ),
        ("Bash", {"command": "cat a.txt | grep x"}, Call("Bash", command="cat a.txt | grep x")),
        (
            "apply_patch",
            "*** Begin Patch\n*** Update File: src/x.py\n@@\n-a\n+b\n*** End Patch",
            Call("apply_patch", changed=("src/x.py",)),
        ),
        ("get_user_details", {"user_id": "mia_li_3668"}, Call("get_user_details")),
    ],
)
def test_call_of(name: str, args: object, expected: Call) -> None:
    assert call_of(ToolCallPart(name, args, tool_call_id="c1")) == expected


def test_failures_from_the_outcome_or_the_exit_code() -> None:
    ok = ToolReturnPart(
        "exec_command", "Chunk ID: 1\nProcess exited with code 0\nOutput:\nfine", tool_call_id="c"
    )
    bad = ToolReturnPart(
        "exec_command", "Chunk ID: 2\nProcess exited with code 1\nOutput:\nboom", tool_call_id="c"
    )
    err = ToolReturnPart("Read", "<tool_use_error>File does not exist.</tool_use_error>", tool_call_id="c")
    err.outcome = "failed"
    assert (exit_code(ok), exit_code(bad), exit_code(err)) == (0, 1, None)
    assert (failed(ok), failed(bad), failed(err)) == (False, True, True)
    assert exit_code(ToolReturnPart("t", {"exit": 3}, tool_call_id="c")) is None  # structured: not read


def test_walk_feeds_each_message_once_in_order() -> None:
    seen: list[tuple[str, object]] = []

    class Reader:
        def response(self, msg: ModelResponse, calls: list[tuple[ToolCallPart, Call]]) -> None:
            seen.append(("response", [c for _, c in calls]))

        def returned(self, part: ToolReturnPart) -> None:
            seen.append(("returned", part.tool_call_id))

    history = [
        ModelResponse(parts=[ToolCallPart("Read", {"path": "a.md"}, tool_call_id="r")]),
        ModelRequest(parts=[ToolReturnPart("Read", "text", tool_call_id="r"), UserPromptPart("next")]),
    ]
    walk(history, Reader())
    assert seen == [
        ("response", [Call("Read", read="a.md")]),
        ("returned", "r"),
    ]  # no prompt method: no prompts


def shlex_printed(command: str) -> str | None:
    """What `call_of` read from a shell command when every command went through `shlex`: the reference."""
    first = command.split(None, 1)[0] if command.strip() else ""
    if first.rsplit("/", 1)[-1] not in PRINTERS or any(c in command for c in "|><;&"):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 2 or words[0].rsplit("/", 1)[-1] not in PRINTERS or words[-1].startswith("-"):
        return None
    return words[-1]


PRINTERS = {"cat", "head", "tail", "sed", "less", "more", "bat", "nl", "type"}


@hsettings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["cat", "/bin/cat", "head -n 5", "sed -n '1,5p'", "tail", "grep", ""]),
    st.text(alphabet=" \t\r\n\x0b\x0cabcmt./'\"\\#-é|", max_size=30),
)
def test_a_printed_file_is_read_as_shlex_reads_it(printer: str, rest: str) -> None:
    """Commands with nothing quoted or escaped skip shlex: the file read is the same for any command."""
    command = f"{printer} {rest}"
    assert call_of(ToolCallPart("bash", {"command": command})).read == shlex_printed(command)
