"""Token estimates: every part kind that is sent costs its content, estimates are additive."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CapabilityLoadDeltaPart,
    CompactionPart,
    FilePart,
    ImageUrl,
    InstructionBaselinePart,
    InstructionDeltaPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting import tokenizer
from sessionstore.accounting.tokens import (
    MEDIA_TOKENS,
    MESSAGE_OVERHEAD,
    PART_OVERHEAD,
    count_text,
    estimate_message,
    estimate_messages,
    estimate_part,
    estimate_total,
)

LONG = "the quick brown fox jumps over the lazy dog " * 50  # ~450 tokens
LONG_TOKENS = count_text(LONG)


def test_count_text_uses_cl100k() -> None:
    # Known cl100k_base ids for "hello world": [15339, 1917].
    assert count_text("hello world") == 2
    assert count_text("") == 0
    assert LONG_TOKENS > 400


def test_special_token_text_is_ordinary_text() -> None:
    assert count_text("<|endoftext|>") > 1  # encode() would raise; encode_ordinary counts its pieces


def test_import_is_cheap() -> None:
    code = (
        "import sys, sessionstore.accounting.tokens\n"
        "bad = [m for m in ('pydantic_ai', 'tiktoken', 'pydantic') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fallback_when_encoding_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer, "cl100k_path", lambda: "/nonexistent/cl100k_base.tiktoken")
    monkeypatch.setattr(tokenizer, "_wanted", lambda: ["tiktoken"])
    tokenizer.reset()
    try:
        with pytest.warns(RuntimeWarning, match="characters/4"):
            assert count_text("abcdefghi") == 3  # ceil(9/4)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a second call must not warn again
            assert count_text("abcd") == 1
    finally:
        monkeypatch.undo()
        tokenizer.reset()


# One row per part kind: (part, the tokens its sent text must cost). Equality pins the dispatch: a
# forgotten kind would fall through to the JSON-of-everything fallback (or to zero) and cost differently.
_RETRIED = ToolReturnPart("search", LONG, outcome="retried")
_FEEDBACK = RetryFeedbackPart(content=LONG, retry=RetryInfo(cause="model_retry"))
_JSON_ARGS = '{"query":"' + LONG + '"}'
SENT_PARTS: dict[str, tuple[object, int]] = {
    "system-prompt": (SystemPromptPart(LONG), LONG_TOKENS),
    "user-prompt text": (UserPromptPart(LONG), LONG_TOKENS),
    "user-prompt list": (UserPromptPart([LONG, CachePoint()]), LONG_TOKENS),
    "text": (TextPart(LONG), LONG_TOKENS),
    "thinking": (ThinkingPart(LONG), LONG_TOKENS),
    "tool-call dict args": (
        ToolCallPart("search", {"query": LONG}),
        count_text("search") + count_text(_JSON_ARGS),
    ),
    "tool-call str args": (ToolCallPart("search", _JSON_ARGS), count_text("search") + count_text(_JSON_ARGS)),
    "builtin-tool-call": (
        NativeToolCallPart("search", {"query": LONG}),
        count_text("search") + count_text(_JSON_ARGS),
    ),
    "tool-return str": (ToolReturnPart("search", LONG), count_text("search") + LONG_TOKENS),
    "tool-return json": (
        ToolReturnPart("search", {"hits": [LONG]}),
        count_text("search") + count_text('{"hits":["' + LONG + '"]}'),
    ),
    "builtin-tool-return": (NativeToolReturnPart("search", LONG), count_text("search") + LONG_TOKENS),
    "tool-return retried": (_RETRIED, count_text("search") + count_text(_RETRIED.model_response_str())),
    "retry-feedback": (_FEEDBACK, count_text(_FEEDBACK.model_response())),
    "compaction": (CompactionPart(content=LONG), LONG_TOKENS),
    "instruction-delta": (InstructionDeltaPart(id="agent", content=LONG), count_text("agent") + LONG_TOKENS),
}


@pytest.mark.parametrize("name", list(SENT_PARTS))
def test_each_sent_part_kind_counts_its_content(name: str) -> None:
    part, expected = SENT_PARTS[name]
    assert expected >= LONG_TOKENS
    assert estimate_part(part) == expected + PART_OVERHEAD


def test_retried_return_includes_the_feedback() -> None:
    assert LONG in _RETRIED.model_response_str()  # the error wrapper still carries the text


def test_tool_call_counts_name_too() -> None:
    short = estimate_part(ToolCallPart("f", {}))
    named = estimate_part(ToolCallPart("a_really_long_tool_name_for_testing_purposes", {}))
    assert named > short


def test_tool_call_without_args() -> None:
    assert estimate_part(ToolCallPart("f", None)) == estimate_part(ToolCallPart("f", {}))


def test_tool_availability_delta_counts_names() -> None:
    part = ToolAvailabilityDeltaPart(tools_added=[f"tool_{i}" for i in range(50)])
    assert estimate_part(part) > 50


@pytest.mark.parametrize(
    "item",
    [
        ImageUrl("https://example.com/a.png"),
        BinaryContent(b"\x89PNG....", media_type="image/png"),
    ],
)
def test_media_in_user_prompt_costs_fixed(item: object) -> None:
    part = UserPromptPart(["see", item])
    assert estimate_part(part) == count_text("see") + MEDIA_TOKENS + PART_OVERHEAD


def test_media_in_tool_return_costs_fixed() -> None:
    image = BinaryContent(b"\x89PNG....", media_type="image/png")
    with_file = estimate_part(ToolReturnPart("shot", ["done", image]))
    without = estimate_part(ToolReturnPart("shot", ["done"]))
    assert with_file - without >= MEDIA_TOKENS - 5


def test_file_part_costs_media() -> None:
    part = FilePart(BinaryContent(b"x" * 100_000, media_type="image/png"))
    assert estimate_part(part) == MEDIA_TOKENS + PART_OVERHEAD


@pytest.mark.parametrize(
    "part",
    [CapabilityLoadDeltaPart(loaded=["x" * 500]), InstructionBaselinePart(instructions=[])],
)
def test_parts_never_sent_cost_nothing(part: object) -> None:
    assert estimate_part(part) == 0


def test_unknown_kind_counted_by_json() -> None:
    class Mystery:
        part_kind = "from-the-future"

        def __init__(self) -> None:
            self.payload = LONG

    assert estimate_part(Mystery()) >= LONG_TOKENS


def test_request_instructions_are_counted() -> None:
    plain = ModelRequest(parts=[UserPromptPart("hi")])
    instructed = ModelRequest(parts=[UserPromptPart("hi")], instructions=LONG)
    assert estimate_message(instructed) - estimate_message(plain) >= LONG_TOKENS


def test_message_is_parts_plus_overhead() -> None:
    parts = [TextPart("one two"), ThinkingPart("three"), ToolCallPart("f", {"x": 1})]
    msg = ModelResponse(parts=parts)
    assert estimate_message(msg) == MESSAGE_OVERHEAD + sum(estimate_part(p) for p in parts)


def test_estimates_survive_serialization_round_trip() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart(LONG)], instructions="be brief"),
        ModelResponse(parts=[ThinkingPart("hmm"), ToolCallPart("f", {"a": [1, 2]})]),
        ModelRequest(parts=[ToolReturnPart("f", {"rows": [1, 2, 3]})]),
    ]
    loaded = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    assert estimate_messages(loaded) == estimate_messages(history)


_text = st.text(max_size=60)
_request_part = st.one_of(
    _text.map(SystemPromptPart),
    _text.map(UserPromptPart),
    st.builds(ToolReturnPart, st.just("t"), _text),
)
_response_part = st.one_of(
    _text.map(TextPart),
    _text.map(ThinkingPart),
    st.builds(ToolCallPart, st.just("t"), st.dictionaries(st.text(max_size=5), _text, max_size=3)),
)
_message = st.one_of(
    st.builds(ModelRequest, st.lists(_request_part, max_size=3), instructions=st.none() | _text),
    st.builds(ModelResponse, st.lists(_response_part, max_size=3)),
)


@hsettings(max_examples=60, deadline=None)
@given(st.lists(_message, max_size=6), st.lists(_message, max_size=6))
def test_estimates_are_additive(a: list[ModelMessage], b: list[ModelMessage]) -> None:
    assert estimate_total(a + b) == estimate_total(a) + estimate_total(b)
    assert estimate_messages(a + b) == estimate_messages(a) + estimate_messages(b)
    assert all(size >= MESSAGE_OVERHEAD for size in estimate_messages(a))


def test_integers_beyond_64_bits_are_counted_not_refused() -> None:
    from pydantic_ai.messages import ToolCallPart

    from sessionstore.accounting.tokens import estimate_part

    big = ToolCallPart(tool_name="factor", args={"n": 2**100})
    small = ToolCallPart(tool_name="factor", args={"n": 2})
    assert estimate_part(big) > estimate_part(small)


def test_tool_definitions_count_name_description_and_schema() -> None:
    from pydantic_ai.tools import ToolDefinition

    from sessionstore.accounting.tokens import PART_OVERHEAD, count_text, estimate_tool_definitions

    schema = {"type": "object", "properties": {"path": {"type": "string", "description": "file to read"}}}
    tool = ToolDefinition(
        name="read_file", description="Read a file of the repository.", parameters_json_schema=schema
    )
    bare = ToolDefinition(name="ping")
    assert estimate_tool_definitions([]) == 0
    expected = PART_OVERHEAD + count_text("read_file") + count_text("Read a file of the repository.")
    assert estimate_tool_definitions([tool]) > expected  # its schema counts too
    assert estimate_tool_definitions([tool, bare]) == estimate_tool_definitions(
        [tool]
    ) + estimate_tool_definitions([bare])
    longer = ToolDefinition(name="read_file", description="Read a file. " * 50, parameters_json_schema=schema)
    assert estimate_tool_definitions([longer]) > estimate_tool_definitions([tool]) + 100
