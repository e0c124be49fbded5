"""A divergence copy (`NAME-<remote>-<short id>`) holds a remote's commits: `session push` of all sessions
leaves it out, as git never pushes remote-tracking refs back, while a push that names it, a copy of
another remote, a copy given commits of its own and a session that only looks like a copy are pushed
(DESIGN §12). Real git: a bare remote over file:// and clones of it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from helpers.gitrepos import apart_clones, bare_remote, clone, git, isolate_git
from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.porcelain.history.naming import rename
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.sharing.push import DIVERGED, NEW, SKIPPED, UP_TO_DATE, push
from sessionstore.porcelain.store import SessionStore


def remote_sessions(remote: Path) -> list[str]:
    return git(remote, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/sessions/").split()


def statuses(outcomes) -> dict[str, str]:
    return {o.name: o.status for o in outcomes}


@pytest.fixture
def apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, SessionStore, SessionStore]:
    """(remote, alice, bob): both clones added to `fix-auth` after sharing it, and alice pushed."""
    isolate_git(monkeypatch)
    _, alice, bob = apart_clones(tmp_path, "fix-auth")
    return tmp_path / "origin.git", alice, bob


@pytest.fixture
def diverged(apart) -> tuple[Path, SessionStore, SessionStore, str]:
    """(remote, alice, bob, copy): as `apart`, then bob's pull made the copy `copy` of origin's `fix-auth`."""
    remote, alice, bob = apart
    [outcome] = pull(bob)
    assert outcome.status == DIVERGED and outcome.into
    return remote, alice, bob, outcome.into


def test_push_of_all_sessions_leaves_out_a_copy_of_that_remote_and_a_third_clone_sees_none(
    diverged, tmp_path: Path
) -> None:
    remote, _, bob, copy = diverged
    bob.fork("fix-auth", "fix-auth-bob")  # bob publishes his side under a new name, as he is told to
    found = statuses(push(bob))
    assert found[copy] == SKIPPED and found["fix-auth-bob"] == NEW
    assert [o.detail for o in push(bob) if o.name == copy] and copy not in remote_sessions(remote)
    assert sorted(remote_sessions(remote)) == ["fix-auth", "fix-auth-bob"]

    carol = clone(tmp_path / "carol", remote.resolve().as_uri())
    assert statuses(pull(carol)) == {"fix-auth": NEW, "fix-auth-bob": NEW}
    assert sorted(carol.sessions()) == ["fix-auth", "fix-auth-bob"]  # no copy of a copy


def test_a_copy_named_in_the_push_is_sent(diverged) -> None:
    remote, _, bob, copy = diverged
    assert statuses(push(bob, "origin", [copy])) == {copy: NEW}
    assert copy in remote_sessions(remote)
    tips = [git(remote, "rev-parse", f"refs/sessions/{name}") for name in (copy, "fix-auth")]
    assert tips[0] == tips[1]  # the same git commits under the copy's name
    assert statuses(push(bob))[copy] == UP_TO_DATE  # published on purpose: an ordinary session now


def test_a_look_alike_name_a_renamed_copy_and_a_copy_with_commits_of_its_own_are_pushed(diverged) -> None:
    remote, _, bob, copy = diverged
    bob.session("x-origin-1234567").append(tagged_turn(1, 5))  # named so by the user: not a copy
    assert statuses(push(bob, "origin", []))["x-origin-1234567"] == NEW
    assert "x-origin-1234567" in remote_sessions(remote)

    rename(bob, copy, "adopted")  # a copy given another name is the user's session
    assert statuses(push(bob)).get("adopted") == NEW

    [again] = [o for o in pull(bob) if o.name == "fix-auth"]  # the copy is made again
    assert again.into == copy
    assert statuses(push(bob))[copy] == SKIPPED
    bob.session(copy).append(tagged_turn(1, 9))  # work of bob's own on the copy: not origin's data
    assert statuses(push(bob))[copy] == NEW


def test_a_copy_a_killed_pull_left_short_is_still_left_out(diverged) -> None:
    """A pull killed during its append leaves the copy a prefix of the remote's log (the slow kill -9
    test in test_pull lands there at random): still the remote's data, so still not pushed."""
    remote, _, bob, copy = diverged
    path = bob.log(copy).path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # whole lines only: what the append had made durable
    found = statuses(push(bob))
    assert found[copy] == SKIPPED and copy not in remote_sessions(remote)
    assert pull(bob)[0].into == copy and bob.log(copy).path.read_bytes() == b"".join(lines)


def test_a_copy_whose_pull_was_killed_after_its_append_is_left_out(apart) -> None:
    """kill -9 of a real pull stopped right after it appended the copy's lines, before any ref of its
    end: the record that the copy is origin's was written first, so no push sends the copy."""
    remote, alice, bob = apart
    victim = spawn("stop_in_pull.py", bob.root)
    assert victim.stdout is not None
    line = victim.stdout.readline()
    assert line.startswith("stopping fix-auth-origin-"), line
    copy = line.split()[1]
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    assert bob.log(copy).path.read_bytes() == alice.log("fix-auth").path.read_bytes()
    found = statuses(push(bob))
    assert found[copy] == SKIPPED and copy not in remote_sessions(remote)


def test_a_copy_of_another_remote_is_an_ordinary_session_to_this_one(diverged, tmp_path: Path) -> None:
    remote, _, bob, copy = diverged
    other = tmp_path / "backup.git"
    git(bob.root.parent, "remote", "add", "backup", bare_remote(other))
    found = statuses(push(bob, "backup"))
    assert found == {"fix-auth": NEW, copy: NEW}
    assert sorted(remote_sessions(other)) == sorted(["fix-auth", copy])
    assert copy not in remote_sessions(remote)
