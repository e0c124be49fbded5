"""Checks shared by the transcript import tests: tool pairing, serialization and export round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)

from helpers.realdata import REALDATA
from sessionstore.formats.transcripts import ImportedTranscript, export_pydantic_ai, read_transcript

# No module-level skip: without ../shared only the tests that read these files skip (conftest.py turns
# their missing-file error into a skip with the reason), the synthetic ones in the same modules run.
CODEMIE = REALDATA / "claude_code" / "codemie_session-3fe1b6bc.jsonl"
SPOTTER = REALDATA / "claude_code" / "spotter_tool_heavy.jsonl"
CODEX = next(iter(sorted((REALDATA / "codex").glob("rollout-*.jsonl"))), REALDATA / "codex" / "rollout.jsonl")


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def insert_compaction(
    lines: list[dict[str, Any]], after: int, summary: str, metadata: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Insert compact_boundary + isCompactSummary after line `after` (1-based), as Claude Code does
    (`metadata`: the boundary's compactMetadata; default an older version's trigger and preTokens)."""
    prev = lines[after - 1]
    stamp = prev.get("timestamp", "2026-01-02T15:00:00.000Z")
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": prev.get("uuid"),
        "isSidechain": False,
        "userType": "external",
        "cwd": prev.get("cwd"),
        "sessionId": prev.get("sessionId"),
        "version": prev.get("version"),
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": stamp,
        "uuid": "c0ffee00-0000-4000-8000-000000000001",
        "level": "info",
        "compactMetadata": metadata or {"trigger": "manual", "preTokens": 130416},
    }
    summary_line = {
        "parentUuid": boundary["uuid"],
        "isSidechain": False,
        "userType": "external",
        "cwd": prev.get("cwd"),
        "sessionId": prev.get("sessionId"),
        "version": prev.get("version"),
        "type": "user",
        "message": {"role": "user", "content": summary},
        "isVisibleInTranscriptOnly": True,
        "isCompactSummary": True,
        "uuid": "c0ffee00-0000-4000-8000-000000000002",
        "timestamp": stamp,
    }
    return [*lines[:after], boundary, summary_line, *lines[after:]]


def flat(transcript: ImportedTranscript) -> list[ModelMessage]:
    """Every message of every step, in order."""
    return [m for step in transcript.steps for m in step.messages]


def calls_of(messages: list[ModelMessage]) -> list[ToolCallPart]:
    return [
        p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)
    ]


def returns_of(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]


def assert_pairs(messages: list[ModelMessage]) -> None:
    """Every call has exactly one return after it, every return exactly one call before it."""
    seen_calls: dict[str, int] = {}
    returned: set[str] = set()
    for index, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                assert part.tool_call_id not in seen_calls, f"call id reused: {part.tool_call_id}"
                seen_calls[part.tool_call_id] = index
            elif isinstance(part, ToolReturnPart):
                assert part.tool_call_id in seen_calls, f"return without a call: {part.tool_call_id}"
                assert seen_calls[part.tool_call_id] < index, "return not after its call"
                assert part.tool_call_id not in returned, f"second return for {part.tool_call_id}"
                returned.add(part.tool_call_id)
    assert returned == set(seen_calls), f"calls without a return: {set(seen_calls) - returned}"


def assert_serializable(messages: list[ModelMessage]) -> None:
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages)) == messages


def assert_export_roundtrip(transcript: ImportedTranscript, tmp_path: Path) -> ImportedTranscript:
    """Export the messages, re-import them: same messages, same step kinds and boundaries."""
    out = tmp_path / "exported.json"
    out.write_bytes(export_pydantic_ai(flat(transcript)))
    again = read_transcript(out)
    assert again.format == "pydantic-ai"
    assert flat(again) == flat(transcript)
    assert [(s.kind, len(s.messages)) for s in again.steps] == [
        (s.kind, len(s.messages)) for s in transcript.steps
    ]
    assert [s.usage for s in again.steps] == [s.usage for s in transcript.steps]
    return again


AGENTS_MD = REALDATA / "memory" / "codemie-code_AGENTS.md"
PERMISSIONS = (
    "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. "
    "`sandbox_mode` is `workspace-write`: The sandbox permits reading files, and editing files in `cwd` "
    "and `writable_roots`.\nNetwork access is restricted.\nApprovals are your mechanism to get user "
    "consent to run shell commands without the sandbox. `approval_policy` is `on-request`.\n"
    "</permissions instructions>"
)


def codex_as_the_cli_writes_it(path: Path, cwd: str) -> list[dict[str, Any]]:
    """The lines of the Codex rollout at `path` as the Codex CLI writes a session: before the first
    request, the developer message with its sandbox rules, a user message with the project's AGENTS.md
    (a real one) and one with `<environment_context>`; each prompt as a user `message` item too."""
    lines = raw_lines(path)
    stamp = lines[0].get("timestamp", "2026-05-11T10:28:45.482Z")

    def message(role: str, text: str, when: str = stamp) -> dict[str, Any]:
        content = [{"type": "input_text", "text": text}]
        return {"timestamp": when, "type": "response_item",
                "payload": {"type": "message", "role": role, "content": content}}  # fmt: skip

    agents = f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{AGENTS_MD.read_text()}</INSTRUCTIONS>"
    environment = (
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
        "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
        "  <shell>zsh</shell>\n</environment_context>"
    )
    out = [lines[0], message("developer", PERMISSIONS), message("user", agents), message("user", environment)]
    for line in lines[1:]:
        payload = line.get("payload") or {}
        if line.get("type") == "event_msg" and payload.get("type") == "user_message":
            out.append(message("user", payload["message"], line.get("timestamp", stamp)))
        out.append(line)
    return out
