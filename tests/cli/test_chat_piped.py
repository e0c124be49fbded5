"""`session chat` with stdin not a terminal: the same commands, one line at a time, the footer after turns.

In-process through click's runner (its stdin is no terminal), offline with `--model test` and `demo`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from helpers.cli import assert_refused, snapshot
from sessionstore.cli.main import cli
from sessionstore.porcelain.store import SessionStore


def run(root: Path, *args: str, input: str, env: dict[str, str | None] | None = None) -> Result:
    """`session --store ROOT ARGS` in-process with `input` as its (non-terminal) stdin."""
    return CliRunner().invoke(
        cli, ["--store", str(root), *args], input=input, env=env, catch_exceptions=False
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    SessionStore.open(path)
    return path


def _chat(root: Path, name: str, lines: list[str], model: str = "test") -> str:
    result = run(root, "chat", name, "--model", model, input="\n".join(lines) + "\n")
    assert result.exit_code == 0, (result.output, result.stderr)
    assert "Traceback" not in result.output
    return result.stdout


def test_turns_are_persisted_and_the_footer_follows_the_head(root: Path) -> None:
    out = _chat(root, "t", ["hello", "again", "/log"])
    store = SessionStore.open(root, create=False)
    commits = store.session("t").log()
    assert [c.kind for c in commits] == ["turn", "turn"]
    assert out.count("assistant  ok (pydantic-ai's TestModel, offline") == 2
    assert f"head {commits[1].id[:7]} t@1" in out and f"head {commits[0].id[:7]} t@2" in out
    assert f"{commits[0].id[:7]} (head) turn" in out  # /log, newest first
    assert "new session" in out.splitlines()[0]


def test_checkout_and_fork_move_the_chat(root: Path) -> None:
    out = _chat(root, "t", ["one", "two", "/checkout @1", "/fork t2", "three"])
    store = SessionStore.open(root, create=False)
    t = store.session("t")
    assert [c.kind for c in t.log()] == ["checkout", "turn", "turn"]
    assert t.persisted_count == 2
    assert "head is now" in out and "t@1" in out
    assert "now chatting in t2" in out
    t2 = store.session("t2")
    assert [c.kind for c in t2.log()] == ["turn", "fork"] and t2.persisted_count == 4
    assert f"head {t2.head.id[:7]} t2@2" in out


def test_mistakes_in_the_chat_are_one_line_and_change_nothing(root: Path) -> None:
    _chat(root, "t", ["one"])
    before = snapshot(root)
    out = _chat(root, "t", ["/checkout nosuch@9", "/fork t", "/compat", "/checkout", "/exit", "never sent"])
    assert snapshot(root) == before
    lines = out.splitlines()
    assert any("nosuch" in line and "session" in line for line in lines), out
    assert any("'t' already exists" in line for line in lines), out
    assert any("unknown command /compat" in line for line in lines)
    assert any("/checkout needs REV" in line for line in lines)
    assert "never sent" not in out


def test_compact_in_a_demo_chat_writes_a_checkpoint_and_a_restart_resumes_there(root: Path) -> None:
    first = "Get familiar with the inventory project: list the files and read the README."
    second = "Read models.py and store.py. We must never change the public API of Inventory."
    out = _chat(root, "d", [first, second, "/compact the API rule"], model="demo")
    assert '→ read_file(path="inventory/models.py")' in out
    assert "compaction tier 2 [checkpoints/d/1]" in out
    out = _chat(root, "d", ["/gauge"], model="demo")
    head = SessionStore.open(root, create=False).log("d").head()
    assert f"resumed {head.count} messages from checkpoints/d/1 + 0 turns" in out
    assert re.search(r"of 16k (measured|estimate) · micro", out)


def test_an_unusable_model_is_refused_before_anything_is_written(root: Path) -> None:
    before = snapshot(root)
    result = run(root, "chat", "t", "--model", "nosuchprovider:model", input="hello\n")
    assert_refused(result, "cannot use model 'nosuchprovider:model'", "--model test")
    result = run(
        root, "chat", "t", "--model", "openai-chat:gpt-4o", input="hello\n", env={"OPENAI_API_KEY": None}
    )
    assert_refused(result, "cannot use model", "OPENAI_API_KEY")
    result = run(root, "chat", "bad/name", input="hello\n")
    assert result.exit_code == 2 and "bad/name" in result.stderr
    assert snapshot(root) == before


def test_no_store_is_one_line_naming_session_init(tmp_path: Path) -> None:
    result = run(tmp_path / "nowhere", "chat", "t", input="hello\n")
    assert_refused(result, "session init")
    assert not (tmp_path / "nowhere").exists()


def test_the_readme_budget_example_keeps_the_rule_a_rule_and_the_correction_current(root: Path) -> None:
    """Issue 26: the rule stays a rule (never on a superseded line), $700 is current, and a second
    compaction carries the first summary's user words forward instead of quoting its lines."""
    rule = "Budget cap is $500 total. Never exceed without explicit approval."
    fix = "Actually it is $700, not $500."
    _chat(root, "t", [rule, fix, "/compact", "Plan the launch party.", "Book the venue.", "/compact"])
    shown = run(root, "show", "t", "--full", input="").stdout
    lines = [line.strip() for line in shown.splitlines()]
    assert rule in " ".join(lines) and fix in " ".join(lines)
    for line in lines:  # the rule never sits on a line that marks something superseded
        if "Never exceed without explicit approval" in line:
            assert "supersed" not in line.lower() and "no longer" not in line.lower()
    assert "- $500 is superseded: the user corrected it to $700." in lines
    said = shown[shown.index("## What the user said") :]
    assert said.index(rule) < said.index(fix)  # the latest statement reads last
    assert [line for line in lines if "$500" in line][-1] == f"> {fix}"
    assert "## Goal" not in said and "> >" not in shown and "- >" not in shown  # merged, not quoted
    assert sum(line == f"> {rule}" for line in lines) == 1
    assert "session show t@" in shown  # the last line says how to read what it replaced


