"""Real turns for bench_fidelity.py: the base transcripts the cases are planted in, where they go, and
the pool of new real turns appended between compactions.

Bases: the real Claude Code session (9 turns, ~100k tokens) and the real Codex rollout (3 turns,
~124k tokens) of ../shared/realdata. A case is planted at a turn boundary (early, middle, late) as a
user turn of its own, or, for a file the agent read, as a `read_file` call and its return at the start
of the real turn after that boundary. A correction's second message goes one boundary later.

Pool: every other real turn (the other base, the small Claude Code transcript, then tau-bench's 1,490
airline turns from a per-session offset, their repeated system prompt left out), each used at most
once per session; when a session has used the whole pool it starts over and `wraps` counts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fidelity_probe import Case
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.formats.openai_chat import read_openai_chat
from sessionstore.formats.transcripts import read_transcript

CLAUDE_CODE = "claude_code/codemie_session-3fe1b6bc.jsonl"
CODEX = "codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
SMALL = "claude_code/spotter_tool_heavy.jsonl"
TAU = "trajectories/taubench_gpt-4o-airline.json"
POSITIONS = ("early", "middle", "late")
ACK = "Got it."

Turn = list[ModelMessage]


@dataclass(frozen=True)
class Base:
    """A real transcript as turns, and the boundary (plant before `turns[b]`) of each position."""

    name: str
    turns: list[Turn]
    at: dict[str, int]


@dataclass(frozen=True)
class RealData:
    bases: list[Base]
    others: dict[str, list[Turn]]
    """Per base name: the real turns of the other transcripts, in pool order (tau-bench last)."""
    small: list[Turn]
    tau: list[Turn]

    def every_turn(self) -> list[Turn]:
        """Every real turn once: the bases, the small transcript, tau-bench."""
        return [*(t for b in self.bases for t in b.turns), *self.small, *self.tau]


def load(realdata: Path) -> RealData:
    def turns(name: str) -> list[Turn]:
        return [s.messages for s in read_transcript(realdata / name).steps if s.kind == "turn"]

    cc, codex, small = turns(CLAUDE_CODE), turns(CODEX), turns(SMALL)
    tau = [_without_system(s.messages) for t in read_openai_chat(realdata / TAU) for s in t.steps]
    bases = [
        # Claude Code: after the /clear turn, in the middle, and before the last ~26k tokens.
        Base("claude_code", cc, {"early": 1, "middle": 4, "late": 6}),
        # Codex: three turns of 51k, 0.2k and 72k tokens: before, between and before the last.
        Base("codex", codex, {"early": 0, "middle": 1, "late": 2}),
    ]
    return RealData(bases, {"claude_code": [*codex, *small], "codex": [*cc, *small]}, small, tau)


def _without_system(messages: Turn) -> Turn:
    out = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            parts = [p for p in msg.parts if not isinstance(p, SystemPromptPart)]
            if not parts:
                continue
            msg = dataclasses.replace(msg, parts=parts)
        out.append(msg)
    return out


def user_turn(text: str) -> Turn:
    return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(ACK)])]


def file_read(case: Case, call_id: str) -> Turn:
    return [
        ModelResponse(parts=[ToolCallPart("read_file", {"path": case.file}, tool_call_id=call_id)]),
        ModelRequest(parts=[ToolReturnPart("read_file", case.texts[0], tool_call_id=call_id)]),
    ]


def planted(base: Base, placements: list[tuple[Case, str]]) -> list[Turn]:
    """The base's turns with each (case, position) planted; a correction's second message one
    boundary later (after the last turn when the first is at the last boundary)."""
    before: dict[int, list[Turn]] = {}
    inside: dict[int, list[ModelMessage]] = {}
    for n, (case, position) in enumerate(placements):
        b = base.at[position]
        if case.plant == "tool_return":
            inside.setdefault(b, []).extend(file_read(case, f"plant-{n}"))
            continue
        for k, text in enumerate(case.texts):
            before.setdefault(b + k, []).append(user_turn(text))
    out: list[Turn] = []
    for b, turn in enumerate(base.turns):
        out += before.get(b, [])
        reads = inside.get(b)
        out.append([turn[0], *reads, *turn[1:]] if reads else turn)
    return out + before.get(len(base.turns), [])


@dataclass
class Pool:
    """New real turns for one session, each used once before the pool starts over (`wraps`)."""

    turns: list[Turn]
    wraps: int = 0
    _next: int = 0
    _returns: Iterator[str] = field(init=False)
    _prompts: Iterator[str] = field(init=False)
    _replies: Iterator[str] = field(init=False)

    @classmethod
    def for_session(cls, data: RealData, base: Base, offset: int) -> Pool:
        k = offset % len(data.tau)
        return cls([*data.others[base.name], *data.tau[k:], *data.tau[:k]])

    def __post_init__(self) -> None:
        self._returns = self._cycle(ToolReturnPart)
        self._prompts = self._cycle(UserPromptPart)
        self._replies = self._cycle(TextPart)

    def turn(self) -> Turn:
        if self._next == len(self.turns):
            self._next, self.wraps = 0, self.wraps + 1
        self._next += 1
        return self.turns[self._next - 1]

    def tool_return(self) -> str:
        return next(self._returns)

    def prompt(self) -> str:
        return next(self._prompts)

    def reply(self) -> str:
        return next(self._replies)

    def _cycle(self, kind: type) -> Iterator[str]:
        """The pool's parts of `kind` as text, in order, starting over (counted in `wraps`) at the end."""
        while True:
            for turn in self.turns:
                for msg in turn:
                    for part in msg.parts:
                        if isinstance(part, kind):
                            text = part_text(part)
                            if text.strip():
                                yield text
            self.wraps += 1


def part_text(part: object) -> str:
    """A part as the text a reader would see (what the contenders keep or cut)."""
    if isinstance(part, UserPromptPart):
        content = part.content
        if isinstance(content, str):
            return content
        return "\n".join(c for c in content if isinstance(c, str))
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    if isinstance(part, ToolCallPart):
        return f"{part.tool_name}({part.args_as_json_str()})"
    content = getattr(part, "content", None)
    return content if isinstance(content, str) else ""
