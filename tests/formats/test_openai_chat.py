"""formats/openai_chat.py: OpenAI chat-completions messages (and tau-bench records) as pydantic-ai turns."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, ToolCallPart, ToolReturnPart

from sessionstore.errors import ImportFormatError
from sessionstore.formats.openai_chat import read_openai_chat, to_messages
from sessionstore.formats.registry import detect_format

TAU = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "realdata"
    / "trajectories"
    / "taubench_gpt-4o-airline.json"
)

CHAT = [
    {"role": "system", "content": "You are an airline agent."},
    {"role": "user", "content": "Book me a flight."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"to":"SEA"}'}},
            {"id": "c2", "type": "function", "function": {"name": "price", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "HAT136"},
    {"role": "tool", "tool_call_id": "c2", "content": "$120"},
    {"role": "assistant", "content": "HAT136 for $120?"},
    {
        "role": "user",
        "content": [{"type": "text", "text": "yes"}, {"type": "image_url", "image_url": {"url": "u"}}],
    },
    {"role": "assistant", "content": "Booked."},
]


def test_roles_tool_calls_and_returns_map_to_pydantic_ai_parts() -> None:
    messages = to_messages(CHAT)
    assert [m.kind for m in messages] == ["request", "response", "request", "response", "request", "response"]
    first = messages[0]
    assert isinstance(first, ModelRequest) and isinstance(first.parts[0], SystemPromptPart)
    calls = messages[1].parts
    assert [(c.tool_name, c.args, c.tool_call_id) for c in calls if isinstance(c, ToolCallPart)] == [
        ("find", '{"to":"SEA"}', "c1"),
        ("price", "{}", "c2"),
    ]
    returns = messages[2].parts
    assert [(r.tool_name, r.content) for r in returns if isinstance(r, ToolReturnPart)] == [
        ("find", "HAT136"),
        ("price", "$120"),  # named from its call when the tool message has no name
    ]
    assert messages[4].parts[0].content == "yes\n[image: u]"
    assert isinstance(messages[5], ModelResponse) and messages[5].parts[0].content == "Booked."


def test_a_file_is_split_into_turns_and_tool_pairs_stay_whole(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(orjson.dumps(CHAT))
    assert detect_format(path) == "openai-chat"
    (transcript,) = read_openai_chat(path)
    assert transcript.format == "openai-chat" and transcript.suggested_name == "chat"
    assert [len(s.messages) for s in transcript.steps] == [4, 2]  # a turn per user request
    wrapped = tmp_path / "body.json"
    wrapped.write_bytes(orjson.dumps({"model": "gpt-4o", "messages": CHAT}))
    assert [len(s.messages) for s in read_openai_chat(wrapped)[0].steps] == [4, 2]


def test_an_unanswered_call_gets_the_interrupted_return(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes(orjson.dumps(CHAT[:3]))
    (transcript,) = read_openai_chat(path)
    last = transcript.steps[-1].messages[-1]
    assert isinstance(last, ModelRequest) and {p.outcome for p in last.parts} == {"interrupted"}


def test_other_json_is_refused_with_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(orjson.dumps([{"kind": "request", "parts": []}]))
    assert detect_format(path) == "pydantic-ai"
    with pytest.raises(ImportFormatError, match="not OpenAI chat messages"):
        read_openai_chat(path)


def test_the_real_tau_bench_file_is_one_transcript_per_record() -> None:
    if not TAU.exists():
        pytest.skip(f"tau-bench trajectories not found at {TAU}")
    transcripts = read_openai_chat(TAU)
    records = orjson.loads(TAU.read_bytes())
    assert len(transcripts) == len(records) == 200
    assert transcripts[0].suggested_name == "taubench_gpt-4o-airline-0"
    assert transcripts[50].suggested_name == "taubench_gpt-4o-airline-0.1"  # task 0, trial 1
    assert len({t.suggested_name for t in transcripts}) == 200  # one session each, none refused
    for transcript, record in zip(transcripts[:20], records[:20], strict=True):
        calls = sum(len(m.get("tool_calls") or []) for m in record["traj"])
        parts = [p for s in transcript.steps for m in s.messages for p in m.parts]
        assert sum(isinstance(p, ToolCallPart) for p in parts) == calls
        assert sum(isinstance(p, ToolReturnPart) for p in parts) == calls  # each call keeps its return
