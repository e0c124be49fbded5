"""OpenAI Codex rollouts (`~/.codex/sessions/**/rollout-*.jsonl`) as pydantic-ai messages.

What is read, and why:
- `response_item` lines are the conversation as the model saw it. Consecutive model items
  (`reasoning`, `function_call`, `custom_tool_call`, assistant `message`) form one `ModelResponse`;
  consecutive input items (`function_call_output`, `custom_tool_call_output`, user/developer
  `message`) form one `ModelRequest`. `call_id` is kept as `tool_call_id`; arguments stay the JSON
  string the model wrote (as pydantic-ai's OpenAI model keeps them). A namespaced tool (MCP) is named
  `namespace + name`, which is how the model addressed it.
- `reasoning` -> ThinkingPart: the summary (or content) text, `encrypted_content` as signature,
  provider 'openai', as pydantic-ai's OpenAI Responses model stores it.
- User prompts: user `message` items when the rollout has them; a rollout without any (some clients
  and test fixtures record prompts only as events) uses `event_msg` `user_message` instead. Developer
  messages become `SystemPromptPart`s (instructions, not prompts).
- `event_msg` `token_count` gives the usage of the response just before it (`last_token_usage`;
  OpenAI's input count already includes cached tokens). `turn_context` gives the model name.
  `session_meta` gives the session id for the suggested name. Other events are UI echoes: skipped.
- `compacted` lines (Codex's own compaction) start a compaction step: the history restarts at
  `ModelRequest([*developer messages, CompactionPart(summary)])`, then the user messages and model
  items its `replacement_history` kept (the history Codex continued from). The summary is
  `message`; when that is empty (remote compaction), the replacement history's summary message (a
  user message opening with Codex's hand-off prefix); when only an encrypted `compaction` item
  carries it, a line saying so and counting what was kept. So the import writes a compaction
  commit with its checkpoint ref, and the session replays from the state Codex resumed from.
- Other item kinds (web_search_call, local_shell_call, ...) become a short `[<type> item]` text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from sessionstore.formats.common import (
    ImportedTranscript,
    as_str,
    build_transcript,
    iter_jsonl,
    parse_time,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SUMMARY_PREFIX = "Another language model started to solve this problem and produced a summary"
"""How Codex opens the summary message of a compacted history (its compact summary prefix); the
prefix ends at "...assist with your own analysis:" and the rest of that message is the summary."""
_PREFIX_END = "your own analysis:"
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def read_codex(path: Path, text: str) -> ImportedTranscript:
    """Convert a Codex rollout (already read as `text`) into steps."""
    lines = [line for _number, line in iter_jsonl(path, text, "Codex")]
    prompts_in_items = any(
        _payload(line).get("type") == "message" and _payload(line).get("role") == "user"
        for line in lines
        if line.get("type") == "response_item"
    )
    builder = _Builder()
    session_id: str | None = None
    for line in lines:
        kind, payload = line.get("type"), _payload(line)
        when = parse_time(line.get("timestamp")) or builder.last_time
        builder.last_time = when
        if kind == "session_meta":
            session_id = session_id or as_str(payload.get("id"))
        elif kind == "turn_context":
            builder.model = as_str(payload.get("model")) or builder.model
        elif kind == "compacted":
            history = payload.get("replacement_history")
            builder.compaction(
                as_str(payload.get("message")) or "", history if isinstance(history, list) else [], when
            )
        elif kind == "response_item":
            builder.item(payload, when)
        elif kind == "event_msg":
            if payload.get("type") == "user_message" and not prompts_in_items:
                builder.request_part(
                    UserPromptPart(content=as_str(payload.get("message")) or "", timestamp=when)
                )
            elif payload.get("type") == "token_count":
                builder.token_count(payload.get("info"))
    return build_transcript(path, "codex", "Codex", builder.finish(), session_id)


@dataclass
class _Builder:
    """Folds items into alternating requests and responses."""

    out: list[ModelMessage] = field(default_factory=list)
    response: list[ModelResponsePart] = field(default_factory=list)
    response_time: datetime = _EPOCH
    request: list[ModelRequestPart] = field(default_factory=list)
    request_time: datetime | None = None
    tool_names: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    last_time: datetime = _EPOCH

    def item(self, item: dict[str, Any], when: datetime) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = "\n".join(_texts(item.get("content")))
            if role == "assistant":
                self.response_part(TextPart(content=text), when)
            elif role in ("developer", "system"):
                self.request_part(SystemPromptPart(content=text, timestamp=when))
            else:
                self.request_part(UserPromptPart(content=text, timestamp=when))
        elif kind == "reasoning":
            texts = _texts(item.get("summary")) or _texts(item.get("content"))
            thinking = ThinkingPart(
                content="\n\n".join(texts),
                id=as_str(item.get("id")),
                signature=as_str(item.get("encrypted_content")),
                provider_name="openai",
            )
            self.response_part(thinking, when)
        elif kind in ("function_call", "custom_tool_call"):
            call_id = as_str(item.get("call_id")) or as_str(item.get("id")) or ""
            name = (as_str(item.get("namespace")) or "") + (as_str(item.get("name")) or "unknown")
            args = item.get("arguments") if kind == "function_call" else item.get("input")
            self.tool_names[call_id] = name
            self.response_part(ToolCallPart(tool_name=name, args=_args(args), tool_call_id=call_id), when)
        elif kind in _OUTPUTS:
            call_id = as_str(item.get("call_id")) or ""
            output = item.get("output")
            content = output if isinstance(output, str) else "\n".join(_texts(output))
            name = self.tool_names.get(call_id, "unknown")
            self.request_part(
                ToolReturnPart(tool_name=name, content=content, tool_call_id=call_id, timestamp=when)
            )
        else:
            self.response_part(TextPart(content=f"[{kind} item]"), when)

    def response_part(self, part: ModelResponsePart, when: datetime) -> None:
        if self.request:
            self._flush()
        if not self.response:
            self.response_time = when
        self.response.append(part)

    def request_part(self, part: ModelRequestPart, when: datetime | None = None) -> None:
        if self.response:
            self._flush()
        if not self.request:
            self.request_time = when or getattr(part, "timestamp", None)
        self.request.append(part)

    def token_count(self, info: object) -> None:
        """Attach `last_token_usage` to the newest response, closing it so it is not overwritten."""
        usage = info.get("last_token_usage") if isinstance(info, dict) else None
        if not isinstance(usage, dict):
            return
        self._flush()
        last = self.out[-1] if self.out else None
        if not isinstance(last, ModelResponse) or last.usage.has_values():
            return
        ints = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
        last.usage = RequestUsage(
            input_tokens=ints.get("input_tokens", 0),
            cache_read_tokens=ints.get("cached_input_tokens", 0),
            output_tokens=ints.get("output_tokens", 0),
            output_reasoning_tokens=ints.get("reasoning_output_tokens", 0),
            details=ints,
        )

    def compaction(self, summary: str, history: list[Any], when: datetime) -> None:
        """Restart the history at a summary, followed by what Codex kept (`replacement_history`)."""
        self._flush()
        kept: list[ModelRequestPart] = []
        system: list[ModelRequestPart] = []
        model_items: list[dict[str, Any]] = []
        encrypted = False
        for item in history:
            if not isinstance(item, dict):
                continue
            kind, role = item.get("type"), item.get("role")
            if kind == "compaction" or kind == "compaction_summary":
                encrypted = True
            elif kind == "message" and role in ("user", "developer", "system"):
                text = "\n".join(_texts(item.get("content")))
                if role == "user" and text.startswith(SUMMARY_PREFIX):
                    summary = summary or text.split(_PREFIX_END, 1)[-1].strip()
                elif role == "user":
                    kept.append(UserPromptPart(content=text, timestamp=when))
                else:
                    system.append(SystemPromptPart(content=text, timestamp=when))
            else:
                model_items.append(item)
        if not summary.strip():
            what = "an encrypted summary" if encrypted else "no summary text"
            summary = f"[Codex compacted the history here with {what}; {len(kept)} kept messages follow]"
        # The summary request stays a pure summary request (what checkpoints and tier 3 read); the kept
        # user messages follow it as their own request, as Codex's replacement history lists them.
        self.out.append(ModelRequest(parts=[*system, CompactionPart(content=summary)], timestamp=when))
        if kept:
            self.out.append(ModelRequest(parts=kept, timestamp=when))
        for item in model_items:
            self.item(item, when)
        self._flush()

    def finish(self) -> list[ModelMessage]:
        self._flush()
        return self.out

    def _flush(self) -> None:
        if self.response:
            self.out.append(
                ModelResponse(
                    parts=self.response,
                    model_name=self.model,
                    timestamp=self.response_time,
                    provider_name="openai",
                )
            )
            self.response = []
        if self.request:
            self.out.append(ModelRequest(parts=self.request, timestamp=self.request_time))
            self.request = []


def _payload(line: dict[str, Any]) -> dict[str, Any]:
    payload = line.get("payload")
    return payload if isinstance(payload, dict) else {}


def _texts(content: object) -> list[str]:
    """The text of content items (input_text, output_text, summary_text, reasoning_text, ...)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [item["text"] for item in content if isinstance(item, dict) and isinstance(item.get("text"), str)]


def _args(raw: object) -> str | dict[str, Any] | None:
    if raw is None or isinstance(raw, str | dict):
        return raw
    return {"input": raw}