def test_recall_gives_the_agent_what_a_summary_replaced(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "helpers")  # where weather_agent.py is
    s = SessionStore.open(root, create=False).session("r")
    for prompt in ("the staging port is 6543", "now the tests", "and the docs"):
        s.append([ModelRequest(parts=[UserPromptPart(prompt)]), ModelResponse(parts=[TextPart("ok")])])
    s.compact()
    result = run(root, "chat", "r", "--agent", "weather_agent:recaller", "--recall", input="staging port\n")
    assert result.exit_code == 0, result.output
    assert '→ recall(query="staging port")' in result.stdout
    assert "assistant  [r@1] user: the staging port is 6543" in result.stdout


def test_a_typo_d_name_from_a_pipe_is_refused_with_both_ways_out(root: Path) -> None:
    # issue 28, item 12: `session chat fxi-auth` silently started a new session next to `fix-auth`.
    _chat(root, "fix-auth", ["hello"])
    before = snapshot(root)
    assert_refused(
        run(root, "chat", "fxi-auth", input="hello\n"),
        "no session 'fxi-auth'; did you mean 'fix-auth'?",
        "`session chat fix-auth`",
        "`session chat fxi-auth --new`",
    )
    assert snapshot(root) == before
    out = run(root, "chat", "fxi-auth", "--new", "--model", "test", input="hi\n").stdout
    assert "chat on 'fxi-auth'" in out and "new session" in out


def test_last_means_the_most_recent_session(root: Path) -> None:
    _chat(root, "older", ["hello"])
    _chat(root, "newer", ["hello"])
    assert "chat on 'newer'" in run(root, "chat", "--last", input="/exit\n").stdout
    for args, says in ((["chat", "x", "--last"], "not both"), (["chat"], "Missing argument 'NAME' (or")):
        refused = run(root, *args, input="")
        assert refused.exit_code == 2 and says in refused.stderr
