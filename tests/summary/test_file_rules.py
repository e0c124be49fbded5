"""`## Rules found in files`: instruction lines of what the agent read, quoted with their file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

from sessionstore.accounting.tokens import count_text
from sessionstore.formats.transcripts import read_transcript
from sessionstore.summary.file_rules import PER_FILE, found, parse, render

CONTRIBUTING = """# Contributing

1. Install Python 3.11.
- Keep pull requests small.
- Every change has to come with a test.
Our CI runs on every push.
"""
CODE = """def f(x):
    # Never call f from the UI thread: it blocks.
    if x must_be(3): return {"must": 1}
    return x
"""


def read(path: str, content: str, n: int = 0) -> list:
    return [
        ModelResponse(parts=[ToolCallPart("Read", {"file_path": path}, tool_call_id=f"r{n}")]),
        ModelRequest(parts=[ToolReturnPart("Read", content, tool_call_id=f"r{n}")]),
    ]


def test_documents_give_modal_and_imperative_lines_code_gives_its_comments() -> None:
    rows = found([*read("CONTRIBUTING.md", CONTRIBUTING, 0), *read("src/f.py", CODE, 1)])
    assert rows == [  # "Install Python 3.11." is three words: too short to read as a rule
        ("CONTRIBUTING.md", "Keep pull requests small."),
        ("CONTRIBUTING.md", "Every change has to come with a test."),
        ("src/f.py", "Never call f from the UI thread: it blocks."),
    ]


RUNBOOK = """## Failover

Page the on-call engineer (#db-oncall) before you touch anything.
Dropping a slot while a backup runs (see backup.md) is forbidden; pause the backup first.
Never run `vacuum full` on the ledger table.
"""
SCRIPT = """// Retry.Never(conn); Backoff.Must(ms) stays
Console.WriteLine(msg); // the worker must never block here
Never call Flush() from the timer thread.
"""


def test_prose_with_an_aside_and_a_semicolon_is_a_rule_a_statement_is_not() -> None:
    """A parenthetical opening after a space and a semicolon before a space are prose; a call's
    parentheses, a statement's closing semicolon, brackets and `=` are code."""
    rows = found([*read("docs/runbook.md", RUNBOOK, 0), *read("src/Worker.cs", SCRIPT, 1)])
    assert rows == [
        (
            "docs/runbook.md",
            "Dropping a slot while a backup runs (see backup.md) is forbidden; pause the backup first.",
        ),
        ("docs/runbook.md", "Never run `vacuum full` on the ledger table."),
        ("src/Worker.cs", "Never call Flush() from the timer thread."),
    ]


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_WORD, min_size=3, max_size=8),
    st.lists(_WORD, min_size=1, max_size=3),
    st.lists(_WORD, min_size=1, max_size=6),
)
def test_an_instruction_keeps_its_asides_and_clauses(
    first: list[str], aside: list[str], clause: list[str]
) -> None:
    """Whatever words it holds, a line with an instruction word is found with a parenthetical aside
    and a second clause after a semicolon, quoted whole."""
    line = f"You must {' '.join(first)} ({' '.join(aside)}) now; {' '.join(clause)}."
    assert found(read("notes.md", f"# Notes\n\n{line}\n")) == [("notes.md", line)]


def test_what_is_not_read_or_failed_gives_nothing() -> None:
    written = [
        ModelResponse(
            parts=[
                ToolCallPart(
                    "Write", {"file_path": "a.md", "content": "You must do X now."}, tool_call_id="w"
                )
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("Write", "You must do X now.", tool_call_id="w")]),
    ]
    assert found(written) == []
    failed = read("b.md", "You must do Y always.")
    failed[1].parts[0].outcome = "failed"
    assert found(failed) == []


def test_a_reminder_inside_a_read_is_not_a_rule_and_each_file_gives_at_most_per_file() -> None:
    reminder = "<system-reminder>\nWhenever you read a file, you should consider malware.\n</system-reminder>"
    many = "\n".join(f"Rule {i}: you must do step {i} first." for i in range(20))
    rows = found([*read("a.md", "Nothing here.\n" + reminder), *read("b.md", many, 1)])
    assert [path for path, _ in rows] == ["b.md"] * PER_FILE


def test_render_keeps_the_earliest_within_the_budget_and_parses_back() -> None:
    rows = [(f"docs/f{i % 3}.md", f"You must follow rule number {i} carefully.") for i in range(40)]
    body = render(rows[:5], rows[5:], 150)
    assert count_text(body) <= 150 and body.startswith("- `docs/f0.md`:\n  - You must follow rule number 0")
    kept = parse(body)  # grouped under their file, in the order each file was first read
    assert sorted(kept) == sorted(r for r in rows if r[1] in body) and kept[0] == rows[0]
    assert [r for r in rows if r in kept] == rows[: len(kept)]  # the earliest kept
    assert render([], [], 100) == "- none"


def test_real_reads_give_no_reminder_lines(realdata: Path) -> None:
    messages = [
        m
        for s in read_transcript(realdata / "claude_code/codemie_session-3fe1b6bc.jsonl").steps
        for m in s.messages
    ]
    rows = found(messages)
    assert rows and not any("malware" in line for _, line in rows)
    assert any(
        line == "Don't overwrite OPENAI_API_BASE if it exists from another session" for _, line in rows
    )
