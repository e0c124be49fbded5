"""The agent `session chat` talks to: the user's own (`--agent`), or a bare one on `--model MODEL`.

`--agent module:attr` (or an agent spec file, `.yaml`/`.yml`/`.json`) loads the user's pydantic-ai agent
as pydantic-ai's `clai --agent` does, the module imported with the current directory on the path: its
tools, instructions and output type run on the session. Its own model is used unless `--model` is
given, which then replaces it (as `clai` does). A bare chat's `--model` is:

- `test`: pydantic-ai's `TestModel` (no network, no key; answers every message with `TEST_ANSWER`);
- `demo`: the scripted coding agent of `session demo` (`cli.demo.demo_agent`), working on a generated
  project in a temporary directory that lives as long as the chat, with the demo's settings;
- anything else goes to pydantic-ai's `infer_model` (`openai:gpt-4o`, `anthropic:claude-...`, ...), which
  reads API keys from the environment as pydantic-ai always does. A string it cannot use is refused
  with one line naming the fix, before the chat starts.
"""

from __future__ import annotations

import importlib
import re
import sys
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
def chat_agent(model: str, agent: str | None = None, *, model_given: bool = True) -> Iterator[ChatAgent]:
    """The agent to chat with (see the module docstring): the user's `agent` when given (on `model`
    when `model_given`), else a bare agent on `model`; cleans up the demo's project on exit."""
    from pydantic_ai import Agent

    if agent is not None:
        yield user_agent(agent, model if model_given else None)
        return
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


_MISSING_KEY = re.compile(r"Set the `(?P<var>[A-Z][A-Z0-9_]*)` environment variable")
"""pydantic-ai's missing-key message (`missing_api_key_error`), which goes on about `Provider(api_key=...)`
and `Agent('test')`: a shell user needs the variable's name and the CLI's offline models."""


def _infer(model: str) -> Any:
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    if not model.strip():
        raise SessionStoreError("--model is empty: give a pydantic-ai model string, or test / demo offline")
    try:
        return infer_model(model)
    except UserError as err:  # unknown provider or model, a missing API key or provider package
        reason = " ".join(str(err).split())
        if (key := _MISSING_KEY.search(reason)) is not None:  # pydantic-ai speaks Python: say it in shell
            reason = f"no API key: set {key['var']} in the environment (export {key['var']}=...)"
        raise SessionStoreError(
            f"cannot use model {model!r}: {reason} (offline: --model test or --model demo)"
        ) from None
    except ImportError as err:
        raise SessionStoreError(
            f"cannot use model {model!r}: {err} (install the provider's extra, e.g. "
            "'pydantic-ai-slim[openai]'; offline: --model test or --model demo)"
        ) from None


SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def user_agent(spec: str, model: str | None) -> ChatAgent:
    """The user's agent named by `spec` (`module:attr` or a spec file), on `model` when given."""
    from pydantic_ai.agent import AbstractAgent

    from ..porcelain.session.turn_fields import model_id

    loaded = _load(spec)
    if not isinstance(loaded, AbstractAgent):
        raise SessionStoreError(f"--agent {spec!r} is a {type(loaded).__name__}, not a pydantic-ai Agent")
    if model is not None:
        if model == "demo":
            raise SessionStoreError(
                "--model demo is an agent of its own: with --agent give a model string, or test"
            )
        loaded.model = _offline(model) if model == "test" else _infer(model)  # type: ignore[attr-defined]
    if loaded.model is None:
        raise SessionStoreError(
            f"agent {spec!r} has no model: give it one with --model (e.g. openai:gpt-4o, or test offline)"
        )
    name = loaded.name or spec
    return ChatAgent(loaded, f"{name} (agent, {model_id(loaded.model)})")


def _offline(model: str) -> Any:
    from pydantic_ai.models.test import TestModel

    return TestModel(custom_output_text=TEST_ANSWER)


def _load(spec: str) -> Any:
    """The object `spec` names: `Agent.from_file` for a spec file, else the attribute of an imported
    module (the current directory first on the path, as `clai --agent` has it); one line per mistake."""
    from pydantic_ai import Agent

    if spec.endswith(SPEC_SUFFIXES):
        path = Path(spec)
        if not path.is_file():
            raise SessionStoreError(f"--agent {spec!r}: no such agent spec file")
        try:
            return Agent.from_file(path)
        except Exception as err:
            reason = " ".join(str(err).split())[:300]
            raise SessionStoreError(f"--agent {spec!r}: not a valid agent spec: {reason}") from None
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SessionStoreError(
            f"--agent takes module:attribute (e.g. myagents:support) or an agent spec file "
            f"({', '.join(SPEC_SUFFIXES)}), not {spec!r}"
        )
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and module_name.startswith(err.name):
            raise SessionStoreError(
                f"--agent {spec!r}: no module {module_name!r} in the current directory or on the Python path"
            ) from None
        raise SessionStoreError(f"--agent {spec!r}: importing {module_name!r} failed: {err}") from None
    except Exception as err:  # the user's module raised while it was imported
        reason = " ".join(str(err).split())[:300]
        raise SessionStoreError(
            f"--agent {spec!r}: importing {module_name!r} failed: {type(err).__name__}: {reason}"
        ) from None
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise SessionStoreError(f"--agent {spec!r}: module {module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    return value
