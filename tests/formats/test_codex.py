"""Codex rollouts: the real file converts faithfully; user items, usage events and compaction are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    CompactionPart,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

from helpers.transcript_checks import (
    CODEX,
    assert_export_roundtrip,
    assert_pairs,
    assert_serializable,
    calls_of,
    flat,
    returns_of,
)
from sessionstore.formats.transcripts import detect_format, read_transcript


def raw_items(path: Path, item_type: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        ln["payload"] for ln in lines if ln["type"] == "response_item" and ln["payload"]["type"] == item_type
    ]


def test_real_rollout_keeps_calls_outputs_reasoning_and_prompts(tmp_path: Path) -> None:
    assert detect_format(CODEX) == "codex"
    transcript = read_transcript(CODEX)
    messages = flat(transcript)
    assert transcript.suggested_name == "019e1695-0522-7c83-8b39-0dd379793f80"
    raw_calls = raw_items(CODEX, "function_call")
    assert len(raw_calls) == 38
    assert [c.tool_call_id for c in calls_of(messages)] == [c["call_id"] for c in raw_calls]
    assert [c.args for c in calls_of(messages)] == [c["arguments"] for c in raw_calls]
    outputs = {o["call_id"]: o["output"] for o in raw_items(CODEX, "function_call_output")}
    assert {r.tool_call_id: r.content for r in returns_of(messages)} == outputs
    assert "mcp__node_repl__js" in {c.tool_name for c in calls_of(messages)}
    reasoning = raw_items(CODEX, "reasoning")
    thinking = [
        p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ThinkingPart)
    ]
    assert [p.signature for p in thinking] == [r["encrypted_content"] for r in reasoning]
    said = [
        p.content
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, TextPart)
    ]
    assert said == [m["content"][0]["text"] for m in raw_items(CODEX, "message")]
    # The fixture records prompts only as user_message events: one turn each, text intact.
    lines = [json.loads(line) for line in CODEX.read_text().splitlines()]
    prompts = [ln["payload"]["message"] for ln in lines if ln["payload"].get("type") == "user_message"]
    assert [s.messages[0].parts[0].content for s in transcript.steps] == prompts
    assert_pairs(messages)
    assert_serializable(messages)
    assert_export_roundtrip(transcript, tmp_path)


def _item(payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": "2026-05-11T10:00:00.000Z", "type": kind, "payload": payload}


def test_user_items_usage_model_compaction_and_dangling_calls(tmp_path: Path) -> None:
    usage = {
        "input_tokens": 900,
        "cached_input_tokens": 600,
        "output_tokens": 40,
        "reasoning_output_tokens": 8,
    }
    lines = [
        _item({"id": "sess-1", "cwd": "/x"}, "session_meta"),
        _item({"model": "gpt-5-codex", "cwd": "/x"}, "turn_context"),
        _item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}),
        _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}),
        _item({"type": "user_message", "message": "fix it"}, "event_msg"),
        _item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "plan"}],
                "encrypted_content": "E",
            }
        ),
        _item(
            {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c1"}
        ),
        _item({"type": "token_count", "info": {"last_token_usage": usage}}, "event_msg"),
        _item({"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"}),
        _item({"type": "compacted", "payload": None, "message": "summary of the work"}, "compacted"),
        _item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]}),
        _item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c2"}),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    transcript = read_transcript(path)
    assert transcript.format == "codex" and transcript.suggested_name == "sess-1"
    assert [s.kind for s in transcript.steps] == ["turn", "compaction", "turn"]
    first = transcript.steps[0].messages
    assert isinstance(first[0].parts[0], SystemPromptPart)
    prompts = [p for m in first for p in m.parts if isinstance(p, UserPromptPart)]
    assert [p.content for p in prompts] == ["fix it"]  # the event echo is not a second prompt
    response = first[1]
    assert isinstance(response, ModelResponse) and response.model_name == "gpt-5-codex"
    assert response.usage.input_tokens == 900 and response.usage.cache_read_tokens == 600
    assert transcript.steps[0].usage is not None and transcript.steps[0].usage["output_tokens"] == 40
    compaction = transcript.steps[1].messages
    assert [m.parts for m in compaction] == [[CompactionPart(content="summary of the work")]]
    # "next" is a new turn after the summary; its call c2 never returned, so it is marked interrupted.
    last = transcript.steps[2].messages
    assert last[0].parts[0].content == "next"
    assert [r.outcome for r in returns_of(last)] == ["interrupted"]
    assert_pairs(flat(transcript))
    assert_serializable(flat(transcript))
    assert_export_roundtrip(transcript, tmp_path)
