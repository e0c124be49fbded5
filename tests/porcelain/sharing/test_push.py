"""push/pull over real git: a bare remote over file://, clones that diverge, forks, compactions, a remote
that refuses, and a push killed mid-transfer (DESIGN §12)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.git_processes import counting_git, verbs
from helpers.gitrepos import bare_remote, clone, git, isolate_git, store_files, two_clones
from helpers.messages import T0, tagged_turn
from sessionstore.errors import SessionStoreError, UnknownRevision
from sessionstore.plumbing.codec import encode
from sessionstore.plumbing.git import GitError
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.sharing.push import (
    AHEAD,
    DIVERGED,
    FAST_FORWARD,
    NEW,
    PUSHED,
    REJECTED,
    UP_TO_DATE,
    push,
)
from sessionstore.porcelain.store import SessionStore

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, SessionStore, SessionStore]:
    isolate_git(monkeypatch)
    url = bare_remote(tmp_path / "origin.git")
    return url, clone(tmp_path / "alice", url), clone(tmp_path / "bob", url)


def remote_refs(tmp_path: Path) -> dict[str, str]:
    out = git(tmp_path / "origin.git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/sessions/")
    return dict(row.split() for row in out.splitlines())


def busy(store: SessionStore, name: str, turns: int, writer: int = 0) -> None:
    session = store.session(name)
    for i in range(turns):
        session.append(tagged_turn(writer, i))


def shared(alice: SessionStore, bob: SessionStore) -> None:
    """Alice starts fix-auth and pushes it; Bob pulls it: both clones hold the same two turns."""
    busy(alice, "fix-auth", 2)
    push(alice)
    pull(bob)


def plain_fetch(path: Path, url: str, spec: str) -> Path:
    """A fresh repository at `path` that fetched `spec` from `url` with plain git (no sessionstore)."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    git(path, "fetch", "-q", url, spec)
    return path


def statuses(outcomes) -> dict[str, str]:
    return {o.name: o.status for o in outcomes}


def test_a_pulled_store_is_byte_identical_with_forks_compactions_and_checkouts(team) -> None:
    _, alice, bob = team
    busy(alice, "fix-auth", 4)
    session = alice.session("fix-auth")
    session.compact()
    session.append(tagged_turn(0, 10))
    session.compact()  # two checkpoints: refs 1 and 2 must arrive at their offsets
    session.append(tagged_turn(0, 11))
    session.checkout("fix-auth@3")  # a reset point naming blobs of earlier turns
    alice.fork("fix-auth@6", "spike")  # shares blobs, sends them again only as tree entries

    assert statuses(push(alice)) == {"fix-auth": NEW, "spike": NEW}
    assert statuses(pull(bob)) == {"fix-auth": NEW, "spike": NEW}

    assert store_files(bob) == store_files(alice)  # logs, checkpoint refs and blobs, byte for byte
    report = bob.fsck()
    assert report.ok, report.problems
    for name in ("fix-auth", "spike"):
        assert bob.session(name).history == alice.session(name).history
        assert bob.log(name).head() == alice.log(name).head()


def test_plain_git_fetch_sees_the_same_refs_holding_the_exact_log_lines(team, tmp_path: Path) -> None:
    url, alice, _ = team
    busy(alice, "fix-auth", 3)
    push(alice)
    other = plain_fetch(tmp_path / "plain", url, "refs/sessions/*:refs/remotes/origin/sessions/*")
    tip = git(other, "rev-parse", "refs/remotes/origin/sessions/fix-auth").strip()
    assert tip == remote_refs(tmp_path)["refs/sessions/fix-auth"]
    log_lines = alice.log("fix-auth").path.read_bytes().splitlines(keepends=True)
    shown = subprocess.run(["git", "-C", str(other), "show", f"{tip}:line"], capture_output=True).stdout
    assert shown == log_lines[-1]
    head = alice.log("fix-auth").head()
    assert head is not None and head.blob is not None
    blob = subprocess.run(
        ["git", "-C", str(other), "show", f"{tip}:objects/{head.blob}"], capture_output=True
    ).stdout
    assert blob == alice.objects.read(head.blob)
    assert git(other, "rev-list", "--count", tip).strip() == "3"  # one git commit per store commit


def test_push_sends_only_new_commits_and_old_git_commits_keep_their_ids(team, tmp_path: Path) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 3)
    push(alice)
    first = remote_refs(tmp_path)["refs/sessions/fix-auth"]
    alice.session("fix-auth").append(tagged_turn(0, 7))
    [outcome] = push(alice, "origin", ["fix-auth"])
    assert (outcome.status, outcome.commits) == (PUSHED, 1)
    second = remote_refs(tmp_path)["refs/sessions/fix-auth"]
    assert git(tmp_path / "origin.git", "rev-parse", f"{second}~1").strip() == first
    assert statuses(push(alice)) == {"fix-auth": UP_TO_DATE}


