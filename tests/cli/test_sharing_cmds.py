"""`session push` / `session pull` from the shell: one line per session, refusals as one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.cli import assert_refused, run, snapshot
from helpers.gitrepos import bare_remote, clone, isolate_git
from helpers.messages import tagged_turn
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SessionStore, SessionStore]:
    isolate_git(monkeypatch)
    url = bare_remote(tmp_path / "origin.git")
    alice, bob = clone(tmp_path / "alice", url), clone(tmp_path / "bob", url)
    session = alice.session("fix-auth")
    for i in range(2):
        session.append(tagged_turn(0, i))
    return alice, bob


def test_push_then_pull_report_one_line_per_session(team) -> None:
    alice, bob = team
    pushed = run(alice.root, "push")
    assert pushed.exit_code == 0, pushed.output
    assert pushed.stdout == "fix-auth: new (2 commits)\n"
    assert run(alice.root, "push", "origin", "fix-auth").stdout == "fix-auth: up to date\n"
    pulled = run(bob.root, "pull")
    assert (pulled.exit_code, pulled.stdout) == (0, "fix-auth: new (2 commits)\n")
    assert run(bob.root, "fsck").exit_code == 0


def diverge(alice: SessionStore, bob: SessionStore) -> None:
    """Both clones add to the shared `fix-auth`; alice pushes hers."""
    run(alice.root, "push")
    run(bob.root, "pull")
    alice.session("fix-auth").append(tagged_turn(0, 5))
    bob.session("fix-auth").append(tagged_turn(1, 5))
    run(alice.root, "push")


def test_a_diverged_push_is_refused_and_pull_names_the_copy(team) -> None:
    alice, bob = team
    diverge(alice, bob)
    refused = run(bob.root, "push")
    assert refused.exit_code == 2
    assert refused.stderr == (
        "session: fix-auth: rejected: origin has commits this clone lacks: "
        "`session pull origin fix-auth` first\n"
    )
    pulled = run(bob.root, "pull")
    assert pulled.exit_code == 0
    assert pulled.stdout.startswith("fix-auth: diverged from the remote; its commits are in session ")
    assert "yours stay in 'fix-auth'" in pulled.stdout


def test_push_says_in_one_line_which_divergence_copies_it_left_out_and_why(team) -> None:
    alice, bob = team
    diverge(alice, bob)
    run(bob.root, "pull")
    [copy] = [n for n in bob.sessions() if n != "fix-auth"]
    bob.fork("fix-auth", "fix-auth-bob")
    pushed = run(bob.root, "push")
    assert pushed.exit_code == 2  # fix-auth itself diverged: refused, as before
    assert pushed.stdout == (
        "fix-auth-bob: new (1 commit)\n"
        f"skipped 1 divergence copy a pull made of origin's sessions ({copy}): their commits are "
        f"origin's, already there; name it to push it (`session push origin {copy}`)\n"
    )
    named = run(bob.root, "push", "origin", copy)
    assert (named.exit_code, named.stdout) == (0, f"{copy}: new (3 commits)\n")


def test_mistakes_are_one_line_and_change_nothing(team, tmp_path: Path) -> None:
    alice, _ = team
    before = snapshot(alice.root)
    assert_refused(run(alice.root, "push", "upstream"), "no git remote 'upstream'", "git remote add")
    assert_refused(run(alice.root, "push", "origin", "fxi-auth"), "no session 'fxi-auth'")
    alice.session("fix-auth").append(
        [ModelRequest(parts=[UserPromptPart("my key is sk-ant-api03-abcdefghijklmnopqrstuvwx")])]
    )
    before = snapshot(alice.root)
    assert_refused(run(alice.root, "push"), "'fix-auth'", "Anthropic API Key", "--allow-secrets")
    assert snapshot(alice.root) == before
    assert run(alice.root, "push", "--allow-secrets").exit_code == 0


def test_a_first_pull_that_fails_leaves_no_empty_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pull of a clone makes its store; one that fails (a bad remote) takes it back, so a
    mistyped remote leaves the work tree as it was. A store that existed stays, empty or not."""
    isolate_git(monkeypatch)
    url = bare_remote(tmp_path / "origin.git")
    fresh = clone(tmp_path / "carol", url).root
    import shutil

    shutil.rmtree(fresh)  # a clone with no store yet
    assert_refused(run(fresh, "pull", "upstream"), "no git remote 'upstream'")
    assert not fresh.exists()
    SessionStore.open(fresh)
    assert_refused(run(fresh, "pull", "upstream"), "no git remote 'upstream'")
    assert fresh.is_dir() and SessionStore.open(fresh).sessions() == []
