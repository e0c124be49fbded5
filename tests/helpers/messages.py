"""Message builders shared by the tests and their child processes (hypothesis strategies and tagged turns).

A tagged turn's text names its writer and index (`w<writer>:<i>:<j>`), so a test can check that every
turn a process appended replays contiguous and in order, whoever else wrote in between.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from hypothesis import strategies as st
from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def tagged_turn(writer: int, index: int, size: int = 2) -> list[ModelMessage]:
    """A user prompt and `size - 1` responses, each text naming (writer, index, position)."""
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(f"w{writer}:{index}:0", timestamp=T0)])]
    out += [ModelResponse(parts=[TextPart(f"w{writer}:{index}:{j}")], timestamp=T0) for j in range(1, size)]
    return out


def tag_of(message: ModelMessage) -> tuple[int, int, int]:
    """(writer, index, position) of a message built by `tagged_turn`."""
    part = message.parts[0]
    text = part.content
    assert isinstance(text, str), part
    w, i, j = text.split(":")
    return int(w[1:]), int(i), int(j)


def sample_turns() -> list[list[ModelMessage]]:
    """Three fixed turns covering every part kind the store must carry."""
    return [
        [
            ModelRequest(
                parts=[
                    SystemPromptPart("You are terse.", timestamp=T0),
                    UserPromptPart(
                        ["look at this", BinaryContent(b"%PDF\x00\xff", media_type="application/pdf")],
                        timestamp=T0,
                    ),
                ]
            ),
            ModelResponse(
                parts=[
                    ThinkingPart("hmm"),
                    ToolCallPart("read", {"path": "a.py"}, tool_call_id="c1"),
                    ToolCallPart("grep", '{"q": "x"}', tool_call_id="c2"),
                ],
                timestamp=T0,
            ),
        ],
        [
            ModelRequest(
                parts=[
                    ToolReturnPart("read", {"lines": ["é", "漢字", "🙂"]}, tool_call_id="c1", timestamp=T0),
                    ToolReturnPart(
                        "grep",
                        "bad query",
                        tool_call_id="c2",
                        outcome="retried",
                        retry=RetryInfo("model_retry"),
                        timestamp=T0,
                    ),
                ]
            ),
            ModelResponse(parts=[TextPart("done")], timestamp=T0),
        ],
        [
            ModelRequest(parts=[CompactionPart(content="summary so far")]),
            ModelRequest(parts=[RetryFeedbackPart("no output", retry=RetryInfo("no_output"), timestamp=T0)]),
            ModelResponse(parts=[TextPart("")], timestamp=T0),
        ],
    ]


# -- hypothesis strategies ----------------------------------------------------------------------------

# Any printable or odd code point except surrogates (not encodable as UTF-8, so not JSON text).
texts = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(["", "\x00", "\u2028\u2029", '\n\r\t"\\', "🙂" * 50, "large body of text, " * 4000]),
)
stamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**100), 2**100)  # beyond 64 bits too: orjson refuses them, both writers fall back
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=10,
)
ids = st.text("abcdef0123456789_-", min_size=1, max_size=12)
binaries = st.builds(
    BinaryContent,
    st.binary(max_size=64),
    media_type=st.sampled_from(["application/pdf", "text/plain", "application/octet-stream"]),
)

request_parts = st.one_of(
    st.builds(SystemPromptPart, texts, timestamp=stamps),
    st.builds(UserPromptPart, texts | st.lists(texts | binaries, max_size=3), timestamp=stamps),
    st.builds(ToolReturnPart, texts, json_values, tool_call_id=ids, timestamp=stamps),
    st.builds(
        ToolReturnPart,
        texts,
        texts,
        tool_call_id=ids,
        outcome=st.just("retried"),
        retry=st.builds(RetryInfo, st.sampled_from(["validation_error", "model_retry", "unknown_tool"])),
        timestamp=stamps,
    ),
    st.builds(
        RetryFeedbackPart,
        texts,
        retry=st.builds(RetryInfo, st.sampled_from(["validation_error", "no_output", "model_retry"])),
        timestamp=stamps,
    ),
    st.builds(CompactionPart, texts | st.none()),
)
response_parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ThinkingPart, texts),
    st.builds(ToolCallPart, texts, st.dictionaries(texts, json_values, max_size=4), tool_call_id=ids),
    st.builds(ToolCallPart, texts, texts, tool_call_id=ids),
)
messages = st.one_of(
    st.builds(ModelRequest, st.lists(request_parts, max_size=4), timestamp=stamps | st.none()),
    st.builds(ModelResponse, st.lists(response_parts, max_size=4), timestamp=stamps),
)


@st.composite
def turn_splits(draw: st.DrawFn, max_messages: int = 12) -> list[list[ModelMessage]]:
    """A message sequence cut into non-empty turns at arbitrary points."""
    seq = draw(st.lists(messages, min_size=1, max_size=max_messages))
    cuts = sorted(draw(st.sets(st.integers(1, len(seq) - 1), max_size=len(seq) - 1))) if len(seq) > 1 else []
    bounds = [0, *cuts, len(seq)]
    return [seq[a:b] for a, b in itertools.pairwise(bounds)]
