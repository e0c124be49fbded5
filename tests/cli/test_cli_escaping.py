"""Every field the CLI prints reaches the terminal shown, never acted on (issue 29.6).

A session whose message text, tool name, tool arguments, tool output, usage keys, conversation id and
scope, derived and set title carry ESC, BEL, newline, NUL, a one-byte CSI (0x9b) and a bidi override;
a store path and a symlink target that carry them too. `show`, `search`, `log`, `list`, `diff`, `rm
--list`, `fsck` and the error line print each as a visible escape (`\\x1b`, `\\n`, ...): the output
holds no character a terminal acts on but the newlines ending its lines, and the escapes are there.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.messages import T0
from sessionstore import FileConversationStore
from sessionstore.cli.main import cli
from sessionstore.porcelain.store import SessionStore

HOSTILE = "\x1b[31m\x1b]0;pwned\x07\x00\x9b2J\u202e"
"""ESC (a colour, and an OSC that retitles the terminal ended by BEL), NUL, a C1 CSI, a bidi override."""
SHOWN = r"\x1b[31m\x1b]0;pwned\x07\x00\x9b2J\u202e"
IN_NAME, SHOWN_IN_NAME = HOSTILE.replace("\x00", ""), SHOWN.replace(r"\x00", "")
"""The same in a file name (which cannot hold NUL)."""
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What must never reach the terminal raw (a newline ends a line; a tab in message text is kept)."""


def turn(i: int) -> list:
    tool = f"read{HOSTILE}\nfile"
    return [
        ModelRequest(parts=[UserPromptPart(f"fix it {i} {HOSTILE} now", timestamp=T0)]),
        ModelResponse(
            parts=[ToolCallPart(tool, {f"pa{HOSTILE}th": f"a{HOSTILE}.py"}, tool_call_id=f"c{i}")],
            timestamp=T0,
        ),
        ModelRequest(
            parts=[ToolReturnPart(tool, f"line{HOSTILE}\nnext", tool_call_id=f"c{i}", timestamp=T0)]
        ),
        ModelResponse(parts=[TextPart(f"done {HOSTILE}")], timestamp=T0),
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    store = SessionStore.open(tmp_path / "store")
    session = store.session("x")
    session.append(turn(0), usage={"input_tokens": 5, "details": {f"ca{HOSTILE}che": 3}}, compact=False)
    session.append(turn(1), compact=False)
    store.session("y").append(turn(2), compact=False)
    from helpers.conversations import save_turns

    save_turns(FileConversationStore(store), f"chat{HOSTILE}", 1)
    asyncio.set_event_loop(None)
    return store.root


def cli_run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def shown_literally(result: Result, *, expect: str = SHOWN) -> str:
    """The output, checked: nothing a terminal acts on, the hostile text there as escapes."""
    out = result.stdout + result.stderr
    for line in out.split("\n"):
        assert not ACTED_ON.search(line), (result.exit_code, line)
    assert expect in out, out
    return out


def test_show_prints_message_text_tool_names_and_arguments_literally(root: Path) -> None:
    result = cli_run("--store", str(root), "show", "x")
    assert result.exit_code == 0
    out = shown_literally(result)
    assert f"read{SHOWN}" in out and f"pa{SHOWN}th=" in out  # the tool name, an argument key
    assert f"fix it 0 {SHOWN} now" in out and f"line{SHOWN}" in out


def test_search_prints_the_match_and_what_surrounds_it_literally(root: Path) -> None:
    result = cli_run("--store", str(root), "search", "pwned")
    assert result.exit_code == 0
    out = shown_literally(result, expect=r"\x1b]0;")
    assert f"read{SHOWN}\\nfile" in out  # the tool of a hit, its newline shown as \n


def test_log_prints_usage_and_conversation_fields_literally(root: Path) -> None:
    shown_literally(cli_run("--store", str(root), "log", "x"), expect=f"ca{SHOWN}che 3")
    from sessionstore.integrations.conversation_store import session_name

    name = session_name(f"chat{HOSTILE}")
    shown_literally(cli_run("--store", str(root), "log", name), expect=f"'chat{SHOWN}'")
    shown_literally(cli_run("--store", str(root), "show", name), expect=f"'chat{SHOWN}'")


def test_list_prints_derived_and_set_titles_and_conversations_literally(root: Path) -> None:
    shown_literally(cli_run("--store", str(root), "list"), expect=f"fix it 0 {SHOWN} now")
    assert cli_run("--store", str(root), "rename", "y", "--title", f"T{HOSTILE}").exit_code == 0
    out = shown_literally(cli_run("--store", str(root), "list"), expect=f"T{SHOWN}")
    assert "conversation chat" in out


def test_diff_prints_removed_and_added_messages_literally(root: Path) -> None:
    shown_literally(cli_run("--store", str(root), "diff", "x@1", "x@2"), expect=f"fix it 1 {SHOWN}")


def test_errors_print_paths_and_targets_literally(root: Path, tmp_path: Path) -> None:
    missing = tmp_path / f"no{IN_NAME}store"
    result = cli_run("--store", str(missing), "log", "x")
    assert result.exit_code == 2
    assert shown_literally(result, expect=f"no{SHOWN_IN_NAME}store").count("\n") == 1  # one line
    elsewhere = tmp_path / f"else{IN_NAME}where"
    elsewhere.mkdir()
    (root / "titles").symlink_to(elsewhere)
    result = cli_run("--store", str(root), "list")
    assert result.exit_code == 2 and result.stdout == ""
    shown_literally(result, expect=f"it points to {tmp_path}/else{SHOWN_IN_NAME}where")


def test_fsck_and_the_trash_listing_print_names_literally(root: Path) -> None:
    assert cli_run("--store", str(root), "rm", "y").exit_code == 0
    [entry] = (root / "trash").iterdir()
    entry.rename(entry.with_name(f"y{IN_NAME}.20260101T000000000000Z"))  # a hand-made entry
    shown_literally(cli_run("--store", str(root), "rm", "--list"), expect=f"y{SHOWN_IN_NAME}  removed")
    (root / "logs" / f"odd{IN_NAME}.jsonl").write_bytes(b"")  # a stray file fsck names
    result = cli_run("--store", str(root), "fsck")
    assert result.exit_code == 1
    shown_literally(result, expect=f"logs/odd{SHOWN_IN_NAME}.jsonl")
