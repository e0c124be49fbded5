"""The offline summarizer: each skeleton section from its source, merging, bounded size, real data."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import settings as hsettings
from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.agent_histories import agent_histories
from sessionstore.accounting.tokens import count_text
from sessionstore.compaction.extractive import EXTRACTIVE_MARKER, MAX_SUMMARY_TOKENS, summarize_extractive
from sessionstore.compaction.skeleton import section_body, validate_summary

HISTORY = [
    ModelRequest(
        parts=[
            UserPromptPart(
                "Fix the expired-token bug in src/auth.py. You must keep the public API. Use `pytest -x`."
            )
        ]
    ),
    ModelResponse(
        parts=[
            TextPart("I decided to use a fixture instead of monkeypatching."),
            ToolCallPart("read_file", {"path": "src/auth.py"}, tool_call_id="1"),
            ToolCallPart("bash", {"command": "pytest -x tests/test_auth.py"}, tool_call_id="2"),
        ]
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("read_file", "def login(): ...", tool_call_id="1"),
            ToolReturnPart("bash", "Error: 1 failed, TokenExpired", tool_call_id="2", outcome="failed"),
            RetryFeedbackPart("output was not valid JSON", retry=RetryInfo("validation_error")),
        ]
    ),
    ModelResponse(parts=[TextPart("The test fails because of the clock.")]),
    ModelRequest(parts=[UserPromptPart("Now add a test for the refresh path. Never touch the database.")]),
    ModelResponse(parts=[TextPart("ok")]),
]


def test_sections_come_from_their_sources() -> None:
    text = summarize_extractive(HISTORY)
    assert validate_summary(text) == []
    assert text.splitlines()[1].startswith(EXTRACTIVE_MARKER)
    assert "Fix the expired-token bug in src/auth.py" in section_body(text, "## Goal")
    constraints = section_body(text, "## Constraints & Preferences")
    assert "You must keep the public API." in constraints and "Never touch the database." in constraints
    assert "read_file(path=src/auth.py)" in section_body(text, "### Done")
    blocked = section_body(text, "### Blocked")
    assert "bash(command=pytest -x tests/test_auth.py) failed: Error: 1 failed, TokenExpired" in blocked
    assert "output retry: output was not valid JSON" in blocked
    assert "refresh path" in section_body(text, "### In Progress")
    assert "refresh path" in section_body(text, "## Next Steps")
    assert "decided to use a fixture instead of monkeypatching" in section_body(text, "## Key Decisions")
    context = section_body(text, "## Critical Context")
    assert (
        "`src/auth.py`" in context
        and "`pytest -x tests/test_auth.py`" in context
        and "`pytest -x`" in context
    )


def test_deterministic_and_focus() -> None:
    assert summarize_extractive(HISTORY) == summarize_extractive(HISTORY)
    assert "Focus requested: the refresh path" in summarize_extractive(HISTORY, focus="the refresh path")


def test_merges_a_previous_summary() -> None:
    first = summarize_extractive(HISTORY)
    later = [
        ModelRequest(parts=[CompactionPart(content=first)]),
        ModelRequest(parts=[UserPromptPart("Also update docs/auth.md")]),
        ModelResponse(parts=[ToolCallPart("edit", {"path": "docs/auth.md"}, tool_call_id="9")]),
        ModelRequest(parts=[ToolReturnPart("edit", "ok", tool_call_id="9")]),
    ]
    merged = summarize_extractive(later)
    assert validate_summary(merged) == []
    assert section_body(merged, "## Goal") == section_body(first, "## Goal")  # the original goal stays
    done = section_body(merged, "### Done")
    assert "read_file(path=src/auth.py)" in done and "edit(path=docs/auth.md)" in done
    assert "Never touch the database." in section_body(merged, "## Constraints & Preferences")
    assert "`src/auth.py`" in section_body(merged, "## Critical Context")
    assert summarize_extractive(later[:1]).count("read_file(path=src/auth.py)") == 1  # no duplication


def test_empty_input_still_valid() -> None:
    assert validate_summary(summarize_extractive([])) == []


@hsettings(max_examples=30, deadline=None)
@given(agent_histories(max_turns=6, max_rounds=4))
def test_always_valid_and_bounded(history: list) -> None:
    text = summarize_extractive(history)
    assert validate_summary(text) == []
    assert count_text(text) <= MAX_SUMMARY_TOKENS


def test_bounded_on_huge_input() -> None:
    big: list = []
    for i in range(300):
        big += [
            ModelRequest(
                parts=[UserPromptPart(f"You must never break step {i} in pkg/mod{i}.py " + "🙂漢字" * 300)]
            ),
            ModelResponse(
                parts=[ToolCallPart("bash", {"command": f"run {i} " + "x" * 3000}, tool_call_id=f"c{i}")]
            ),
            ModelRequest(
                parts=[
                    ToolReturnPart("bash", "Traceback (most recent call last)\n" * 50, tool_call_id=f"c{i}")
                ]
            ),
        ]
    text = summarize_extractive(big)
    assert validate_summary(text) == [] and count_text(text) <= MAX_SUMMARY_TOKENS


def test_largest_real_transcript(realdata: Path) -> None:
    from sessionstore.formats.transcripts import read_transcript

    transcript = read_transcript(realdata / "claude_code" / "codemie_session-3fe1b6bc.jsonl")
    messages = [m for step in transcript.steps for m in step.messages]
    text = summarize_extractive(messages)
    assert validate_summary(text) == [] and count_text(text) <= MAX_SUMMARY_TOKENS
    assert "Caveat:" not in text  # Claude Code's harness lines are not user requests
    assert "codex" in section_body(text, "## Critical Context")
