"""`session chat` as a person uses it: a real terminal (tmux), keys typed, the screen read back.

The offline models make every screen deterministic: `--model demo` (the scripted coder, 16k window) for
the footer, /compact and resume; a real pydantic-ai model string (`openai-chat:...`) against a local
OpenAI-compatible server (tests/helpers/fake_openai.py) for a request held in flight: a busy /compact
and Ctrl-C mid-request.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.fake_openai import FakeOpenAI
from helpers.tmux import Terminal, require_tmux
from sessionstore.accounting.settings import Settings
from sessionstore.porcelain.session.gauge import commit_gauge, format_gauge
from sessionstore.porcelain.store import SessionStore

SESSION = [str(Path(sys.executable).parent / "session")]
FIRST = "Get familiar with the inventory project: list the files and read the README."


@pytest.fixture(autouse=True)
def _tmux() -> None:
    require_tmux()


def _env(**extra: str) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL") if k in os.environ}
    return {"LANG": "C.UTF-8", **keep, "PYDANTIC_AI_NO_BANNER": "1", **extra}


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    SessionStore.open(root)
    (tmp_path / "MEMORY.md").write_text("# Project memory\n\n## Session notes\n")
    return root


def _chat(tmp_path: Path, root: Path, name: str, model: str, **env: str) -> Terminal:
    argv = [*SESSION, "--store", str(root), "chat", name, "--model", model]
    return Terminal(argv, cwd=tmp_path, env=_env(**env))


def _head(root: Path, name: str):
    return SessionStore.open(root, create=False).log(name).head()


def test_footer_compact_exit_and_resume(tmp_path: Path) -> None:
    """The footer after every turn, a /compact, Ctrl-D writing MEMORY.md, and a restart resuming."""
    root = _store(tmp_path)
    settings = Settings.load(start=tmp_path)
    term = _chat(tmp_path, root, "d", "demo")
    try:
        term.wait_for("chat on 'd'")
        assert "new session" in term.screen()
        term.wait_for(lambda s: "of 16k" in s and "d: new" in s)
        assert "demo (scripted coder, offline)" in term.footer()
        term.type(FIRST)
        screen = term.wait_for("assistant  It is a small inventory service")
        assert '→ run(command="ls -R")' in screen and '→ read_file(path="README.md")' in screen
        for seq, prompt, answer in [  # a run writes one line per step (issue 10): 2 tool calls, 3 lines
            (3, None, None),
            (6, "Read models.py and store.py. We must never change the public API of Inventory.",
             "assistant  Inventory keeps items in a dict"),
        ]:  # fmt: skip
            if prompt:
                term.type(prompt)
                term.wait_for(answer)
            head = _head(root, "d")
            assert head.seq == seq
            term.wait_for(lambda s, h=head, n=seq: f"head {h.id[:7]} d@{n}" in s)
            # The footer's gauge is the one `session gauge` reads from the head's log line.
            expected = format_gauge(commit_gauge(head, settings), color=False)
            assert expected in term.footer(), (expected, term.footer())
        assert re.search(r"[○◔◑◕●] \d+% of 16k", term.footer())
        # Coloured by band, as `session gauge` is: green below the micro level.
        assert re.search(r"\x1b\[(?:[0-9;]*;)?32m(?:\x1b\[[0-9;]*m)*[○◔◑◕●] \d+%", term.footer_with_colours())
        term.type("/gauge")
        term.wait_for(lambda s: len(re.findall(r"of 16k (?:measured|estimate) · micro", s)) >= 2)

        term.type("/compact keep the API rule")
        screen = term.wait_for("compaction tier 2 [checkpoints/d/1]")
        head = _head(root, "d")
        assert head.kind == "compaction" and head.extra["focus"] == "keep the API rule"
        assert f"{head.id[:7]} compaction tier 2" in screen
        term.wait_for(lambda s: f"head {head.id[:7]} d@7" in s)
        # The script counts its own runs, so after the compaction it goes on with its third step.
        term.type("Find every unchecked sku in the package.")
        term.wait_for("assistant  Every module has unchecked skus")
        term.type("/log 3")  # the third run's two lines (one tool call), then the compaction
        term.wait_for(re.compile(r"\(head\) turn .*\n\S+ turn .*\n\S+ compaction tier 2").search)
        term.key("C-d")
        term.wait_for("[exit 0]")
        assert "memory: " in term.screen()
    finally:
        term.close()
    memory = (tmp_path / "MEMORY.md").read_text()
    assert re.search(r"^- \d{4}-\d\d-\d\d .*\bd\b", memory, re.M), memory

    last = _head(root, "d")
    again = _chat(tmp_path, root, "d", "demo")
    try:
        again.wait_for(f"resumed {last.count} messages from checkpoints/d/1 + 2 turns")
        again.wait_for(lambda s: f"head {last.id[:7]} d@9" in s)
        again.type("/exit")
        again.wait_for("[exit 0]")
    finally:
        again.close()
    assert _head(root, "d").id == last.id  # nothing happened: nothing written, no second bullet
    assert (tmp_path / "MEMORY.md").read_text() == memory


def test_a_busy_compact_changes_nothing_and_ctrl_c_cancels_the_request_in_flight(tmp_path: Path) -> None:
    root = _store(tmp_path)
    with FakeOpenAI() as api:
        env = {"OPENAI_BASE_URL": api.url, "OPENAI_API_KEY": "sk-test"}
        term = _chat(tmp_path, root, "o", "openai-chat:gpt-4o-mini", **env)
        try:
            term.wait_for("chat on 'o'")
            term.type("first question")
            term.wait_for("assistant  echo: first question")
            first = _head(root, "o")
            assert first.count == 2 and first.extra["measured"] > 0
            term.wait_for(lambda s: f"head {first.id[:7]} o@1" in s)

            term.type("a long one [slow]")
            assert api.held.wait(20), term.screen()
            term.wait_for("working… Ctrl-C cancels")
            term.type("/compact")
            term.wait_for(
                "still answering the last message: /compact waits until it is done; nothing changed"
            )
            term.type("and another")
            term.wait_for("still answering the last message: wait for it")
            assert _head(root, "o").id == first.id
            term.key("C-c")
            term.wait_for(f"cancelled. The session keeps what was persisted: 2 messages, head {first.id[:7]}")
            term.wait_for(lambda s: "working…" not in term.footer())
            api.release.set()
            assert _head(root, "o").id == first.id  # nothing of the cancelled turn was written

            term.type("second question")
            term.wait_for("assistant  echo: second question")
            second = _head(root, "o")
            assert second.seq == 2 and second.count == 4
            term.key("C-d")
            term.wait_for("[exit 0]")
        finally:
            term.close()
    # The cancelled prompt is nowhere in the store; the store is intact.
    done = subprocess.run(
        [*SESSION, "--store", str(root), "fsck"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    store = SessionStore.open(root, create=False)
    texts = [str(getattr(p, "content", "")) for m in store.session("o").history for p in m.parts]
    assert not any("[slow]" in t for t in texts)
    assert any("second question" in t for t in texts)


def test_without_prompt_toolkit_a_terminal_chat_says_how_to_install_it(tmp_path: Path) -> None:
    root = _store(tmp_path)
    code = (
        "import sys; sys.modules['prompt_toolkit'] = None\n"  # the import now fails, as when not installed
        "from sessionstore.cli.main import main; main()"
    )
    argv = [sys.executable, "-c", code, "--store", str(root), "chat", "x"]
    term = Terminal(argv, cwd=tmp_path, env=_env())
    try:
        screen = term.wait_for("[exit 2]")
    finally:
        term.close()
    assert (
        "session: session chat on a terminal needs prompt_toolkit: pip install 'sessionstore[chat]'" in screen
    )
    assert "Traceback" not in screen
    assert not (root / "logs" / "x.jsonl").exists()


def test_chat_runs_the_users_own_agent_with_its_tool(tmp_path: Path) -> None:
    """`session chat NAME --agent module:attr`, as pydantic-ai's `clai --agent`: the module in the
    current directory defines an agent with one tool and instructions; the chat runs it on the session."""
    root = _store(tmp_path)
    shutil.copy(Path(__file__).resolve().parents[1] / "helpers" / "weather_agent.py", tmp_path)
    argv = [*SESSION, "--store", str(root), "chat", "w", "--agent", "weather_agent:agent"]
    term = Terminal(argv, cwd=tmp_path, env=_env())
    try:
        term.wait_for("chat on 'w'")
        term.wait_for(lambda s: "weather-bot (agent, function:function:reply:)" in term.footer())
        term.type("what is the weather like?")
        screen = term.wait_for("assistant  In Paris it is sunny, 21 °C.")
        assert '→ weather(city="Paris")' in screen
        term.wait_for(lambda s: re.search(r"[○◔◑◕●] \d+% of 1\.05M (?:measured|estimate)", term.footer()))
        term.key("C-d")
        term.wait_for("[exit 0]")
    finally:
        term.close()
    history = SessionStore.open(root, create=False).session("w").history
    kinds = [p.part_kind for m in history for p in m.parts]
    assert kinds == ["user-prompt", "tool-call", "tool-return", "text"]
    assert "weather" in (history[0].instructions or ""), "the agent's instructions ran with it"

    bad = Terminal(
        [*SESSION, "--store", str(root), "chat", "w", "--agent", "weather_agent:nope"],
        cwd=tmp_path,
        env=_env(),
    )
    try:
        screen = bad.wait_for("[exit 2]")
    finally:
        bad.close()
    assert "module 'weather_agent' has no attribute 'nope'" in screen and "Traceback" not in screen


def test_a_typo_d_name_is_asked_about_not_silently_started(tmp_path: Path) -> None:
    # issue 28, item 12: `session chat fxi-auth` started a new, empty session.
    root = _store(tmp_path)
    SessionStore.open(root).session("fix-auth").append(
        [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")])]
    )
    term = _chat(tmp_path, root, "fxi-auth", "test")
    try:
        term.wait_for(
            "no session 'fxi-auth'; did you mean 'fix-auth'? y: chat in 'fix-auth', n: start 'fxi-auth'"
        )
        term.type("y")
        term.wait_for("chat on 'fix-auth'")
        assert "resumed 2 messages" in term.screen()
        term.type("/exit")
        term.wait_for("[exit 0]")
    finally:
        term.close()
    assert SessionStore.open(root, create=False).sessions() == ["fix-auth"]  # nothing new started
    term = _chat(tmp_path, root, "fxi-auth", "test")
    try:
        term.wait_for("did you mean 'fix-auth'?")
        term.type("n")  # the person means a new session: it starts
        term.wait_for("chat on 'fxi-auth'")
        assert "new session" in term.screen()
        term.type("/exit")
        term.wait_for("[exit 0]")
    finally:
        term.close()
