"""The offline summarizer: the skeleton filled from the record, corrections marked only when explicit,
and the README's budget example (issue 26)."""

from __future__ import annotations

from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.settings import Settings
from sessionstore.summary.offline import MARKER, summarize_offline
from sessionstore.summary.skeleton import section_body

DEFAULTS = Settings()  # the settings a store with no configuration has


RULE = "Budget cap is $500 total. Never exceed without explicit approval."
FIX = "Actually it is $700, not $500."


def turn(text: str, answer: str = "ok") -> list:
    return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(answer)])]


def test_the_readme_example_the_rule_stays_a_rule_and_700_is_current() -> None:
    text = summarize_offline([*turn(RULE), *turn(FIX)], settings=DEFAULTS)
    lines = text.split("\n")
    assert f"> {RULE}" in lines and f"> {FIX}" in lines
    assert not [line for line in lines if "Never exceed" in line and "supersed" in line.lower()]
    assert "- $500 is superseded: the user corrected it to $700." in lines
    assert [line for line in lines if "$500" in line or "$700" in line][-1] == f"> {FIX}"
    again = summarize_offline(
        [ModelRequest(parts=[CompactionPart(content=text)]), *turn("Book the venue.")], settings=DEFAULTS
    )
    assert section_body(again, "## What the user said").count(RULE) == 1
    assert "- $500 is superseded: the user corrected it to $700." in again


def test_the_goal_is_the_latest_request_by_content_never_boilerplate_or_an_ack() -> None:
    history = [
        *turn("Build the CSV exporter for the invoices table."),
        *turn("<system-reminder>" + "Remember the house style. " * 40 + "</system-reminder>"),
        *turn("p"),
    ]
    text = summarize_offline(history, settings=DEFAULTS)
    assert section_body(text, "## Goal") == "Build the CSV exporter for the invoices table."
    assert text.split("\n", 2)[1].startswith(MARKER)


def test_progress_from_the_record() -> None:
    history = [
        *turn("Run the tests and fix what fails.", "All green now."),
        ModelRequest(parts=[UserPromptPart("Now deploy to staging.")]),
        ModelResponse(parts=[ToolCallPart("Bash", {"command": "make deploy"}, tool_call_id="d")]),
        ModelRequest(
            parts=[ToolReturnPart("Bash", "Process exited with code 2\nno credentials", tool_call_id="d")]
        ),
    ]
    failed = history[-1].parts[0]
    failed.outcome = "failed"
    text = summarize_offline(history, settings=DEFAULTS)
    assert section_body(text, "### Done") == "- All green now."
    assert section_body(text, "### In Progress") == "- Now deploy to staging."
    assert "make deploy (exit 2)" in section_body(text, "## Work so far")


def test_focus_is_stated_once() -> None:
    text = summarize_offline(turn("Refactor the parser."), focus="the error messages", settings=DEFAULTS)
    assert "- Focus requested: the error messages" in section_body(text, "## Critical Context")
    again = summarize_offline(
        [ModelRequest(parts=[CompactionPart(content=text)]), *turn("next")], settings=DEFAULTS
    )
    assert "Focus requested" not in again
