"""The rules every format reader shares: turn splitting, tool-pair repair, suggested names."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from helpers.transcript_checks import assert_pairs
from sessionstore.formats.common import repair_tool_pairs, split_steps, starts_turn, suggest_name

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def prompt(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=T0)], timestamp=T0)


def call(*ids: str, usage: RequestUsage | None = None) -> ModelResponse:
    parts = [ToolCallPart(tool_name="Read", args={"p": i}, tool_call_id=i) for i in ids]
    return ModelResponse(parts=parts or [TextPart("ok")], usage=usage or RequestUsage(), timestamp=T0)


def returns(*ids: str) -> ModelRequest:
    parts = [ToolReturnPart(tool_name="Read", content=f"out {i}", tool_call_id=i, timestamp=T0) for i in ids]
    return ModelRequest(parts=parts, timestamp=T0)


def test_split_steps_rules() -> None:
    summary = ModelRequest(parts=[CompactionPart(content="so far")], timestamp=T0)
    carried = ModelRequest(parts=[*returns("b").parts, UserPromptPart("[interrupted]", timestamp=T0)])
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys", timestamp=T0)]),  # no prompt, but first: a turn
        call(),
        prompt("one"),
        call("a", usage=RequestUsage(input_tokens=10, output_tokens=2)),
        returns("a"),
        call("b", usage=RequestUsage(input_tokens=15, output_tokens=3)),
        carried,  # answers a call: continues the turn despite its user text
        summary,
        call(),  # kept after the summary: part of the compaction step
        prompt("two"),
    ]
    steps = split_steps(messages)
    assert [(s.kind, len(s.messages)) for s in steps] == [
        ("turn", 2),
        ("turn", 5),
        ("compaction", 2),
        ("turn", 1),
    ]
    assert [m for s in steps for m in s.messages] == messages
    assert steps[0].usage is None and steps[3].usage is None
    assert steps[1].usage is not None
    assert (steps[1].usage["input_tokens"], steps[1].usage["output_tokens"]) == (25, 5)


def test_repair_adds_interrupted_returns_and_drops_orphans() -> None:
    messages: list[ModelMessage] = [
        prompt("go"),
        call("a", "b"),
        returns("a", "zz"),  # b never answered; zz answers nothing
        returns("a"),  # a second answer for a
        call("c"),
        prompt("next"),  # c never answered: its return must not join this prompt
        call("d"),
    ]
    repaired = repair_tool_pairs(messages)
    assert_pairs(repaired)
    synthetic = [
        p for m in repaired for p in m.parts if isinstance(p, ToolReturnPart) and p.outcome == "interrupted"
    ]
    assert sorted(p.tool_call_id for p in synthetic) == ["b", "c", "d"]
    assert all(p.content == INTERRUPTED_TOOL_RETURN_CONTENT for p in synthetic)
    assert all(p.metadata == {SYNTHESIZED_TOOL_RETURN_METADATA_KEY: True} for p in synthetic)
    assert [len(s.messages) for s in split_steps(repaired)] == [5, 3]
    assert all(starts_turn(s.messages[0]) for s in split_steps(repaired))


def test_repair_closes_calls_before_a_compaction() -> None:
    summary = ModelRequest(parts=[CompactionPart(content="s")])
    repaired = repair_tool_pairs([prompt("go"), call("a"), summary, returns("a")])
    assert_pairs(repaired)
    assert repaired[2].parts[0].outcome == "interrupted"
    assert repaired[3] is summary and len(repaired) == 4  # the late answer after the summary is dropped


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_suggested_names_are_always_valid(stem: str) -> None:
    for name in (suggest_name(Path(f"{stem}.jsonl")), suggest_name(Path("x.jsonl"), stem)):
        assert NAME.fullmatch(name) and ".." not in name
