"""Tier-3 shortening: parts fit their cap in a shape pydantic-ai accepts; summaries keep their headings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.tokens import count_text, estimate_message, estimate_part
from sessionstore.compaction.shrink import shrink_message, shrink_part, shrink_summary
from sessionstore.summary.skeleton import HEADINGS, validate_summary

BIG = "token " * 5000  # ~5,000 tokens

PARTS = [
    SystemPromptPart(BIG),
    UserPromptPart(BIG),
    TextPart(BIG),
    ThinkingPart(BIG),
    ToolCallPart("bash", {"command": BIG}, tool_call_id="1"),
    ToolCallPart("bash", '{"command": "' + BIG + '"}', tool_call_id="2"),
    ToolReturnPart("bash", {"out": BIG}, tool_call_id="1"),
    RetryFeedbackPart(BIG, retry=RetryInfo("model_retry")),
]


@hsettings(max_examples=40, deadline=None)
@given(st.sampled_from(PARTS), st.integers(24, 2000))
def test_shrunk_parts_fit_and_round_trip(part: object, cap: int) -> None:
    out = shrink_part(part, cap)
    fixed = estimate_part(shrink_part(part, 0))  # framing a part keeps however short (retry wording)
    assert estimate_part(out) <= max(cap, fixed) and type(out) is type(part)
    message = (
        ModelRequest(parts=[out]) if not isinstance(out, TextPart | ThinkingPart | ToolCallPart) else None
    )
    message = message or ModelResponse(parts=[out])
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json([message]))
    if isinstance(out, ToolCallPart):
        assert isinstance(out.args, dict) and list(out.args) == ["elided_args"]


def test_small_and_native_parts_unchanged() -> None:
    small = TextPart("hi")
    assert shrink_part(small, 100) is small
    native = NativeToolReturnPart("web_search", BIG, tool_call_id="n")
    assert shrink_part(native, 100) is native


def test_shrink_message_instructions() -> None:
    msg = ModelRequest(parts=[UserPromptPart("hi")], instructions=BIG)
    out = shrink_message(msg, 100)
    assert estimate_message(out) <= 100 + 20 and out.parts == msg.parts
    tiny = ModelRequest(parts=[UserPromptPart("hi")])
    assert shrink_message(tiny, 100) is tiny


@hsettings(max_examples=40, deadline=None)
@given(st.integers(60, 3000))
def test_summary_keeps_headings(cap: int) -> None:
    summary = "\n\n".join(f"{h}\n{BIG[: 400 * (i + 1)]}" for i, h in enumerate(HEADINGS)) + "\n"
    out = shrink_summary(summary, cap)
    assert count_text(out) <= cap
    assert validate_summary(out) == []


def test_summary_without_headings_and_tiny_caps() -> None:
    assert count_text(shrink_summary(BIG, 50)) <= 50
    summary = "\n\n".join(f"{h}\n{BIG}" for h in HEADINGS)
    assert count_text(shrink_summary(summary, 5)) <= 5
    assert shrink_summary("short", 50) == "short"
