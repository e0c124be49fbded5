"""`## Rules found in files`: instruction lines of what the agent read, quoted with their file."""

from __future__ import annotations

from pathlib import Path

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
