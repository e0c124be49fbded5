"""Child process: a pydantic-ai chat app as a user deploys it behind a load balancer.

    vercel_app.py STORE_URL PORT NAME

A Starlette app served by uvicorn on 127.0.0.1:PORT: `POST /chat` is pydantic-ai's Vercel AI adapter
(`VercelAIAdapter.dispatch_request`) with a `FileConversationStore` on STORE_URL, so the conversation
the request names is loaded from the store, run, and saved there; `GET /health` answers `NAME`. The
model (FunctionModel, streamed, no network) answers `NAME saw K prompts: P1 | P2 | ...`: every user
prompt of the history it was given, so a reply shows which history this process loaded.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from sessionstore import FileConversationStore


def main() -> None:
    url, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    store = FileConversationStore(url)

    async def reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        prompts = [
            str(part.content)
            for message in messages
            for part in message.parts
            if part.part_kind == "user-prompt"
        ]
        yield f"{name} saw {len(prompts)} prompts: "
        yield " | ".join(prompts)

    agent = Agent(FunctionModel(stream_function=reply))

    async def chat(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent, conversation_store=store)

    async def health(request: Request) -> Response:
        return PlainTextResponse(name)

    app = Starlette(routes=[Route("/chat", chat, methods=["POST"]), Route("/health", health)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
