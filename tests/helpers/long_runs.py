"""A long tool loop for the inside-a-run tests (issue 10): one run, many tool calls, big outputs.

`LongRun` is a FunctionModel body that behaves like a coding agent reading files: each step reasons at
length (a ThinkingPart and a text part, which tier 1 cannot blank), then calls `read` once; the tool
returns `output_tokens[i]` tokens tagged `<<file i>>`. Tool-call ids restart at `call_0` in every
run, as FunctionModels and some providers do. The body records, for every request it receives, the
token count of the messages (the project's estimator) and reports it back as provider usage, so the
measured prefix of DESIGN §6 is the real size of what was sent.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from sessionstore.accounting.tokens import count_text, estimate_message, estimate_messages


def filler(tokens: int, tag: str) -> str:
    """About `tokens` tokens of varied text that starts with `tag` (head+tail shortening keeps it)."""
    per_line = count_text(f"{tag} entry 100: status ok, value 700;\n")
    lines = (f"{tag} entry {j}: status ok, value {j * 7};\n" for j in range(max(tokens // per_line, 1)))
    return f"<<{tag}>>\n" + "".join(lines)


@dataclass
class LongRun:
    """The FunctionModel body (see the module docstring)."""

    output_tokens: Sequence[int]
    reasoning_tokens: int = 1_200
    delay: float = 0.0
    announce: bool = False
    """Print `request K` (flushed) on receiving the K-th request: the kill -9 test's clock."""
    sent: list[int] = field(default_factory=list)
    received: list[list[ModelMessage]] = field(default_factory=list)
    step: int = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tokens = sum(estimate_messages(messages))
        self.sent.append(tokens)
        self.received.append(messages)
        if self.announce:
            print(f"request {len(self.sent)}", flush=True)
        if self.delay:
            time.sleep(self.delay)
        k = self.step
        self.step += 1
        think = ThinkingPart(filler(self.reasoning_tokens, f"thinking {k}"))
        say = TextPart(filler(self.reasoning_tokens // 2 + 300, f"notes {k}"))
        if k < len(self.output_tokens):
            parts = [think, say, ToolCallPart("read", {"i": k}, tool_call_id=f"call_{k}")]
        else:
            parts = [TextPart(f"read {len(self.output_tokens)} files")]
        response = ModelResponse(parts=parts)
        response.usage = RequestUsage(input_tokens=tokens, output_tokens=estimate_message(response))
        return response


def long_run_agent(body: LongRun) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(body))

    @agent.tool_plain
    def read(i: int) -> str:
        return filler(body.output_tokens[i], f"file {i}")

    return agent
