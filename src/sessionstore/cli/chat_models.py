"""The agent `session chat --model MODEL` talks to: any pydantic-ai model string, or one of two offline ones.

- `test`: pydantic-ai's `TestModel` (no network, no key; answers every message with `TEST_ANSWER`);
- `demo`: the scripted coding agent of `session demo` (`cli.demo.demo_agent`), working on a generated
  project in a temporary directory that lives as long as the chat, with the demo's settings;
- anything else goes to pydantic-ai's `infer_model` (`openai:gpt-4o`, `anthropic:claude-...`, ...), which
  reads API keys from the environment as pydantic-ai always does. A string it cannot use is refused
  with one line naming the fix, before the chat starts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SessionStoreError

OFFLINE = ("test", "demo")
TEST_ANSWER = "ok (pydantic-ai's TestModel, offline: it answers every message this way)"


@dataclass
class ChatAgent:
    """The agent, the label the footer shows, and settings overrides the store must be opened with."""

    agent: Any
    label: str
    settings: dict[str, Any] = field(default_factory=dict)


@contextmanager
def chat_agent(model: str) -> Iterator[ChatAgent]:
    """The agent for `model` (see the module docstring); cleans up the demo's project on exit."""
    from pydantic_ai import Agent

    if model == "test":
        from pydantic_ai.models.test import TestModel

        model = TestModel(custom_output_text=TEST_ANSWER)
        yield ChatAgent(Agent(model), "test (pydantic-ai TestModel, offline)")
        return
    if model == "demo":
        from .demo import DEMO_SETTINGS, demo_agent, make_project

        with tempfile.TemporaryDirectory(prefix="sessionstore-chat-") as tmp:
            make_project(Path(tmp))
            yield ChatAgent(demo_agent(Path(tmp)), "demo (scripted coder, offline)", dict(DEMO_SETTINGS))
        return
    yield ChatAgent(Agent(_infer(model)), model)


def _infer(model: str) -> Any:
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    if not model.strip():
        raise SessionStoreError("--model is empty: give a pydantic-ai model string, or test / demo offline")
    try:
        return infer_model(model)
    except UserError as err:  # unknown provider or model, a missing API key or provider package
        reason = " ".join(str(err).split())
        raise SessionStoreError(
            f"cannot use model {model!r}: {reason} (offline: --model test or --model demo)"
        ) from None
    except ImportError as err:
        raise SessionStoreError(
            f"cannot use model {model!r}: {err} (install the provider's extra, e.g. "
            "'pydantic-ai-slim[openai]'; offline: --model test or --model demo)"
        ) from None
