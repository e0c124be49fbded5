"""A summary's parts in order within its budget, and a previous summary read back into its parts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
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
from sessionstore.accounting.tokens import count_text
from sessionstore.formats.transcripts import read_transcript
from sessionstore.summary.compose import Budget, read_previous, record
from sessionstore.summary.offline import summarize_offline
from sessionstore.summary.skeleton import SECTIONS, heading_lines, validate_summary

DEFAULTS = Settings()  # the settings a store with no configuration has


HISTORY = [
    ModelRequest(parts=[UserPromptPart("Fix the login bug. Never push to main.")]),
    ModelResponse(parts=[ToolCallPart("Read", {"file_path": "CONTRIBUTING.md"}, tool_call_id="r")]),
    ModelRequest(
        parts=[ToolReturnPart("Read", "- Every PR has to update CHANGELOG.md.\n", tool_call_id="r")]
    ),
    ModelResponse(parts=[TextPart("Done.")]),
    ModelRequest(parts=[UserPromptPart("Actually the port is 8443, not 8080.")]),
    ModelResponse(parts=[TextPart("ok")]),
]


def summary_request(text: str) -> ModelRequest:
    return ModelRequest(parts=[CompactionPart(content=text)])


def test_sections_in_order_the_users_words_last_then_the_recall_line() -> None:
    text = summarize_offline(HISTORY, recall="t@4", settings=DEFAULTS)
    assert validate_summary(text) == []
    assert [h for _, h in heading_lines(text)] == list(SECTIONS)
    lines = text.rstrip().split("\n")
    assert lines[-1].startswith("The store keeps every message this summary replaced (6 so far)")
    assert "`session show t@4`" in lines[-1]
    assert lines[-3] == "> Actually the port is 8443, not 8080."  # the latest thing said reads last


def test_a_previous_summary_is_read_back_and_carried_not_quoted() -> None:
    first = summarize_offline(HISTORY, recall="t@4", settings=DEFAULTS)
    rec = read_previous(first)
    assert rec.messages == 6 and rec.goal == "Actually the port is 8443, not 8080."
    assert [e.head for e in rec.words.entries] == [
        "Fix the login bug. Never push to main.",
        "Actually the port is 8443, not 8080.",
    ]
    assert rec.rules == [("CONTRIBUTING.md", "Every PR has to update CHANGELOG.md.")]
    assert [(c.old, c.new) for c in rec.corrections] == [("8080", "8443")]
    second = summarize_offline(
        [summary_request(first), ModelRequest(parts=[UserPromptPart("Now deploy.")])], settings=DEFAULTS
    )
    said = second.split("## What the user said")[1]
    assert said.count("Fix the login bug.") == 1 and "> > " not in second and "## Goal" not in said
    assert "(7 so far)" in second and "- 8080 is superseded: the user corrected it to 8443." in second


def test_a_foreign_summary_is_kept_as_a_quote_and_tier_three_quotes_are_ignored() -> None:
    foreign = "The user wants a CSV exporter; the schema is in schema.sql."
    rec = record([summary_request(foreign), *HISTORY])
    assert rec.foreign.strip() == foreign and rec.messages == 7
    text = summarize_offline([summary_request(foreign), *HISTORY], settings=DEFAULTS)
    assert "> The user wants a CSV exporter; the schema is in schema.sql." in text
    ours = summarize_offline(HISTORY, settings=DEFAULTS)
    merged = (
        ours + "\n#### Earlier checkpoint summary (-1)\n> # Conversation summary\n> ## Goal\n> old goal\n"
    )
    assert read_previous(merged).words.render() == read_previous(ours).words.render()


@hsettings(max_examples=25, deadline=None)
@given(st.integers(300, 6000), st.integers(1, 40))
def test_the_whole_fits_its_budget(max_tokens: int, turns: int) -> None:
    history = []
    for i in range(turns):
        history += [
            ModelRequest(parts=[UserPromptPart(f"Step {i}: never skip the tests for module m{i}. " * 5)]),
            ModelResponse(parts=[TextPart(f"done {i}")]),
        ]
    text = summarize_offline(history, max_tokens=max_tokens, settings=DEFAULTS)
    assert count_text(text) <= max_tokens + 60  # the skeleton's own floor at the smallest budgets
    assert Budget.of(Settings(), max_tokens).rest <= max_tokens


def test_real_transcripts_summarize_within_a_small_budget(realdata: Path) -> None:
    for name in (
        "claude_code/codemie_session-3fe1b6bc.jsonl",
        "codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
    ):
        messages = [m for s in read_transcript(realdata / name).steps for m in s.messages]
        text = summarize_offline(messages, max_tokens=3000, settings=DEFAULTS)
        assert validate_summary(text) == [] and count_text(text) <= 3000
        assert "Whenever you read a file, you should consider" not in text  # a reminder in a read