def test_re_push_after_pull_fast_forwards_both_ways(team) -> None:
    _, alice, bob = team
    shared(alice, bob)
    bob.session("fix-auth").append(tagged_turn(1, 0))
    assert statuses(push(bob)) == {"fix-auth": PUSHED}  # bob's export continues alice's git commits
    [outcome] = pull(alice)
    assert (outcome.status, outcome.commits) == (FAST_FORWARD, 1)
    assert store_files(alice) == store_files(bob)
    alice.session("fix-auth").append(tagged_turn(0, 5))
    assert statuses(pull(alice)) == {"fix-auth": AHEAD}  # ahead: left alone
    assert statuses(push(alice)) == {"fix-auth": PUSHED}


def test_divergence_ends_as_two_complete_sessions_and_nothing_is_lost(team) -> None:
    _, alice, bob = team
    shared(alice, bob)
    alice.session("fix-auth").append(tagged_turn(0, 100))
    alice.session("fix-auth").compact()
    bob.session("fix-auth").append(tagged_turn(1, 200))
    bob_before = bob.log("fix-auth").path.read_bytes()
    assert statuses(push(alice)) == {"fix-auth": PUSHED}

    [refused] = push(bob)
    assert refused.status == REJECTED and "session pull origin fix-auth" in refused.detail

    [outcome] = pull(bob)
    assert outcome.status == DIVERGED
    copy = outcome.into
    theirs = alice.log("fix-auth").scan(since_reset=False)[0]
    assert copy == f"fix-auth-origin-{theirs[2].id[:7]}"  # the remote's first commit after the fork point
    assert bob.log("fix-auth").path.read_bytes() == bob_before  # ours untouched
    assert bob.log(copy).path.read_bytes() == alice.log("fix-auth").path.read_bytes()
    assert [r.commit_id for r in bob.refs.list(copy)] == [r.commit_id for r in alice.refs.list("fix-auth")]
    assert bob.session(copy).history == alice.session("fix-auth").history
    assert bob.fsck().ok

    assert statuses(pull(bob)) == {"fix-auth": DIVERGED}  # the same copy, no second one
    alice.session("fix-auth").append(tagged_turn(0, 101))
    push(alice)
    [again] = pull(bob)
    assert (again.into, again.commits) == (copy, 1)  # the copy is fast-forwarded
    assert sorted(bob.sessions()) == ["fix-auth", copy]

    [still] = push(bob, "origin", ["fix-auth"])
    assert still.status == REJECTED and "session fork fix-auth NEW" in still.detail
    bob.fork("fix-auth", "fix-auth-bob")
    assert statuses(push(bob, "origin", ["fix-auth-bob"])) == {"fix-auth-bob": NEW}


def test_a_remote_that_refuses_changes_nothing_and_says_why(team, tmp_path: Path) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 2)
    hook = tmp_path / "origin.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'sessions are frozen this week' >&2\nexit 1\n")
    hook.chmod(0o755)
    [outcome] = push(alice)
    assert outcome.status == REJECTED and "sessions are frozen this week" in outcome.detail
    assert remote_refs(tmp_path) == {}
    hook.unlink()
    assert statuses(push(alice)) == {"fix-auth": NEW}


def test_a_push_killed_mid_transfer_leaves_the_remote_as_it_was(team, tmp_path: Path) -> None:
    _, alice, bob = team
    busy(alice, "fix-auth", 2)
    push(alice)
    before = remote_refs(tmp_path)
    busy(alice, "fix-auth", 3, writer=1)
    marker = tmp_path / "receiving"
    hook = tmp_path / "origin.git" / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nsleep 30\n")
    hook.chmod(0o755)
    code = "from sessionstore.porcelain.sharing.push import push\nfrom sessionstore import SessionStore\n"
    code += f"push(SessionStore.open({str(alice.root)!r}))\n"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, env=os.environ.copy())
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the push never reached the remote"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the client, its git push and the remote's receive-pack
    proc.wait()
    hook.unlink()
    time.sleep(0.1)
    assert remote_refs(tmp_path) == before  # the ref never moved: all or nothing
    git(tmp_path / "origin.git", "fsck", "--no-progress")
    assert statuses(push(alice)) == {"fix-auth": PUSHED}
    pull(bob)
    assert store_files(bob) == store_files(alice)


