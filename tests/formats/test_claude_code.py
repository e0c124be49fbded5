"""Claude Code transcripts: real files convert faithfully, compaction becomes a reset step."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    INTERRUPTED_TOOL_RETURN_CONTENT,
    BinaryContent,
    CompactionPart,
    ModelRequest,
    ModelResponse,
    ThinkingPart,
    UserPromptPart,
)

from helpers.transcript_checks import (
    CODEMIE,
    SPOTTER,
    assert_export_roundtrip,
    assert_pairs,
    assert_serializable,
    calls_of,
    flat,
    insert_compaction,
    raw_lines,
    returns_of,
)
from sessionstore.errors import ImportFormatError
from sessionstore.formats.transcripts import export_pydantic_ai, read_transcript, starts_turn


def raw_blocks(path: Path, line_type: str, block_type: str) -> list[dict[str, Any]]:
    return [
        block
        for line in raw_lines(path)
        if line.get("type") == line_type and not line.get("isSidechain")
        for block in (line["message"]["content"] if isinstance(line["message"]["content"], list) else [])
        if block.get("type") == block_type
    ]


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def human_prompts(path: Path) -> list[str]:
    """The plain-string prompts a person typed (not meta, not command output)."""
    return [
        line["message"]["content"]
        for line in raw_lines(path)
        if line.get("type") == "user"
        and not line.get("isMeta")
        and isinstance(line["message"]["content"], str)
        and not line["message"]["content"].startswith("<local-command-stdout>")
    ]


@pytest.mark.parametrize("path", [CODEMIE, SPOTTER], ids=["codemie", "spotter"])
def test_real_transcript_keeps_every_tool_pair(path: Path, tmp_path: Path) -> None:
    transcript = read_transcript(path)
    messages = flat(transcript)
    raw_calls = raw_blocks(path, "assistant", "tool_use")
    raw_results = raw_blocks(path, "user", "tool_result")
    assert [c.tool_call_id for c in calls_of(messages)] == [b["id"] for b in raw_calls]
    assert [c.args for c in calls_of(messages)] == [b["input"] for b in raw_calls]
    assert sorted(r.tool_call_id for r in returns_of(messages)) == sorted(
        b["tool_use_id"] for b in raw_results
    )
    failed = sum(1 for b in raw_results if b.get("is_error") is True)
    assert sum(r.outcome == "failed" for r in returns_of(messages)) == failed
    assert_pairs(messages)
    assert_serializable(messages)
    assert_export_roundtrip(transcript, tmp_path)


def test_codemie_counts_turns_responses_and_thinking() -> None:
    transcript = read_transcript(CODEMIE)
    messages = flat(transcript)
    assert transcript.format == "claude-code"
    assert transcript.suggested_name == "3fe1b6bc-dbd0-4320-b980-4f147befa187"
    assert len(calls_of(messages)) == 76
    # Lines sharing a message.id are one response.
    raw_ids = [ln["message"]["id"] for ln in raw_lines(CODEMIE) if ln["type"] == "assistant"]
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    assert [r.provider_response_id for r in responses] == list(dict.fromkeys(raw_ids))
    models = {
        ln["message"]["id"]: ln["message"]["model"] for ln in raw_lines(CODEMIE) if ln["type"] == "assistant"
    }
    assert [r.model_name for r in responses] == [models[r.provider_response_id] for r in responses]
    assert all(r.model_name for r in responses)
    signatures = [b["signature"] for b in raw_blocks(CODEMIE, "assistant", "thinking")]
    thinking = [p for r in responses for p in r.parts if isinstance(p, ThinkingPart)]
    assert [p.signature for p in thinking] == signatures
    # One turn per typed prompt; the meta caveat and the output of /clear ride with "/clear".
    prompts = human_prompts(CODEMIE)
    assert len(prompts) == 9
    assert len(transcript.steps) == len(prompts)
    firsts = [s.messages[0] for s in transcript.steps]
    assert all(s.kind == "turn" and starts_turn(m) for s, m in zip(transcript.steps, firsts, strict=True))
    texts = [[p.content for p in m.parts if isinstance(p, UserPromptPart)] for m in firsts]
    assert texts[0][1] == prompts[0] and texts[0][0].startswith("Caveat:")
    assert [t[0] for t in texts[1:]] == prompts[1:]


def test_codemie_usage_is_the_last_line_of_each_response() -> None:
    lines = [ln for ln in raw_lines(CODEMIE) if ln["type"] == "assistant"]
    last_usage = {ln["message"]["id"]: ln["message"]["usage"] for ln in lines}
    transcript = read_transcript(CODEMIE)
    for step in transcript.steps:
        responses = [m for m in step.messages if isinstance(m, ModelResponse)]
        for r in responses:
            raw = last_usage[r.provider_response_id]
            cached = raw["cache_read_input_tokens"] + raw["cache_creation_input_tokens"]
            assert r.usage.input_tokens == raw["input_tokens"] + cached
            assert r.usage.output_tokens == raw["output_tokens"]
            assert r.usage.cache_read_tokens == raw["cache_read_input_tokens"]
        if responses:
            assert step.usage is not None
            assert step.usage["output_tokens"] == sum(r.usage.output_tokens for r in responses)
            assert step.usage["input_tokens"] == sum(r.usage.input_tokens for r in responses)


def test_caveat_after_a_plain_answer_opens_the_next_turn(tmp_path: Path) -> None:
    lines = [
        _line("user", "first"),
        _line("assistant", [{"type": "text", "text": "answer"}], message_extra={"id": "m1"}),
        _line("user", "<local-command-caveat>Caveat</local-command-caveat>", isMeta=True),
        _line("user", "<command-name>/mcp</command-name>"),
        _line("user", "<local-command-stdout>Reconnected</local-command-stdout>"),
    ]
    transcript = read_transcript(write_jsonl(tmp_path / "c.jsonl", lines))
    assert [len(s.messages) for s in transcript.steps] == [2, 1]
    second = transcript.steps[1].messages[0].parts
    assert [p.content for p in second] == [line["message"]["content"] for line in lines[2:]]


def test_spotter_interrupt_marker_and_local_command_do_not_split_a_tool_pair() -> None:
    transcript = read_transcript(SPOTTER)
    assert [s.kind for s in transcript.steps] == ["turn"] * 3
    first = transcript.steps[0].messages
    tail = first[-1]
    assert isinstance(tail, ModelRequest)
    kinds = [p.part_kind for p in tail.parts]
    assert kinds[0] == "tool-return" and "user-prompt" in kinds  # [Request interrupted by user] rides along
    assert first[0].parts[0].content == "start phoenix in background"
    assert transcript.steps[2].messages[0].parts[0].content.startswith("scrolling back in xterm.js")


SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nAnalysis: the user wants a codex metrics plugin."
)


def test_compact_boundary_becomes_a_compaction_step(tmp_path: Path) -> None:
    lines = raw_lines(CODEMIE)
    # Line 94 ends the "proceed" turn (stop_reason end_turn); line 96 is the next prompt.
    variant = write_jsonl(tmp_path / "compacted.jsonl", insert_compaction(lines, 94, SUMMARY))
    transcript = read_transcript(variant)
    kinds = [s.kind for s in transcript.steps]
    assert kinds.count("compaction") == 1
    at = kinds.index("compaction")
    step = transcript.steps[at]
    assert len(step.messages) == 1
    part = step.messages[0].parts[0]
    assert isinstance(part, CompactionPart) and part.content == SUMMARY
    assert part.metadata == {"claude_code": {"trigger": "manual", "preTokens": 130416}}
    assert step.recorded == {"by": "Claude Code", "tokens_before": 130416, "trigger": "manual"}
    assert all(s.recorded is None for s in transcript.steps if s is not step)
    assert transcript.steps[at - 1].messages[0].parts[0].content == "proceed"
    assert transcript.steps[at + 1].messages[0].parts[0].content.startswith("a - run codex exec")
    # Nothing else changed: the same tool pairs, and the summary is not a turn of its own.
    plain = read_transcript(CODEMIE)
    assert len(transcript.steps) == len(plain.steps) + 1
    assert calls_of(flat(transcript)) == calls_of(flat(plain))
    assert_pairs(flat(transcript))
    assert_serializable(flat(transcript))
    assert_export_roundtrip(transcript, tmp_path)
    # What a replay sees after the reset: the summary, then the later turns; it re-imports as such.
    replayed = [m for s in transcript.steps[at:] for m in s.messages]
    (tmp_path / "replayed.json").write_bytes(export_pydantic_ai(replayed))
    again = read_transcript(tmp_path / "replayed.json")
    assert [s.kind for s in again.steps] == kinds[at:]


def test_mid_turn_compaction_keeps_following_messages_in_the_compaction_step(tmp_path: Path) -> None:
    lines = raw_lines(CODEMIE)
    # After line 100 (a tool result), Claude Code auto-compacts and the assistant carries on.
    variant = write_jsonl(tmp_path / "auto.jsonl", insert_compaction(lines, 100, SUMMARY))
    transcript = read_transcript(variant)
    step = next(s for s in transcript.steps if s.kind == "compaction")
    assert isinstance(step.messages[0].parts[0], CompactionPart)
    assert len(step.messages) > 1 and isinstance(step.messages[1], ModelResponse)
    assert not any(starts_turn(m) for m in step.messages[1:])
    assert_pairs(flat(transcript))


def test_call_cut_off_by_the_end_gets_an_interrupted_return(tmp_path: Path) -> None:
    lines = raw_lines(CODEMIE)[:90]  # line 90 is a tool_use whose result (line 92) never came
    transcript = read_transcript(write_jsonl(tmp_path / "cut.jsonl", lines))
    messages = flat(transcript)
    assert_pairs(messages)
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    ret = last.parts[-1]
    assert ret.outcome == "interrupted" and ret.content == INTERRUPTED_TOOL_RETURN_CONTENT
    assert ret.tool_call_id == lines[89]["message"]["content"][0]["id"]
    assert_serializable(messages)


def test_result_without_its_call_is_dropped(tmp_path: Path) -> None:
    lines = raw_lines(CODEMIE)
    call_id = lines[89]["message"]["content"][0]["id"]
    del lines[89]
    transcript = read_transcript(write_jsonl(tmp_path / "orphan.jsonl", lines))
    messages = flat(transcript)
    assert call_id not in {r.tool_call_id for r in returns_of(messages)}
    assert len(returns_of(messages)) == 75
    assert_pairs(messages)


def _line(kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message = {"role": kind, "content": content, **extra.pop("message_extra", {})}
    return {"type": kind, "message": message, "timestamp": "2026-03-01T10:00:00Z", "sessionId": "s", **extra}


def test_blocks_images_errors_sidechains_and_synthetic_lines(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }
    lines = [
        {"type": "summary", "summary": "A title", "leafUuid": "x"},
        _line("user", [{"type": "text", "text": "look at this"}, image]),
        _line("user", "side question", isSidechain=True),
        _line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            message_extra={"id": "m1", "model": "claude-x"},
        ),
        _line(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ],
        ),
        _line(
            "assistant",
            [{"type": "text", "text": "No response requested."}],
            message_extra={"id": "m9", "model": "<synthetic>"},
        ),
        _line(
            "assistant",
            [{"type": "redacted_thinking", "data": "opaque"}, {"type": "text", "text": "done"}],
            message_extra={"id": "m2", "model": "claude-x", "stop_reason": "end_turn"},
        ),
    ]
    transcript = read_transcript(write_jsonl(tmp_path / "blocks.jsonl", lines), format="claude-code")
    messages = flat(transcript)
    assert len(transcript.steps) == 1 and len(messages) == 4
    prompt = messages[0].parts[0]
    assert prompt.content[0] == "look at this" and isinstance(prompt.content[1], BinaryContent)
    assert prompt.content[1].data == png
    ret = messages[2].parts[0]
    assert ret.outcome == "failed" and ret.content == "a\nb" and ret.tool_name == "Bash"
    final = messages[3]
    assert isinstance(final, ModelResponse) and final.finish_reason == "stop"
    assert final.parts[0].signature == "opaque" and final.parts[1].content == "done"
    assert_serializable(messages)


@st.composite
def claude_sessions(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], int]:
    """Random Claude Code transcripts: responses split over lines, results in any order, some lost."""
    text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
    lines: list[dict[str, Any]] = []
    prompts: list[str] = []
    calls = 0
    for turn in range(draw(st.integers(1, 4))):
        prompt = f"prompt {turn}: " + draw(text)
        prompts.append(prompt)
        if turn and draw(st.booleans()):
            lines.append(_line("user", [{"type": "text", "text": "[Request interrupted by user]"}]))
        if draw(st.booleans()):
            lines.append(_line("user", "<local-command-caveat>Caveat</local-command-caveat>", isMeta=True))
        lines.append(_line("user", prompt))
        for resp in range(draw(st.integers(0, 3))):
            msg = {"id": f"msg_{turn}_{resp}", "model": "claude-x"}
            ids = [f"toolu_{turn}_{resp}_{k}" for k in range(draw(st.integers(0, 3)))]
            blocks = [{"type": "text", "text": draw(text)}] + [
                {"type": "tool_use", "id": i, "name": "Read", "input": {"p": draw(text)}} for i in ids
            ]
            for block in blocks:
                lines.append(_line("assistant", [block], message_extra=msg))
            calls += len(ids)
            answered = draw(st.permutations(ids))[: draw(st.integers(0, len(ids)))]
            for i in answered:
                lines.append(
                    _line("user", [{"type": "tool_result", "tool_use_id": i, "content": draw(text)}])
                )
    return lines, prompts, calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=claude_sessions())
def test_random_sessions_keep_pairs_turns_and_round_trip(session: Any, tmp_path: Path) -> None:
    lines, prompts, calls = session
    transcript = read_transcript(write_jsonl(tmp_path / "s.jsonl", lines))
    messages = flat(transcript)
    assert len(calls_of(messages)) == calls
    assert_pairs(messages)
    firsts = [s.messages[0] for s in transcript.steps]
    assert all(starts_turn(m) for m in firsts) and len(firsts) == len(prompts)
    for first, typed in zip(firsts, prompts, strict=True):  # injected text may share the prompt's request
        assert typed in [p.content for p in first.parts if isinstance(p, UserPromptPart)]
    assert_serializable(messages)
    assert_export_roundtrip(transcript, tmp_path)


def _call(call_id: Any, name: Any, msg: str) -> dict[str, Any]:
    block = {"type": "tool_use", "input": {"n": msg}}
    block |= {k: v for k, v in (("id", call_id), ("name", name)) if v is not ...}
    return _line("assistant", [block], message_extra={"id": msg, "model": "claude-x"})


def _result(call_id: Any, text: str) -> dict[str, Any]:
    block = {"type": "tool_result", "content": text}
    if call_id is not ...:
        block["tool_use_id"] = call_id
    return _line("user", [block])


def test_reused_tool_call_ids_keep_every_call_with_its_own_return(tmp_path: Path) -> None:
    lines = [_line("user", "go")]
    for i in range(3):  # Claude Code resumed twice: the same id three times, each answered in turn
        lines += [_call("toolu_same", "Bash", f"m{i}"), _result("toolu_same", f"out {i}")]
    messages = flat(read_transcript(write_jsonl(tmp_path / "dup.jsonl", lines)))
    calls, rets = calls_of(messages), returns_of(messages)
    assert [c.tool_call_id for c in calls] == ["toolu_same", "toolu_same~2", "toolu_same~3"]
    assert [(r.tool_call_id, r.content) for r in rets] == [
        ("toolu_same", "out 0"), ("toolu_same~2", "out 1"), ("toolu_same~3", "out 2"),
    ]  # fmt: skip
    assert [c.args for c in calls] == [{"n": f"m{i}"} for i in range(3)]
    assert_pairs(messages)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (_call(..., "Bash", "m1"), "a tool_use block without an id"),
        (_call("t1", ..., "m1"), "a tool_use block without a name"),
        (_call(None, None, "m1"), "a tool_use block without an id and a name"),
        (_result(None, "x"), "a tool_result block without a tool_use_id"),
        (_result(..., "x"), "a tool_result block without a tool_use_id"),
    ],
)
def test_malformed_tool_blocks_are_refused_naming_the_line(tmp_path: Path, bad: dict, words: str) -> None:
    lines = [_line("user", "go"), _call("t0", "Bash", "m0"), _result("t0", "ok"), bad]
    with pytest.raises(ImportFormatError, match=rf"bad.jsonl: line 4: {words}") as err:
        read_transcript(write_jsonl(tmp_path / "bad.jsonl", lines))
    assert "\n" not in str(err.value)
