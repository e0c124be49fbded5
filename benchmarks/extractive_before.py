"""BASELINE ONLY (benchmarks/bench_fidelity.py): the extractive summarizer as it was before issue 11.

It is what `model = "extractive"` (the default) uses, so compaction works without an API key. Every line
comes from the transcript: Goal from the first user request (or the previous summary's Goal, so merged
compactions keep the original goal), Constraints from the user's must/never/always/prefer sentences, Done
from completed tool calls with their key arguments, Blocked from failed or retried calls and retry
feedback, In Progress / Next Steps from the latest user requests, Key Decisions from the assistant's
"decided / will use / instead of / chose" sentences, Critical Context from the paths, commands and
identifiers seen. Items from a previous summary come first, then the new ones. Output is bounded
(MAX_SUMMARY_TOKENS) whatever the input size: each list keeps its newest items, each item is shortened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import orjson
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.accounting.thresholds import over_threshold
from sessionstore.accounting.tokens import count_text
from sessionstore.summary.skeleton import HEADINGS, is_summary_request, section_body
from sessionstore.summary.text import as_text, shorten_chars, user_text

__all__ = ["EXTRACTIVE_MARKER", "MAX_SUMMARY_TOKENS", "summarize_extractive"]

EXTRACTIVE_MARKER = "> extractive summary (offline, no model):"
MAX_SUMMARY_TOKENS = 2000

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_CONSTRAINT = re.compile(r"\b(must|never|always|prefer|don't|do not|should not|shouldn't|avoid)\b", re.I)
_DECISION = re.compile(r"\b(decided|will use|instead of|chose|going with|switched to|opted)\b", re.I)
_PATH = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|pyi|js|ts|tsx|jsx|md|toml|json|"
    r"ya?ml|rs|go|java|kt|c|h|cpp|hpp|sh|txt|cfg|ini|sql|html|css|lock)\b"
)
_IDENT = re.compile(r"`([^`\n]{2,60})`")
_ERROR = re.compile(r"Traceback \(most recent call last\)|^\s*(?:error|fatal|exception)\b", re.I | re.M)
_KEY_ARGS = ("file_path", "path", "filename", "file", "command", "cmd", "pattern", "url", "query", "name")
_COMMAND_ARGS = ("command", "cmd")
_NOISE = re.compile(r"^\s*(?:Caveat: The messages below|(?:<([\w-]+)>[\s\S]*?</\1>\s*)+$)")
"""Harness text recorded as user prompts (Claude Code's local-command caveat and tag-only lines)."""
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")


@dataclass
class _Facts:
    goal: str = ""
    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    earlier_next: list[str] = field(default_factory=list)


def _bullets(text: str) -> list[str]:
    return [
        m.group(1).strip() for line in text.splitlines() if (m := _BULLET.match(line)) and m.group(1).strip()
    ]


def _from_previous(summary: str, facts: _Facts) -> None:
    """Seed the facts with a previous summary's sections, so successive compactions merge."""
    facts.goal = section_body(summary, "## Goal")
    facts.constraints += _bullets(section_body(summary, "## Constraints & Preferences"))
    facts.done += _bullets(section_body(summary, "### Done"))
    facts.blocked += _bullets(section_body(summary, "### Blocked"))
    facts.decisions += _bullets(section_body(summary, "## Key Decisions"))
    facts.earlier_next += _bullets(section_body(summary, "## Next Steps"))
    for item in _bullets(section_body(summary, "## Critical Context")):
        if item.startswith("Files: "):
            facts.files += [f.strip("` ") for f in item[7:].split(", ")]
        elif item.startswith("Commands: "):
            facts.commands += [c.strip("` ") for c in item[10:].split("; ")]
        elif item.startswith("Identifiers: "):
            facts.identifiers += [i.strip("` ") for i in item[13:].split(", ")]


def _sentences(text: str, pattern: re.Pattern[str]) -> Iterable[str]:
    for match in _SENTENCE.finditer(text):
        sentence = " ".join(match.group(0).split())
        if sentence and pattern.search(sentence):
            yield sentence


def _key_args(args: object) -> tuple[str, list[str]]:
    """A short rendering of a call's arguments, and the file paths among them."""
    data = args
    if isinstance(args, str):
        try:
            data = orjson.loads(args)
        except orjson.JSONDecodeError:
            return _line(args, 80), []
    if not isinstance(data, dict) or not data:
        return _line(as_text(data), 80) if data else "", []
    keys = [k for k in _KEY_ARGS if k in data] or list(data)[:1]
    shown = ", ".join(f"{k}={_line(as_text(data[k]), 80)}" for k in keys[:2])
    files = [str(data[k]) for k in ("file_path", "path", "filename", "file") if isinstance(data.get(k), str)]
    return shown, files


def _scan_text(text: str, facts: _Facts) -> None:
    facts.files += _PATH.findall(text)
    facts.identifiers += _IDENT.findall(text)


def _collect(messages: Sequence[ModelMessage]) -> _Facts:
    facts = _Facts()
    body = messages
    if messages and is_summary_request(messages[0]):
        for part in messages[0].parts:
            if isinstance(part, CompactionPart) and part.content:
                _from_previous(part.content, facts)
        body = messages[1:]
    calls: dict[str, tuple[str, str]] = {}
    for msg in body:
        for part in msg.parts:
            if isinstance(part, UserPromptPart):
                text = user_text(part).strip()
                if text and not _NOISE.match(text):
                    facts.goal = facts.goal or text
                    facts.requests.append(text)
                    facts.constraints += _sentences(text, _CONSTRAINT)
                    _scan_text(text, facts)
            elif isinstance(part, TextPart):
                facts.decisions += _sentences(part.content, _DECISION)
                _scan_text(part.content, facts)
            elif isinstance(part, ToolCallPart):
                shown, files = _key_args(part.args)
                calls[part.tool_call_id] = (part.tool_name, shown)
                facts.files += files
                if isinstance(part.args, dict):
                    facts.commands += [
                        str(part.args[k]) for k in _COMMAND_ARGS if isinstance(part.args.get(k), str)
                    ]
            elif isinstance(part, ToolReturnPart):
                name, shown = calls.get(part.tool_call_id, (part.tool_name, ""))
                content = as_text(part.content)
                error = _ERROR.search(content)
                label = f"{name}({shown})"
                if part.outcome != "success" or error:
                    start = error.start() if error else 0
                    detail = " ".join(content[start : start + 400].split())
                    facts.blocked.append(f"{label} {part.outcome}: {detail}")
                else:
                    facts.done.append(label)
            elif isinstance(part, RetryFeedbackPart):
                facts.blocked.append("output retry: " + " ".join(as_text(part.content)[:400].split()))
    return facts


def _line(text: str, limit: int) -> str:
    """One bullet-safe line: whitespace collapsed, head+tail within `limit` chars."""
    return shorten_chars(" ".join(text.split()), limit, inline=True)


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        key = item.strip()
        if key and key not in seen:
            seen[key] = None
    return list(seen)


def _newest(items: list[str], count: int, width: int) -> list[str]:
    """The newest `count` distinct items, each within `width` chars, with a note of how many were left."""
    unique = _dedupe(items)
    kept = [_line(i, width) for i in unique[max(len(unique) - count, 0) :]]
    if len(unique) > len(kept):
        kept.insert(0, f"(+{len(unique) - len(kept)} earlier)")
    return kept


def _render(facts: _Facts, n_messages: int, focus: str | None, scale: float) -> str:
    def cap(n: int) -> int:
        return max(int(n * scale), 1)

    def bullets(items: list[str]) -> str:
        return "\n".join(f"- {i}" for i in items) if items else "- (none recorded)"

    goal = _line(facts.goal, cap(500)) or "(no user request in the summarized part)"
    recent = [_line(r, cap(300)) for r in _dedupe(facts.requests)[-3:]]
    context: list[str] = []
    if focus:
        context.append("Focus requested: " + _line(focus, cap(200)))
    for label, items, count, width, sep in (
        ("Files", facts.files, 30, 80, ", "),
        ("Commands", facts.commands, 10, 100, "; "),
        ("Identifiers", facts.identifiers, 20, 40, ", "),
    ):
        kept = [i for i in _newest(items, cap(count), cap(width)) if not i.startswith("(+")]
        if kept:
            context.append(f"{label}: " + sep.join(f"`{i}`" for i in kept))
    sections = {
        "# Conversation summary": f"{EXTRACTIVE_MARKER} extracted from {n_messages} messages without an LLM; "
        "every item below is quoted or derived from the transcript.",
        "## Goal": goal,
        "## Constraints & Preferences": bullets(_newest(facts.constraints, cap(8), cap(200))),
        "## Progress": "",
        "### Done": bullets(_newest(facts.done, cap(20), cap(160))),
        "### In Progress": bullets([f"Recent user request: {r}" for r in recent]),
        "### Blocked": bullets(_newest(facts.blocked, cap(8), cap(160))),
        "## Key Decisions": bullets(_newest(facts.decisions, cap(6), cap(200))),
        "## Next Steps": bullets(
            [f"Continue from the latest request: {recent[-1]}"]
            if recent
            else _newest(facts.earlier_next, cap(3), cap(200))
        ),
        "## Critical Context": bullets(context),
    }
    return "\n\n".join(f"{h}\n{sections[h]}".rstrip() for h in HEADINGS) + "\n"


def summarize_extractive(messages: Sequence[ModelMessage], *, focus: str | None = None) -> str:
    """A skeleton summary of `messages` built by extraction; its first line after the title says so."""
    facts = _collect(messages)
    scale = 1.0
    text = _render(facts, len(messages), focus, scale)
    while over_threshold(count_text(text), MAX_SUMMARY_TOKENS) and scale > 1 / 64:
        scale /= 2  # dense text (code, CJK) can cost more tokens per char: shrink every cap and retry
        text = _render(facts, len(messages), focus, scale)
    return text
