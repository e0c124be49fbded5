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
from sessionstore.summary.extractive import EXTRACTIVE_MARKER, MAX_SUMMARY_TOKENS, summarize_extractive
from sessionstore.summary.skeleton import section_body, validate_summary

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


# --- issue 11, "What goes wrong today": one test each ---------------------------------------------


def _turns(*texts: str) -> list:
    out: list = []
    for n, text in enumerate(texts):
        out += [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(f"noted {n}")])]
    return out


def test_a_number_stays_with_its_rule() -> None:
    text = summarize_extractive(_turns("Budget cap is $500 total. Never exceed without explicit approval."))
    assert "- Budget cap is $500 total. Never exceed without explicit approval." in text


def test_no_split_inside_numbers_and_paths() -> None:
    text = summarize_extractive(_turns("Only Python 3.11. Always read .../tasks/workflow.xml first."))
    constraints = section_body(text, "## Constraints & Preferences")
    assert "- Only Python 3.11." in constraints
    assert "- Always read .../tasks/workflow.xml first." in constraints


def test_third_person_and_plain_phrasing_survive() -> None:
    text = summarize_extractive(
        _turns("The user prefers terse answers.", "use metric, not imperial", "Reply in bullet points only")
    )
    constraints = section_body(text, "## Constraints & Preferences")
    for rule in (
        "The user prefers terse answers.",
        "use metric, not imperial",
        "Reply in bullet points only",
    ):
        assert f"- {rule}" in constraints


def test_a_correction_beats_the_stale_value() -> None:
    text = summarize_extractive(
        _turns("Ship it: the deadline 2027-03-25 is firm.", "The deadline is 2027-01-22 and does not move.")
    )
    current = [line for line in text.splitlines() if "2027-03-25" in line]
    assert current and all(line.startswith("- Superseded (no longer current): ") for line in current)
    assert "- The deadline is 2027-01-22 and does not move." in section_body(
        text, "## Constraints & Preferences"
    )


def test_plain_facts_have_a_section() -> None:
    text = summarize_extractive(
        _turns("The production database is Postgres 15. The on-call owner is Priya Raman.")
    )
    context = section_body(text, "## Critical Context")
    assert (
        "- The production database is Postgres 15." in context
        and "- The on-call owner is Priya Raman." in context
    )


def test_recompaction_keeps_in_progress_and_sums_counts() -> None:
    first = summarize_extractive(
        _turns("Migrate the billing service to Postgres 15.", "Start with the invoices table.")
    )
    assert "extracted from 4 messages" in first
    later = [
        ModelRequest(parts=[CompactionPart(content=first)]),
        *_turns("Also keep the audit log under 2 GB."),
    ]
    merged = summarize_extractive(later)
    assert "extracted from 6 messages" in merged  # 4 before the first compaction, 2 since
    progress = section_body(merged, "### In Progress")
    assert "Start with the invoices table." in progress and "Migrate the billing service" in progress
    assert "Also keep the audit log under 2 GB." in section_body(merged, "## Constraints & Preferences")
    again = summarize_extractive([ModelRequest(parts=[CompactionPart(content=merged)]), *_turns("ok")])
    assert section_body(again, "### In Progress") == progress  # carried, not duplicated


def test_superseded_items_are_dropped_on_recompaction() -> None:
    first = summarize_extractive(
        _turns("The deadline is 2027-03-25.", "Correction: the deadline is 2027-01-22.")
    )
    assert "Superseded" in first
    merged = summarize_extractive(
        [ModelRequest(parts=[CompactionPart(content=first)]), *_turns("go on then")]
    )
    assert "2027-03-25" not in merged and "2027-01-22" in merged


def test_no_double_bullets_and_no_ack_requests() -> None:
    text = summarize_extractive(_turns("- Used the cache\n- Then the db", "fix the flaky upload test", "p"))
    assert "- - " not in text and "Recent user request" not in text
    assert "- p" not in text.splitlines()


def test_slashed_words_are_not_files() -> None:
    text = summarize_extractive(_turns("Compare Claude/Gemini for CI/CD. in Zone/X, then edit src/app.py"))
    files = next(line for line in section_body(text, "## Critical Context").splitlines() if "Files:" in line)
    assert files == "- Files: `src/app.py`"


