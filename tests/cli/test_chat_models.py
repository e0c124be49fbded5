"""The agent `session chat --model MODEL` talks to (cli/chat_models.py), run on real sessions, offline.

What the chat relies on: `test` is pydantic-ai's TestModel answering `TEST_ANSWER`; `demo` is the
scripted coder working on a generated project in a temporary directory that exists exactly as long as
the chat (removed on exit, also when the chat fails), with the demo's settings; any other string goes
to pydantic-ai's `infer_model`; a string it cannot use is one `SessionStoreError` line naming the model
and the offline choices, raised before the chat starts.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import pytest
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.models.test import TestModel

from sessionstore import SessionStore, Settings
from sessionstore.cli.chat_models import OFFLINE, TEST_ANSWER, ChatAgent, chat_agent
from sessionstore.cli.demo import DEMO_SETTINGS
from sessionstore.errors import SessionStoreError
from sessionstore.integrations.runs import run_turn


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `tempfile` makes directories during the test (so the demo's project can be found)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def open_for(chosen: ChatAgent, path: Path) -> SessionStore:
    """The store as `session chat` opens it: its own settings, then the model's overrides."""
    return SessionStore.open(path, settings=Settings(**chosen.settings))


def test_the_offline_choices_are_test_and_demo() -> None:
    assert OFFLINE == ("test", "demo")


def test_test_is_pydantic_ais_test_model_answering_the_fixed_text(tmp_path: Path) -> None:
    with chat_agent("test") as chosen:
        assert isinstance(chosen.agent.model, TestModel)
        assert chosen.settings == {} and "offline" in chosen.label and chosen.label.startswith("test")
        s = open_for(chosen, tmp_path / "store").session("chat")
        for prompt in ("hello", "what did I say?"):
            assert run_turn(s, chosen.agent, prompt).output == TEST_ANSWER
    reopened = SessionStore.open(tmp_path / "store").session("chat")
    assert reopened.history == s.history and len(s.history) == 4  # two turns, each prompt + answer


def test_demo_works_on_a_project_that_lives_exactly_as_long_as_the_chat(
    tmp_path: Path, temp_root: Path
) -> None:
    with chat_agent("demo") as chosen:
        (project,) = temp_root.glob("sessionstore-chat-*")
        assert (project / "inventory").is_dir() and (project / "tests").is_dir()
        assert chosen.settings == DEMO_SETTINGS and chosen.settings is not DEMO_SETTINGS  # a copy
        assert "offline" in chosen.label and chosen.label.startswith("demo")
        store = open_for(chosen, tmp_path / "store")
        assert store.settings.keep_recent_tokens == DEMO_SETTINGS["keep_recent_tokens"]
        s = store.session("chat")
        result = run_turn(s, chosen.agent, "the CI is red: find out why and fix it")
        parts = [p for m in result.new_messages() for p in m.parts]
        assert [p.tool_name for p in parts if isinstance(p, ToolCallPart)] == ["run", "read_file"]
        readme = next(p for p in parts if isinstance(p, ToolReturnPart) and p.tool_name == "read_file")
        assert readme.content == (project / "README.md").read_text()  # its tools work on that project
        assert s.persisted_count == len(result.new_messages())
    assert not project.exists()  # cleaned up when the chat ends
    assert list(temp_root.iterdir()) == []


def test_demo_cleans_its_project_up_when_the_chat_fails(temp_root: Path) -> None:
    with pytest.raises(KeyboardInterrupt), chat_agent("demo"):
        (project,) = temp_root.glob("sessionstore-chat-*")
        raise KeyboardInterrupt
    assert not project.exists()


def test_demo_gives_every_chat_its_own_project(temp_root: Path) -> None:
    with chat_agent("demo") as one, chat_agent("demo") as two:
        assert len(list(temp_root.glob("sessionstore-chat-*"))) == 2
        one.settings["keep_recent_tokens"] = 1  # one chat's settings are not the other's
        assert two.settings == DEMO_SETTINGS
    assert list(temp_root.iterdir()) == []


