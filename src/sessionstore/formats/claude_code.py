"""Claude Code transcripts (`~/.claude/projects/*/<session>.jsonl`) as pydantic-ai messages.

What is read, and why (checked against real transcripts):
- `assistant` lines are model output. Claude Code writes one line per content block, all with the same
  `message.id`; lines sharing the id of the open response are merged into one `ModelResponse`, even
  when tool results were written between them (those results follow the merged response). Usage is
  cumulative across those lines, so the last line's usage is the response's. Anthropic's
  `input_tokens` excludes the cache; `RequestUsage.input_tokens` includes it, as pydantic-ai's
  Anthropic model reports it. `<synthetic>` assistant lines (Claude Code's own notices, never model
  output) are skipped.
- `user` lines: `tool_result` blocks become `ToolReturnPart`s (`is_error` -> `outcome='failed'`).
  A human prompt (plain text from the person, including a typed slash command) opens a new request,
  hence a new turn. Everything else Claude Code sends as user text (`isMeta` injections such as skill
  bodies and command caveats, `[Request interrupted by user...]`, `<local-command-stdout>`) is kept as
  a `UserPromptPart` in the current request, since the model saw it, but starts no turn; such text
  right before a prompt (a caveat, an interrupt marker after a plain answer) joins the prompt's request.
  Only a trailing one with nothing after it ends up as a request of its own (so a step of its own).
- Compaction: a `system` line with subtype `compact_boundary` closes the history before it; the
  following `isCompactSummary` user line becomes `ModelRequest([CompactionPart(summary)])`, which
  starts a compaction step, so the history replays from the summary exactly as Claude Code resumed.
  The boundary's `compactMetadata` is kept in the part's metadata, and its `preTokens` / `postTokens`
  / `trigger` become the step's `recorded` tokens (what the chart and `session log` show for it).
- Sub-agents: `isSidechain` lines are a sub-agent's conversation, not this context, and are skipped;
  a file that holds only such lines (Claude Code writes each sub-agent to `<session>/subagents/
  agent-<agentId>.jsonl`) IS that sub-agent's conversation and is read as one, named
  `<sessionId>-agent-<agentId>` (the session id is the parent's: the agent id tells them apart).
- Skipped: other `system` lines,
  `summary` (titles), `file-history-snapshot`, `queue-operation`, `progress`, and other
  `isVisibleInTranscriptOnly` lines (shown to the person, never sent to the model).
- Lines are taken in file order; a rewound branch left in the file (`parentUuid` fork) is not pruned.
- Tool-call ids: a `tool_use` id seen before in the file (Claude Code reuses ids across resumed
  sessions) gets a suffix (`toolu_x~2`, `~3`, ...), and each `tool_result` goes to the oldest call of
  its id still unanswered, so every call keeps its own return. A `tool_use` without an id or name, or
  a `tool_result` without a `tool_use_id`, is refused naming its line (nothing could pair it).
- Blocks: `text` -> UserPromptPart/TextPart, `thinking` -> ThinkingPart (signature kept),
  `redacted_thinking` -> ThinkingPart(id='redacted_thinking', signature=data) as pydantic-ai's
  Anthropic model does, `tool_use` -> ToolCallPart (id and input kept), `server_tool_use` and
  `*_tool_result` -> Native parts, base64 `image` -> BinaryContent, url image -> ImageUrl; any other
  block becomes a short `[<type> block]` text so nothing disappears silently.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from sessionstore.errors import ImportFormatError
from sessionstore.formats.common import (
    ImportedTranscript,
    as_str,
    build_transcript,
    iter_jsonl,
    parse_time,
)

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}
# User text Claude Code itself writes; the model sees it, but no person typed it.
_NOT_PROMPTS = ("[Request interrupted by user", "<local-command-stdout>", "<local-command-stderr>")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def read_claude_code(path: Path, text: str) -> ImportedTranscript:
    """Convert a Claude Code JSONL transcript (already read as `text`) into steps."""
    builder = _Builder(path=path)
    session_id: str | None = None
    lines = list(iter_jsonl(path, text, "Claude Code"))
    talk = [line for _, line in lines if line.get("type") in ("user", "assistant")]
    # A file of sub-agent lines only is that sub-agent's own conversation (module docstring).
    sub_agent = bool(talk) and all(line.get("isSidechain") for line in talk)
    agent_id = next((a for line in talk if (a := as_str(line.get("agentId")))), None) if sub_agent else None
    for number, line in lines:
        builder.line = number
        kind = line.get("type")
        if kind not in ("user", "assistant", "system") or bool(line.get("isSidechain")) != sub_agent:
            continue
        session_id = session_id or as_str(line.get("sessionId"))
        when = parse_time(line.get("timestamp")) or builder.last_time
        builder.last_time = when
        if kind == "system":
            if line.get("subtype") == "compact_boundary":
                builder.boundary(line.get("compactMetadata"))
            continue
        message = line.get("message")
        if not isinstance(message, dict):
            continue
        if kind == "assistant":
            builder.assistant(message, when)
        elif line.get("isCompactSummary"):
            builder.summary(_plain_text(message.get("content")), when)
        elif not line.get("isVisibleInTranscriptOnly"):
            builder.user(message.get("content"), when, meta=bool(line.get("isMeta")))
    if sub_agent:
        agent = agent_id or path.stem.removeprefix("agent-")
        session_id = f"{session_id}-agent-{agent}" if session_id else f"agent-{agent}"
    return build_transcript(path, "claude-code", "Claude Code", builder.finish(), session_id, _recorded)


def _recorded(part: CompactionPart) -> dict[str, Any] | None:
    """`compactMetadata` (`{"trigger": "auto", "preTokens": 155432, "postTokens": 15771}`; older
    versions write only the first two) as `ImportedStep.recorded`."""
    meta = part.metadata.get("claude_code") if isinstance(part.metadata, dict) else None
    if not isinstance(meta, dict):
        return None
    out: dict[str, Any] = {}
    for key, field_name in (("preTokens", "tokens_before"), ("postTokens", "tokens_after")):
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[field_name] = value
    if isinstance(meta.get("trigger"), str):
        out["trigger"] = meta["trigger"]
    return {"by": "Claude Code", **out} if out else None


@dataclass
class _Response:
    id: str | None
    parts: list[ModelResponsePart]
    usage: RequestUsage
    model: str | None
    time: datetime
    finish: FinishReason | None


@dataclass
class _Builder:
    """Folds lines into messages: the open response, then the pending request that follows it."""

    path: Path
    line: int = 0
    """The line being read, for errors."""
    out: list[ModelMessage] = field(default_factory=list)
    response: _Response | None = None
    request: list[ModelRequestPart] = field(default_factory=list)
    request_time: datetime | None = None
    has_prompt: bool = False
    has_returns: bool = False
    tool_names: dict[str, str] = field(default_factory=dict)
    compact_metadata: Any = None
    last_time: datetime = _EPOCH
    uses: dict[str, int] = field(default_factory=dict)
    """How many tool_use blocks carried each id so far."""
    unanswered: dict[str, deque[str]] = field(default_factory=dict)
    """Per id as written: the ids given to its calls that no tool_result answered yet, oldest first."""

    def assistant(self, message: dict[str, Any], when: datetime) -> None:
        if message.get("model") == "<synthetic>":
            return
        parts = [p for block in _blocks(message.get("content")) if (p := self._response_part(block))]
        msg_id = as_str(message.get("id"))
        usage = _usage(message.get("usage"))
        finish = _FINISH.get(str(message.get("stop_reason")))
        current = self.response
        if current is not None and msg_id is not None and current.id == msg_id:
            current.parts.extend(parts)
            current.usage = usage if usage.has_values() else current.usage
            current.finish = finish or current.finish
            return
        self._flush()
        self.response = _Response(msg_id, parts, usage, as_str(message.get("model")), when, finish)

    def user(self, content: object, when: datetime, *, meta: bool) -> None:
        if isinstance(content, list) and any(_is_block(b, "tool_result") for b in content):
            for block in content:
                if _is_block(block, "tool_result"):
                    self._add(self._tool_return(block, when), when)
                    self.has_returns = True
                elif (part := _prompt_part([block], when)) is not None:
                    self._add(part, when)
            return
        part = _prompt_part(content, when)
        if part is None:
            return
        is_prompt = not meta and not (isinstance(part.content, str) and part.content.startswith(_NOT_PROMPTS))
        if is_prompt and (self.has_prompt or self.has_returns):
            self._flush()
        elif is_prompt and self.response is not None:
            # Text Claude Code injected just before this prompt (a command caveat) opens its turn.
            self._flush(keep_request=True)
        self._add(part, when)
        self.has_prompt = self.has_prompt or is_prompt

    def boundary(self, metadata: object) -> None:
        self._flush()
        self.compact_metadata = metadata

    def summary(self, text: str, when: datetime) -> None:
        self._flush()
        meta = {"claude_code": self.compact_metadata} if self.compact_metadata is not None else None
        self.out.append(ModelRequest(parts=[CompactionPart(content=text, metadata=meta)], timestamp=when))
        self.compact_metadata = None

    def finish(self) -> list[ModelMessage]:
        self._flush()
        return self.out

    def _add(self, part: ModelRequestPart, when: datetime) -> None:
        if not self.request:
            self.request_time = when
        self.request.append(part)

    def _flush(self, *, keep_request: bool = False) -> None:
        if (r := self.response) is not None:
            self.out.append(
                ModelResponse(
                    parts=r.parts,
                    usage=r.usage,
                    model_name=r.model,
                    timestamp=r.time,
                    provider_name="anthropic",
                    provider_response_id=r.id,
                    finish_reason=r.finish,
                )
            )
            self.response = None
        if keep_request:
            return
        if self.request:
            self.out.append(ModelRequest(parts=self.request, timestamp=self.request_time))
            self.request = []
        self.has_prompt = self.has_returns = False

    def _response_part(self, block: dict[str, Any]) -> ModelResponsePart | None:
        kind = block.get("type")
        if kind == "text":
            return TextPart(content=as_str(block.get("text")) or "")
        if kind == "thinking":
            return ThinkingPart(
                content=as_str(block.get("thinking")) or "",
                signature=as_str(block.get("signature")),
                provider_name="anthropic",
            )
        if kind == "redacted_thinking":
            return ThinkingPart(
                content="",
                id="redacted_thinking",
                signature=as_str(block.get("data")),
                provider_name="anthropic",
            )
        if kind in ("tool_use", "server_tool_use"):
            written, name = as_str(block.get("id")), as_str(block.get("name"))
            if not written or not name:
                missing = " and ".join(w for w, v in (("an id", written), ("a name", name)) if not v)
                raise ImportFormatError(
                    f"{self.path}: line {self.line}: a {kind} block without {missing}; no result could be "
                    "paired with it: repair or remove that line"
                )
            args = block.get("input") if isinstance(block.get("input"), dict) else {}
            if kind == "server_tool_use":
                return NativeToolCallPart(
                    tool_name=name, args=args, tool_call_id=written, provider_name="anthropic"
                )
            n = self.uses[written] = self.uses.get(written, 0) + 1
            call_id = written if n == 1 else f"{written}~{n}"  # a reused id: this call keeps its own return
            self.unanswered.setdefault(written, deque()).append(call_id)
            self.tool_names[call_id] = name
            return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            return NativeToolReturnPart(
                tool_name=kind.removesuffix("_tool_result"),
                content=block.get("content"),
                tool_call_id=as_str(block.get("tool_use_id")) or "",
                provider_name="anthropic",
            )
        return TextPart(content=f"[{kind} block]")

    def _tool_return(self, block: dict[str, Any], when: datetime) -> ToolReturnPart:
        written = as_str(block.get("tool_use_id"))
        if not written:
            raise ImportFormatError(
                f"{self.path}: line {self.line}: a tool_result block without a tool_use_id; it answers no "
                "call: repair or remove that line"
            )
        waiting = self.unanswered.get(written)
        call_id = waiting.popleft() if waiting else written  # an orphan keeps its id (and is dropped)
        return ToolReturnPart(
            tool_name=self.tool_names.get(call_id, "unknown"),
            content=_tool_content(block.get("content")),
            tool_call_id=call_id,
            timestamp=when,
            outcome="failed" if block.get("is_error") is True else "success",
        )


def _is_block(block: object, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _plain_text(content: object) -> str:
    return "\n".join(as_str(b.get("text")) or "" for b in _blocks(content) if b.get("type") == "text")


def _items(content: object) -> list[Any]:
    """Text and images of a content value, as pydantic-ai user content items."""
    items: list[Any] = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            items.append(as_str(block.get("text")) or "")
        elif kind == "image":
            items.append(_image(block.get("source")))
        else:
            items.append(f"[{kind} block: {orjson.dumps(block).decode()[:200]}]")
    return items


def _image(source: object) -> Any:
    if isinstance(source, dict) and source.get("type") == "base64":
        try:
            data = base64.b64decode(str(source.get("data", "")), validate=True)
            media_type = str(source.get("media_type", "image/png"))
            # Narrowed as deserialization narrows it, so a stored message reloads equal.
            return BinaryContent.narrow_type(BinaryContent(data=data, media_type=media_type))
        except (binascii.Error, ValueError):
            return "[image: undecodable base64]"
    if isinstance(source, dict) and source.get("type") == "url" and isinstance(source.get("url"), str):
        return ImageUrl(url=source["url"])
    return "[image]"


def _prompt_part(content: object, when: datetime) -> UserPromptPart | None:
    items = _items(content)
    if not items:
        return None
    single = len(items) == 1 and isinstance(items[0], str)
    return UserPromptPart(content=items[0] if single else items, timestamp=when)


def _tool_content(content: object) -> Any:
    """A tool result's content: a string when it is all text (the usual case), else a list of items."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    items = _items(content)
    if all(isinstance(item, str) for item in items):
        return "\n".join(items)
    return items


def _usage(raw: object) -> RequestUsage:
    if not isinstance(raw, dict):
        return RequestUsage()
    ints = {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
    fresh, out = ints.get("input_tokens", 0), ints.get("output_tokens", 0)
    read, write = ints.get("cache_read_input_tokens", 0), ints.get("cache_creation_input_tokens", 0)
    creation = raw.get("cache_creation")
    one_hour = creation.get("ephemeral_1h_input_tokens", 0) if isinstance(creation, dict) else 0
    return RequestUsage(
        input_tokens=fresh + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=min(one_hour, write) if isinstance(one_hour, int) else 0,
        output_tokens=out,
        details=ints,
    )
