"""A deterministic pydantic-ai agent for the FileConversationStore tests (FunctionModel, no network).

A prompt containing `approve` makes the model call a tool that needs approval, so the run pauses with
`DeferredToolRequests` and the conversation carries them; `run_turn` answers pending requests first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    asked = [p for p in last.parts if p.part_kind == "user-prompt" and "approve" in str(p.content)]
    if asked:
        return ModelResponse(parts=[ToolCallPart("danger", {"x": len(messages)})])
    return ModelResponse(parts=[TextPart(f"reply to {len(messages)} messages")])


agent: Agent[None, Any] = Agent(FunctionModel(_reply), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def danger(x: int) -> str:
    """A tool that needs a human's approval."""
    return f"did {x}"


async def run_turn(conversation: Conversation, prompt: str) -> AgentRunResult[Any]:
    """One run continuing `conversation`: answers its pending approvals, else sends `prompt`."""
    pending = conversation.deferred_tool_requests
    if pending is not None:
        results = pending.build_results(approve_all=True)
        return await agent.run(conversation=conversation, deferred_tool_results=results)
    return await agent.run(prompt, conversation=conversation)


def save_turns(store: ConversationStore, cid: str, turns: int) -> None:
    """Conversation `cid` of `turns` runs of `agent`, each saved to `store` as it ends."""

    async def go() -> None:
        conversation = Conversation(conversation_id=cid)
        for i in range(turns):
            result = await run_turn(conversation, f"turn {i}")
            await store.save(result)
            conversation = result.conversation

    asyncio.run(go())


def prompts(conversation: Conversation | None) -> list[str]:
    """The user prompts of a (loaded) history, in order."""
    assert conversation is not None
    return [
        str(part.content)
        for message in conversation.messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if part.part_kind == "user-prompt"
    ]