def test_a_provider_model_string_goes_to_infer_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # no request is made
    with chat_agent("openai:gpt-4o") as chosen:
        assert chosen.label == "openai:gpt-4o" and chosen.settings == {}
        assert chosen.agent.model.model_name == "gpt-4o"
        assert chosen.agent.model.system == "openai"


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("", "--model is empty"),
        ("   ", "--model is empty"),
        ("nosuch:model", "cannot use model 'nosuch:model'"),
        ("gpt-4o", "cannot use model 'gpt-4o'"),  # no provider prefix
        (
            "openai:gpt-4o",
            "no API key: set OPENAI_API_KEY in the environment",
        ),  # the provider's key is missing
        ("groq:llama-3.3-70b", "pydantic-ai-slim[groq]"),  # the provider's package is missing
    ],
)
def test_a_model_string_that_cannot_be_used_is_one_line_before_the_chat_starts(
    model: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if model.startswith("groq:") and importlib.util.find_spec("groq") is not None:
        pytest.skip("the groq package is installed here: its missing-package message cannot be shown")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = False
    with pytest.raises(SessionStoreError) as info, chat_agent(model):
        started = True
    assert not started
    line = str(info.value)
    assert says in line and "\n" not in line and "Traceback" not in line
    assert "--model test or --model demo" in line or "test / demo offline" in line
    assert "Provider(api_key" not in line and "Agent('test')" not in line  # a shell user's words (issue 28)


# -- --agent: the user's own agent -----------------------------------------------------------------------


@pytest.fixture
def agents_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The current directory holds the user's agent module (tests/helpers/weather_agent.py)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "helpers")


def test_the_users_agent_runs_with_its_tools_instructions_and_output_type(
    tmp_path: Path, agents_here: None
) -> None:
    with chat_agent("test", "weather_agent:agent", model_given=False) as chosen:
        assert chosen.label == "weather-bot (agent, function:function:reply:)" and chosen.settings == {}
        s = SessionStore.open(tmp_path).session("w")
        result = run_turn(s, chosen.agent, "weather?")
    assert result.output == "In Paris it is sunny, 21 °C."
    stored = SessionStore.open(tmp_path).session("w").history
    assert [p.part_kind for m in stored for p in m.parts] == [
        "user-prompt",
        "tool-call",
        "tool-return",
        "text",
    ]
    assert stored[0].instructions and "weather" in stored[0].instructions
    with chat_agent("test", "weather_agent:report", model_given=False) as chosen:
        out = run_turn(SessionStore.open(tmp_path).session("r"), chosen.agent, "weather?").output
    assert (out.city, out.sky) == ("Paris", "sunny, 21 °C")


def test_model_replaces_the_agents_own(tmp_path: Path, agents_here: None) -> None:
    with chat_agent("test", "weather_agent:agent", model_given=True) as chosen:
        assert chosen.label == "weather-bot (agent, test:test)"
        assert isinstance(chosen.agent.model, TestModel)
    with (
        pytest.raises(SessionStoreError, match="--model demo is an agent of its own"),
        chat_agent("demo", "weather_agent:agent", model_given=True),
    ):
        pass


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("weather_agent", "--agent takes module:attribute"),
        ("no_such_module:agent", "no module 'no_such_module' in the current directory"),
        ("weather_agent:nope", "module 'weather_agent' has no attribute 'nope'"),
        ("weather_agent:not_an_agent", "is a int, not a pydantic-ai Agent"),
        ("missing.yaml", "no such agent spec file"),
    ],
)
def test_an_agent_that_cannot_be_used_is_one_line(agents_here: None, spec: str, said: str) -> None:
    with pytest.raises(SessionStoreError) as err, chat_agent("test", spec, model_given=False):
        pass
    assert said in str(err.value) and "\n" not in str(err.value)