def test_mistakes_are_named_and_nothing_is_written(team, tmp_path: Path) -> None:
    _, alice, bob = team
    with pytest.raises(GitError, match=r"no git remote 'upstream'.*git remote add upstream"):
        push(alice, "upstream")
    with pytest.raises(UnknownRevision, match="no session 'nope'"):
        push(alice, "origin", ["nope"])
    busy(alice, "fix-auth", 1)
    push(alice)
    with pytest.raises(UnknownRevision, match=r"no session 'fix-atuh' on remote 'origin'.*fix-auth"):
        pull(bob, "origin", ["fix-atuh"])
    assert bob.sessions() == []
    lone = SessionStore.open(tmp_path / "nogit" / ".sessions")
    with pytest.raises(GitError, match=r"not inside a git repository.*git init"):
        push(lone)


def test_a_ref_not_written_by_push_is_refused_before_anything_is_written(team, tmp_path: Path) -> None:
    url, _, bob = team
    other = tmp_path / "stranger"
    subprocess.run(["git", "init", "-q", "-b", "main", str(other)], check=True)
    (other / "README").write_text("hello\n")
    git(other, "add", "README")
    git(other, "commit", "-qm", "a plain commit")
    git(other, "push", "-q", url, "main:refs/sessions/fix-auth")
    [refused] = pull(bob)
    assert refused.status == REJECTED and "not a sessionstore chain" in refused.detail
    assert "git push origin :refs/sessions/fix-auth" in refused.detail
    assert bob.sessions() == []


def test_a_tampered_line_on_the_remote_is_refused(team, tmp_path: Path) -> None:
    url, alice, bob = team
    busy(alice, "fix-auth", 2)
    push(alice)
    work = plain_fetch(tmp_path / "tamper", url, "refs/sessions/fix-auth:refs/heads/x")
    git(work, "checkout", "-q", "x")
    line = (work / "line").read_bytes()
    (work / "line").write_bytes(line.replace(b'"turn"', b'"TURN"'))
    git(work, "commit", "-qa", "--amend", "--no-edit")  # same subject and parent, a forged line
    git(work, "push", "-q", "-f", url, "x:refs/sessions/fix-auth")
    [refused] = pull(bob)
    assert refused.status == REJECTED and "does not verify" in refused.detail
    assert bob.sessions() == []
    assert not any((bob.root / "objects").rglob("*")), "no blob of a refused pull was written"


def test_a_store_blob_that_is_corrupt_is_never_pushed(team, tmp_path: Path) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 1)
    head = alice.log("fix-auth").head()
    assert head is not None and head.blob
    path = alice.objects.path(head.blob)
    path.chmod(0o644)
    path.write_bytes(encode([ModelRequest(parts=[UserPromptPart("forged", timestamp=T0)])]))
    with pytest.raises(SessionStoreError, match="corrupt"):
        push(alice)
    assert remote_refs(tmp_path) == {}


def test_a_pull_killed_at_any_instant_is_finished_by_the_next_pull(team, tmp_path: Path) -> None:
    """Real kill -9 of `pull` at spread instants: each time the store is whole (fsck clean but for a
    torn tail or a missing ref, both derivable), and the next pull completes it byte for byte."""
    _, alice, bob = team
    session = alice.session("fix-auth")
    for i in range(120):
        session.append(tagged_turn(0, i))
        if i % 40 == 39:
            session.compact()
    push(alice)
    code = "from sessionstore.porcelain.sharing.pull import pull\nfrom sessionstore import SessionStore\n"
    code += f"pull(SessionStore.open({str(bob.root)!r}))\n"
    for delay in (0.35, 0.6, 0.9, 1.3):
        proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, env=os.environ.copy())
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        report = bob.fsck()
        for problem in report.problems:
            assert "torn last line" in problem or "is missing; `session fsck --repair`" in problem, problem
    [outcome] = pull(bob)
    assert outcome.status in (NEW, FAST_FORWARD, UP_TO_DATE)
    assert bob.fsck().ok
    files = store_files(bob)
    leftovers = {name for name in files if "/.tmp-" in name}  # temp files of a killed write
    stray = {str(p.relative_to(bob.root)) for p in bob.objects.stray_temps()}  # gc removes these
    assert {name for name in leftovers if name.startswith("objects/")} == stray
    assert {k: v for k, v in files.items() if k not in leftovers} == store_files(alice)


def test_an_unreachable_remote_or_one_that_is_no_repository_is_one_clear_line(team, tmp_path) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 1)
    (tmp_path / "plain").mkdir()
    git(alice.root.parent, "remote", "add", "gone", (tmp_path / "gone.git").as_uri())
    git(alice.root.parent, "remote", "add", "plain", str(tmp_path / "plain"))
    before = store_files(alice)
    for remote in ("gone", "plain"):
        for action in (push, pull):
            with pytest.raises(GitError) as err:
                action(alice, remote)
            said = str(err.value)
            assert f"{remote!r} failed: " in said and "does not appear to be a git repository" in said, said
            assert f"`git remote get-url {remote}`" in said and "\n" not in said
    assert store_files(alice) == before