def test_small_budget_keeps_the_most_important_first() -> None:
    history = _turns(
        *[f"step {i}: tidy module m{i}" for i in range(40)], "Never push to main. The owner is Ada Lovelace."
    )
    for budget in (200, 400, 1000):
        text = summarize_extractive(history, max_tokens=budget)
        assert validate_summary(text) == [] and count_text(text) <= budget
        assert "Never push to main." in text and "Ada Lovelace" in text


def test_real_claude_code_goal_is_the_users_task(realdata: Path) -> None:
    from sessionstore.formats.transcripts import read_transcript

    transcript = read_transcript(realdata / "claude_code" / "codemie_session-3fe1b6bc.jsonl")
    text = summarize_extractive([m for step in transcript.steps for m in step.messages])
    goal = section_body(text, "## Goal")
    assert "IT IS CRITICAL" not in goal and "metrics plugin for codex" in goal
    assert "Recent user request" not in text and "- - " not in text
    assert "TODO is not acceptable, implementation must be full." in section_body(
        text, "## Constraints & Preferences"
    )


def test_a_budget_below_the_bare_skeleton_terminates_with_the_minimum() -> None:
    """A long goal and a budget of a few tokens: the goal shrinks to its floor and rendering ends."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from sessionstore.summary.extractive import summarize_extractive

    history = [ModelRequest(parts=[UserPromptPart("please refactor the auth module " * 200)])]
    text = summarize_extractive(history, max_tokens=5)
    assert text.startswith("# Conversation summary") and "## Goal" in text


def _listed(text: str, label: str) -> list[str]:
    """The backticked entries of a Critical Context line starting with `label`."""
    body = section_body(text, "## Critical Context").splitlines()
    line = next((line for line in body if line.startswith(f"- {label}")), "")
    return [v for n, v in enumerate(line.split("`")) if n % 2]


def test_files_from_a_superseded_fact_are_not_listed_as_current() -> None:
    """A path the user corrected, renamed or moved, or said to stop touching, is listed only as superseded."""
    history = [
        *_turns("The config file is config/old.toml.", "Fix the parser in src/utils.py and src/legacy.py."),
        ModelResponse(parts=[ToolCallPart("edit", {"file_path": "src/legacy.py"}, tool_call_id="e1")]),
        ModelRequest(parts=[ToolReturnPart("edit", "ok", tool_call_id="e1")]),
        *_turns(
            "Correction: the config file is config/new.toml.",
            "I renamed src/utils.py to src/helpers.py.",
            "Stop touching `src/legacy.py`, edit src/parser.py instead.",
            "Use docs/guide.md instead of docs/old_guide.md.",
        ),
    ]
    text = summarize_extractive(history)
    files = _listed(text, "Files: ")
    for old in ("config/old.toml", "src/utils.py", "src/legacy.py", "docs/old_guide.md"):
        assert old not in files, (old, files)
        assert old not in _listed(text, "Identifiers: ")
    assert files == ["config/new.toml", "src/helpers.py", "src/parser.py", "docs/guide.md"]
    superseded = _listed(text, "Superseded (no longer current): files ")
    assert superseded == ["config/old.toml", "src/utils.py", "src/legacy.py", "docs/old_guide.md"]
    assert "Stop touching `src/legacy.py`, edit src/parser.py instead." in section_body(
        text, "## Constraints & Preferences"
    )  # the rule itself stays a rule


def test_a_path_the_user_takes_up_again_is_current_again() -> None:
    text = summarize_extractive(_turns("Stop editing src/a.py.", "Go back to src/a.py and finish the fix."))
    assert _listed(text, "Files: ") == ["src/a.py"]
    assert _listed(text, "Superseded (no longer current): files ") == []


def test_a_rule_about_a_file_is_not_a_superseded_file() -> None:
    text = summarize_extractive(_turns("Never touch src/vendor.py.", "Read src/vendor.py and explain it."))
    assert _listed(text, "Files: ") == ["src/vendor.py"]


def test_a_recompaction_does_not_bring_a_superseded_file_back() -> None:
    first = summarize_extractive(_turns("Edit src/utils.py.", "I moved src/utils.py to lib/utils.py."))
    assert _listed(first, "Files: ") == ["lib/utils.py"]
    merged = summarize_extractive(
        [ModelRequest(parts=[CompactionPart(content=first)]), *_turns("go on then")]
    )
    assert _listed(merged, "Files: ") == ["lib/utils.py"]
