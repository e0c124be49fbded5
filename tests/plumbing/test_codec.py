"""The blob codec: one `ModelMessagesTypeAdapter` JSON object per line, decoded in one validate call."""

from __future__ import annotations

import json

from hypothesis import given, settings
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.messages import messages, sample_turns
from sessionstore.plumbing import codec


@settings(max_examples=60, deadline=None)
@given(messages)
def test_one_message_round_trips_through_one_line(message) -> None:
    blob = codec.encode([message])
    assert codec.line_count(blob) == 1 and blob.endswith(b"\n")
    assert codec.decode([blob]) == [message]
    assert json.loads(blob) == ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]


def test_blobs_concatenate_into_one_history() -> None:
    turns = sample_turns()
    blobs = [codec.encode(t) for t in turns]
    assert [codec.line_count(b) for b in blobs] == [len(t) for t in turns]
    assert codec.decode(blobs) == [m for t in turns for m in t]
    assert codec.decode([]) == [] and codec.decode([b""]) == []
    assert codec.decode([blobs[0].rstrip(b"\n"), b"", blobs[1]]) == turns[0] + turns[1]


def test_decode_validates_each_blob_in_one_call(monkeypatch) -> None:
    calls = []
    real = codec.adapter()

    class Spy:
        def validate_json(self, data: bytes):
            calls.append(bytes(data))
            return real.validate_json(data)

    blobs = [codec.encode(t) for t in sample_turns()]
    monkeypatch.setattr(codec, "adapter", lambda: Spy())
    codec.decode(iter(blobs))  # any iterable, consumed once
    assert len(calls) == len(blobs)
    assert all(c.startswith(b"[{") and c.endswith(b"}]") and b"\n" not in c for c in calls)


def test_newlines_inside_content_stay_escaped() -> None:
    message = ModelRequest(parts=[UserPromptPart("line one\nline two\r\n\u2028")])
    blob = codec.encode([message])
    assert codec.line_count(blob) == 1
    assert codec.decode([blob]) == [message]


def test_integers_beyond_64_bits_are_stored() -> None:
    big = [
        ModelResponse(parts=[ToolCallPart("f", {"n": 2**70, "neg": -(2**80)}, tool_call_id="c")]),
        ModelRequest(parts=[ToolReturnPart("f", {"n": 2**100, "s": "é\n"}, tool_call_id="c")]),
    ]
    blob = codec.encode(big)
    assert codec.line_count(blob) == 2
    assert codec.decode([blob]) == big


def test_warm_up_builds_the_message_serializers_once() -> None:
    """In a fresh process the adapter is deferred (pydantic builds it on first use); warm_up builds it."""
    import subprocess
    import sys

    code = (
        "from pydantic_ai.messages import ModelMessagesTypeAdapter\n"
        "from sessionstore.plumbing import codec\n"
        "assert not ModelMessagesTypeAdapter.pydantic_complete  # deferred by pydantic-ai\n"
        "codec.warm_up()\n"
        "assert type(codec.adapter().serializer).__name__ == 'SchemaSerializer'\n"
        "assert type(codec.adapter().validator).__name__ == 'SchemaValidator'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
