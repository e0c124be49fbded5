"""The pydantic-ai format: whatever a history holds, export then import gives it back equal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
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

from helpers.transcript_checks import assert_pairs, assert_serializable, flat
from sessionstore.formats.pydantic_ai import export_pydantic_ai
from sessionstore.formats.transcripts import read_transcript, starts_turn

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