def test_without_git_on_path_push_and_pull_say_to_install_it(team, tmp_path, monkeypatch) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 1)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for action in (push, pull):
        with pytest.raises(GitError, match="git is not installed"):
            action(alice)


def test_names_with_dots_and_dashes_travel_and_names_git_cannot_hold_are_refused(team) -> None:
    _, alice, bob = team
    names = ["a.b-c_d", "v1.2.3", "x-.y", "9-lives", "x.lock.y"]
    for name in names:
        busy(alice, name, 1)
    assert statuses(push(alice)) == dict.fromkeys(names, NEW)
    assert statuses(pull(bob)) == dict.fromkeys(sorted(names), NEW)
    assert store_files(bob) == store_files(alice)
    for bad in ("ends.", "ends.lock"):  # valid session names, not valid git refs
        busy(alice, bad, 1)
        with pytest.raises(SessionStoreError, match=rf"session '{bad}' cannot be a git ref.*session fork"):
            push(alice, "origin", [bad])


def test_a_hundred_and_five_sessions_travel_in_one_push_and_one_pull(team) -> None:
    _, alice, bob = team
    names = [f"task-{i:03d}" for i in range(105)]
    for name in names:
        alice.session(name).append(tagged_turn(0, 0))
    assert statuses(push(alice)) == dict.fromkeys(names, NEW)
    assert statuses(pull(bob)) == dict.fromkeys(names, NEW)
    assert store_files(bob) == store_files(alice)
    assert statuses(push(alice)) == dict.fromkeys(names, UP_TO_DATE)


def test_a_session_named_twice_is_sent_and_reported_once(team) -> None:
    _, alice, bob = team
    busy(alice, "fix-auth", 2)
    [pushed] = push(alice, "origin", ["fix-auth", "fix-auth"])
    assert (pushed.status, pushed.commits) == (NEW, 2)
    [pulled] = pull(bob, "origin", ["fix-auth", "fix-auth"])
    assert (pulled.status, pulled.commits) == (NEW, 2)


def test_a_session_given_where_the_remote_goes_is_named_as_such(team) -> None:
    _, alice, _ = team
    busy(alice, "fix-auth", 1)
    for action, verb in ((push, "push"), (pull, "pull")):
        with pytest.raises(GitError) as err:
            action(alice, "fix-auth")
        said = str(err.value)
        assert "no git remote 'fix-auth'" in said and f"`session {verb} origin fix-auth`" in said, said


def test_a_clone_behind_the_remote_is_told_to_pull_even_when_it_has_fetched_the_commits(team) -> None:
    """After a plain `git fetch` (or a pull that fetched and then refused), the clone holds the remote's
    newer git commits: its session is behind, not diverged, so the advice is to pull, not to fork."""
    _, alice, bob = team
    shared(alice, bob)
    alice.session("fix-auth").append(tagged_turn(0, 5))
    push(alice)
    git(bob.root.parent, "fetch", "-q", "origin", "+refs/sessions/*:refs/remotes/origin/sessions/*")
    [refused] = push(bob)
    assert refused.status == REJECTED and "`session pull origin fix-auth` first" in refused.detail
    assert [(o.status, o.commits) for o in pull(bob)] == [(FAST_FORWARD, 1)]


def test_a_push_starts_as_many_git_processes_for_twelve_sessions_as_for_two(tmp_path, monkeypatch) -> None:
    """A push batches its ancestry checks (one cat-file round of `tip~n` probes, not a `merge-base` per
    session): a new, a fast-forward and an up-to-date push of 12 sessions start exactly the git
    processes a push of 2 does, and a clone behind the remote is still told to pull."""
    isolate_git(monkeypatch)
    seen = {}
    for n in (2, 12):
        alice, bob, names = two_clones(tmp_path / f"team-{n}", sessions=n)
        with counting_git() as first:
            assert statuses(push(alice)) == dict.fromkeys(names, NEW)
        pull(bob)
        for name in names:
            alice.session(name).append(tagged_turn(0, 5))
        with counting_git() as second:
            assert statuses(push(alice)) == dict.fromkeys(names, PUSHED)
        with counting_git() as third:
            assert statuses(push(alice)) == dict.fromkeys(names, UP_TO_DATE)
        git(bob.root.parent, "fetch", "-q", "origin", "+refs/sessions/*:refs/remotes/origin/sessions/*")
        with counting_git() as fourth:
            behind = push(bob)
        assert all(o.status == REJECTED and "`session pull origin" in o.detail for o in behind)
        seen[n] = [verbs(started) for started in (first, second, third, fourth)]
    assert seen[12] == seen[2], seen
    assert "merge-base" not in seen[12][3], seen[12][3]
