"""`## Work so far`: one line per user turn from the structured record, newest kept within the budget."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.tokens import count_text
from sessionstore.formats.transcripts import read_transcript
from sessionstore.summary.work_log import changed_files, parse, render, turns

HISTORY = [
    ModelRequest(parts=[UserPromptPart("Fix the flaky login test in tests/test_auth.py please")]),
    ModelResponse(
        parts=[
            ToolCallPart("Read", {"file_path": "tests/test_auth.py"}, tool_call_id="a"),
            ToolCallPart("Bash", {"command": "pytest -q tests/test_auth.py"}, tool_call_id="b"),
        ]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("Read", "def test_login(): ...", tool_call_id="a"),
            ToolReturnPart("Bash", "Process exited with code 1\nFAILED test_login", tool_call_id="b"),
        ]
    ),
    ModelResponse(
        parts=[
            ToolCallPart(
                "Edit", {"file_path": "src/auth.py", "old_string": "a", "new_string": "b"}, tool_call_id="c"
            )
        ]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("Edit", "ok", tool_call_id="c"),
            RetryFeedbackPart("bad JSON in the reply", retry=RetryInfo(cause="output")),
        ]
    ),
    ModelResponse(parts=[TextPart("Fixed: the token expiry was compared in local time.")]),
    ModelRequest(
        parts=[UserPromptPart("<system-reminder>noise</system-reminder>\nnow update the changelog")]
    ),
    ModelResponse(parts=[ToolCallPart("get_user_details", {"user_id": "u1"}, tool_call_id="d")]),
]


def test_one_line_per_turn_from_arguments_and_returns() -> None:
    first, second = turns(HISTORY)
    assert first.line() == (
        '- "Fix the flaky login test in tests/test_auth.py please"; read `tests/test_auth.py`; '
        "changed `src/auth.py`; ran `pytest -q tests/test_auth.py (exit 1)`; "
        'failed: retry: bad JSON in the reply; answered "Fixed: the token expiry was compared in local time."'
    )
    assert (
        second.line() == '- "now update the changelog"; called get_user_details'
    )  # the reminder is no request
    assert changed_files([first, second]) == ["src/auth.py"]


def test_newest_kept_within_the_budget_and_parsed_back() -> None:
    many = [f'- "turn {i}"; answered "done {i}"' for i in range(50)]
    body = render(many, 3, [], 120)
    lines = body.split("\n")
    assert lines[0].startswith("- (") and "earlier turns not listed" in lines[0]
    assert lines[-1] == many[-1] and count_text(body) <= 120
    kept, hidden = parse(body)
    assert kept == lines[1:] and hidden == 3 + 50 - len(kept)


def test_the_real_transcripts_give_one_line_per_turn(realdata: Path) -> None:
    for name in ("claude_code/codemie_session-3fe1b6bc.jsonl", "claude_code/spotter_tool_heavy.jsonl"):
        messages = [m for s in read_transcript(realdata / name).steps for m in s.messages]
        log = turns(messages)
        assert log and all(line.startswith("- ") for line in (t.line() for t in log))
        assert render([], 0, log, 100_000).count("\n") + 1 == len(log)
