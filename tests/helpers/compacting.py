"""One `Session.compact` of a conversation in a throwaway store, for the summary-fidelity tests.

The conversation gets a closing turn ("Thanks, please continue.") so that, with a tiny
`keep_recent_tokens`, the tail is that turn (and at most the one before it) and everything else is
summarized. `drops_everything` is a FunctionModel body answering the bare skeleton: an LLM summary
that loses every item, which the check (summary/check.py) must make whole again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sessionstore import SessionStore, Settings
from sessionstore.summary.skeleton import SKELETON

CLOSING: list[ModelMessage] = [
    ModelRequest(parts=[UserPromptPart("Thanks, please continue.")]),
    ModelResponse(parts=[TextPart("ok")]),
]


def drops_everything(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The bare skeleton with a one-line Goal: valid, and it keeps nothing."""
    return ModelResponse(parts=[TextPart(SKELETON.replace("## Goal", "## Goal\nContinue the work."))])


def compact_once(
    messages: Sequence[ModelMessage], *, llm: bool = False, budget: int = 4000
) -> tuple[str, str]:
    """(summary, the verbatim tail's text) after one `Session.compact` of `messages` + CLOSING, offline
    or (`llm`) with `drops_everything` as the store's summarizer."""
    return compact_rounds([messages], llm=llm, budget=budget)


def compact_rounds(
    rounds: Sequence[Sequence[ModelMessage]], *, llm: bool = False, budget: int = 4000
) -> tuple[str, str]:
    """As `compact_once`, appending each round (+ CLOSING) and compacting after it: from the second
    round on, the previous summary is merged (DESIGN §7)."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(context_window_tokens=200_000, keep_recent_tokens=50, summary_max_tokens=budget)
        store = SessionStore.open(Path(tmp) / "store", settings=settings, warm=False)
        store.summarizer = FunctionModel(drops_everything) if llm else None
        session = store.session("s")
        for messages in rounds:
            session.append([*messages, *CLOSING], compact=False)
            session.compact()
        history = session.history
    tail = "\n".join(str(getattr(p, "content", "")) for m in history[1:] for p in m.parts)
    return history[0].parts[-1].content, tail
