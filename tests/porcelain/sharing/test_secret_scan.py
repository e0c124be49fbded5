"""The secret scan of what `session push` sends (porcelain/sharing/secret_scan.py), over real git: a
bare remote over file:// and a clone of it. Blobs are JSON, so the scan must see the text their
strings hold."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolReturnPart, UserPromptPart

from helpers.git_processes import counting_git, verbs
from helpers.gitrepos import bare_remote, clone, git, isolate_git
from helpers.messages import T0, tagged_turn
from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.git import Git
from sessionstore.porcelain.sharing.push import NEW, PUSHED, push
from sessionstore.porcelain.sharing.secret_scan import json_text
from sessionstore.porcelain.store import SessionStore

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def alice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionStore:
    """A store in a clone whose `origin` is the bare remote `tmp_path/origin.git`."""
    isolate_git(monkeypatch)
    return clone(tmp_path / "alice", bare_remote(tmp_path / "origin.git"))


def remote_sessions(tmp_path: Path) -> list[str]:
    return git(tmp_path / "origin.git", "for-each-ref", "--format=%(refname)", "refs/sessions/").split()


def busy(store: SessionStore, name: str, turns: int) -> None:
    session = store.session(name)
    for i in range(turns):
        session.append(tagged_turn(0, i))


def statuses(outcomes) -> dict[str, str]:
    return {o.name: o.status for o in outcomes}


def test_push_refuses_what_looks_like_a_secret_naming_session_commit_and_pattern(alice, tmp_path) -> None:
    busy(alice, "fix-auth", 2)
    leak = [
        ModelRequest(parts=[ToolReturnPart("env", f"GITHUB={TOKEN}", tool_call_id="t1", timestamp=T0)]),
        ModelResponse(parts=[TextPart("ok")], timestamp=T0),
    ]
    commit = alice.session("fix-auth").append(leak)
    with pytest.raises(SessionStoreError) as err:
        push(alice)
    said = str(err.value)
    assert "'fix-auth'" in said and commit.id[:7] in said and "GitHub Token" in said and "message 1" in said
    assert "--allow-secrets" in said
    assert remote_sessions(tmp_path) == []  # nothing sent, not even the clean commits
    assert statuses(push(alice, allow_secrets=True)) == {"fix-auth": NEW}
    alice.session("fix-auth").append(tagged_turn(0, 9))
    assert statuses(push(alice)) == {"fix-auth": PUSHED}  # only what is sent is scanned


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('the tool printed {"password": "hunter2hunter2", "user": "ci"}', "Secret Keyword"),
        ('export API_KEY="abcd1234efgh5678"', "Secret Keyword"),
        ("token: 'Zx9-secret-value'", "Secret Keyword"),
        (f'"{TOKEN}"', "GitHub Token"),
        (f"env:\n{TOKEN}", "GitHub Token"),  # after an escaped newline, where `\b` fails on `n`
        ("ok\n\tpassword=hunter22", "Secret Keyword"),
    ],
)
def test_a_quoted_secret_is_found_as_memory_finds_it(alice, tmp_path, text: str, pattern: str) -> None:
    """Blobs are JSON, where a message's quotes are escaped (`\\"password\\": \\"...\\"`): the scan
    must see the text the message holds, as the MEMORY.md redaction does."""
    from sessionstore.memory.redact import find_secret

    assert find_secret(text) == pattern  # what MEMORY.md would redact
    commit = alice.session("fix-auth").append([ModelRequest(parts=[UserPromptPart(text, timestamp=T0)])])
    with pytest.raises(SessionStoreError) as err:
        push(alice)
    assert commit.id[:7] in str(err.value) and pattern in str(err.value)
    assert remote_sessions(tmp_path) == []
    assert statuses(push(alice, allow_secrets=True)) == {"fix-auth": NEW}


def test_escaped_text_that_holds_no_secret_is_pushed(alice) -> None:
    clean = 'a "quoted" word, a back\\slash, a tab\there, {"tokens": 12}, token = "$TOKEN", key\nnext line'
    alice.session("fix-auth").append([ModelRequest(parts=[UserPromptPart(clean, timestamp=T0)])])
    assert statuses(push(alice)) == {"fix-auth": NEW}


@given(
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)
)
def test_json_text_is_what_the_json_strings_hold(text: str) -> None:
    """The JSON's own quotes become NUL; the text inside comes out as it was."""
    assert json_text(orjson.dumps(text)) == b"\x00" + text.encode() + b"\x00"


def test_a_secret_in_one_of_many_sessions_is_named_and_nothing_is_pushed(alice, tmp_path) -> None:
    for name in ("a", "b", "c"):
        busy(alice, name, 2)
    commit = alice.session("b").append([ModelRequest(parts=[UserPromptPart(f"t={TOKEN}", timestamp=T0)])])
    with pytest.raises(SessionStoreError) as err:
        push(alice)  # one scan of everything finds it, then the session scans name it
    assert f"session 'b': commit {commit.id[:7]} (b@3), message 1 holds" in str(err.value)
    assert remote_sessions(tmp_path) == []


def test_a_refused_push_is_refused_again_though_its_commits_were_exported_then(alice, tmp_path) -> None:
    """The export scans the blobs it writes; a second push writes none (the first exported them), so
    the scan reads them back from git and refuses all the same."""
    busy(alice, "fix-auth", 1)
    alice.session("fix-auth").append([ModelRequest(parts=[UserPromptPart(f"t={TOKEN}", timestamp=T0)])])
    for _ in range(2):
        with pytest.raises(SessionStoreError, match="GitHub Token"):
            push(alice)
    assert remote_sessions(tmp_path) == []


def test_a_clean_first_push_reads_nothing_back_for_the_scan(alice, monkeypatch) -> None:
    """Every blob a first push sends was scanned as the export wrote it: the scan lists what goes out
    (`rev-list`) and reads none of it back (`Git.cat`, the scan's reader, is never asked)."""
    for name in ("a", "b"):
        busy(alice, name, 3)
    asked: list[str] = []
    real = Git.cat
    monkeypatch.setattr(Git, "cat", lambda self, specs: real(self, asked.extend(specs) or specs))
    with counting_git() as started:
        assert statuses(push(alice)) == {"a": NEW, "b": NEW}
    assert "rev-list" in verbs(started) and asked == []
