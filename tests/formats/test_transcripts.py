"""Format detection, clear errors, turn splitting, tool-pair repair and pydantic-ai round trips."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
    BinaryContent,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from helpers.transcript_checks import (
    CODEMIE,
    CODEX,
    REALDATA,
    SPOTTER,
    assert_pairs,
    assert_serializable,
    flat,
)
from sessionstore.errors import ImportFormatError
from sessionstore.formats.transcripts import (
    detect_format,
    export_pydantic_ai,
    read_transcript,
    repair_tool_pairs,
    split_steps,
    starts_turn,
    suggest_name,
)

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


@pytest.mark.parametrize(
    ("path", "expected"),
    [(CODEMIE, "claude-code"), (SPOTTER, "claude-code"), (CODEX, "codex")],
    ids=["codemie", "spotter", "codex"],
)
def test_detects_real_formats(path: Path, expected: str, tmp_path: Path) -> None:
    assert detect_format(path) == expected
    exported = tmp_path / "e.json"
    exported.write_bytes(export_pydantic_ai(flat(read_transcript(path))))
    assert detect_format(exported) == "pydantic-ai"


def _error(path: Path, **kwargs: str) -> str:
    with pytest.raises(ImportFormatError) as info:
        read_transcript(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_clear_errors_for_bad_files(tmp_path: Path) -> None:
    cases = {
        "binary.jsonl": (b'{"type": "user"}\n\xff\xfe\x00garbage\n', "line 2: not UTF-8"),
        "empty.jsonl": (b"", "empty"),
        "blank.json": (b"  \n\n", "empty"),
        "object.json": (b'{\n  "messages": []\n}\n', "line 1"),
        "other.jsonl": (b'{"role": "user", "content": "hi"}\n', "--format"),
        "scalars.jsonl": (
            b'{"type": "user", "message": {"content": "hi"}}\n42\n',
            "line 2: expected a JSON object",
        ),
        "bad_messages.json": (b'[{"kind": "request", "parts": [{"part_kind": "nope"}]}]', "message 0"),
        "cut_list.json": (b'[{"kind": "request", "parts": [', "not valid JSON"),
        "missing.json": (None, "no such file"),
    }
    for name, (data, expected) in cases.items():
        path = tmp_path / name
        if data is not None:
            path.write_bytes(data)
        assert expected in _error(path), name
    assert "is a directory" in _error(tmp_path)
    assert "unknown import format" in _error(CODEX, format="yaml")


def test_a_non_string_type_field_is_a_format_error_not_a_crash(tmp_path: Path) -> None:
    # A list "type" once reached a set lookup while sniffing and escaped as TypeError (unhashable).
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"type": [1], "payload": {}}\n{"type": {"a": 1}}\n')
    assert "not a known transcript format" in _error(path)


def test_taubench_openai_chat_list_is_refused() -> None:
    message = _error(REALDATA / "trajectories" / "taubench_gpt-4o-airline.json")
    assert "not pydantic-ai messages" in message
    assert "item 0 is an object with keys task_id, reward, info, traj" in message  # says what it is
    assert "supported: pydantic-ai JSON, Claude Code or Codex JSONL" in message and "\n" not in message


def test_the_first_item_that_is_not_a_message_is_named(tmp_path: Path) -> None:
    path = tmp_path / "mixed.json"
    path.write_text('[{"kind": "request", "parts": []}, {"kind": "tool"}, 3]')
    assert "item 1 is kind 'tool', not kind request/response" in _error(path)
    path.write_text("[[]]")
    assert "item 0 is a JSON list" in _error(path)


def test_truncated_last_line_names_the_line(tmp_path: Path) -> None:
    data = SPOTTER.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) - 200])
    lines = cut.read_bytes().count(b"\n") + 1
    message = _error(cut)
    assert f"line {lines}: Claude Code line is cut off" in message and "remove that line" in message


def test_explicit_wrong_format_suggests_the_right_one() -> None:
    assert "--format codex" in _error(CODEX, format="claude-code")
    assert "--format claude-code" in _error(CODEMIE, format="codex")


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


text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40) | st.sampled_from(["", "x" * 5000])
stamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))


@st.composite
def histories(draw: st.DrawFn) -> list[ModelMessage]:
    """Arbitrary histories: every common part kind, tool pairs, failed returns, binary, compactions."""
    messages: list[ModelMessage] = []
    for turn in range(draw(st.integers(1, 5))):
        if draw(st.booleans()) and draw(st.booleans()):
            messages.append(ModelRequest(parts=[CompactionPart(content=draw(text))], timestamp=draw(stamps)))
        parts: list = [UserPromptPart(content=draw(text), timestamp=draw(stamps))]
        if draw(st.booleans()):
            parts.insert(0, SystemPromptPart(content=draw(text), timestamp=draw(stamps)))
        if draw(st.booleans()):
            image = BinaryContent.narrow_type(
                BinaryContent(data=draw(st.binary(max_size=20)), media_type="image/png")
            )
            parts.append(UserPromptPart(content=[draw(text), image], timestamp=draw(stamps)))
        messages.append(
            ModelRequest(parts=parts, timestamp=draw(stamps), instructions=draw(st.none() | text))
        )
        for step in range(draw(st.integers(0, 3))):
            ids = [f"call-{turn}-{step}-{k}" for k in range(draw(st.integers(0, 2)))]
            response_parts: list = [ThinkingPart(content=draw(text), signature=draw(st.none() | text))]
            response_parts += [TextPart(content=draw(text))]
            response_parts += [ToolCallPart("tool", {"q": draw(text)}, i) for i in ids]
            usage = RequestUsage(
                input_tokens=draw(st.integers(0, 10**6)), output_tokens=draw(st.integers(0, 10**4))
            )
            messages.append(
                ModelResponse(parts=response_parts, usage=usage, model_name="m", timestamp=draw(stamps))
            )
            if ids:
                outcome = draw(st.sampled_from(["success", "failed"]))
                rets = [
                    ToolReturnPart("tool", draw(text), i, timestamp=draw(stamps), outcome=outcome)
                    for i in ids
                ]
                messages.append(ModelRequest(parts=rets, timestamp=draw(stamps)))
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=histories())
def test_pydantic_ai_export_read_round_trip(messages: list[ModelMessage], tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_bytes(export_pydantic_ai(messages))
    transcript = read_transcript(path)
    assert transcript.format == "pydantic-ai"
    assert flat(transcript) == messages
    assert_serializable(flat(transcript))
    assert_pairs(flat(transcript))
    starts = sum(
        1
        for i, m in enumerate(messages)
        if i == 0 or starts_turn(m) or isinstance(m.parts[0], CompactionPart)
    )
    assert len(transcript.steps) == starts
    for step in transcript.steps:
        head = step.messages[0]
        assert step.kind == ("compaction" if isinstance(head.parts[0], CompactionPart) else "turn")
        assert not any(starts_turn(m) for m in step.messages[1:])
