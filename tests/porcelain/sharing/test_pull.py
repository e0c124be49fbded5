"""The pull side of sharing with real git: divergence names, the git processes a pull starts, and what
teams do to a remote: rewrite it, delete a ref, push garbage or a forged blob under `refs/sessions/`,
and append to a session while it is being pulled (DESIGN §12)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.git_processes import counting_git, verbs
from helpers.gitrepos import bare_remote, clone, git, isolate_git, store_files, two_clones
from helpers.messages import tag_of, tagged_turn
from helpers.procs import spawn
from sessionstore.errors import CompactionError
from sessionstore.plumbing.commits import canonical
from sessionstore.plumbing.git import Git, GitError
from sessionstore.plumbing.names import is_valid_name
from sessionstore.porcelain.sharing import pull as pulling
from sessionstore.porcelain.sharing import remote_commits
from sessionstore.porcelain.sharing.pull import divergence_name, pull
from sessionstore.porcelain.sharing.push import (
    AHEAD,
    DIVERGED,
    FAST_FORWARD,
    NEW,
    PUSHED,
    REJECTED,
    UP_TO_DATE,
    export,
    push,
)
from sessionstore.porcelain.store import SessionStore


def test_divergence_names_are_valid_session_names() -> None:
    cid = "41d07aa" + "0" * 57
    assert divergence_name("fix-auth", "origin", cid) == "fix-auth-origin-41d07aa"
    assert divergence_name("x", "team/upstream", cid) == "x-team-upstream-41d07aa"
    long = divergence_name("a" * 128, "origin", cid)
    assert is_valid_name(long) and long.endswith("-origin-41d07aa")


# -- a team's remote ------------------------------------------------------------------------------------


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, SessionStore, SessionStore]:
    """(bare remote's path, alice, bob): alice pushed `fix-auth` (3 turns) and `notes` (1), bob pulled."""
    isolate_git(monkeypatch)
    url = bare_remote(tmp_path / "origin.git")
    alice, bob = clone(tmp_path / "alice", url), clone(tmp_path / "bob", url)
    for name, turns in (("fix-auth", 3), ("notes", 1)):
        session = alice.session(name)
        for i in range(turns):
            session.append(tagged_turn(0, i))
    push(alice)
    pull(bob)
    return tmp_path / "origin.git", alice, bob


def statuses(found) -> dict[str, str]:
    return {o.name: o.status for o in found}


def outcomes(found) -> dict[str, tuple[str, int]]:
    return {o.name: (o.status, o.commits) for o in found}


def tracking(store: SessionStore) -> list[str]:
    out = git(store.root.parent, "for-each-ref", "--format=%(refname)", "refs/remotes/origin/sessions/")
    return [ref.rsplit("/", 1)[1] for ref in out.split()]


def tags(store: SessionStore, name: str) -> list[tuple[int, int, int]]:
    return [tag_of(m) for m in store.session(name, create=False).history]


def forge(remote: Path, work: Path, name: str, edit) -> None:
    """Check out the remote's `refs/sessions/NAME`, let `edit(work tree)` change files, amend the tip
    (same subject, same parent) and force it back: a remote whose newest commit was tampered with."""
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    git(work, "fetch", "-q", str(remote), f"refs/sessions/{name}:refs/heads/x")
    git(work, "checkout", "-q", "x")
    edit(work)
    git(work, "commit", "-qa", "--amend", "--no-edit")
    git(work, "push", "-q", "-f", str(remote), f"x:refs/sessions/{name}")


def test_a_session_deleted_on_the_remote_is_no_longer_pulled_and_the_local_one_stays(team) -> None:
    remote, _, bob = team
    git(remote, "update-ref", "-d", "refs/sessions/notes")  # someone deleted it on the remote
    before = bob.log("notes").path.read_bytes()
    assert outcomes(pull(bob)) == {"fix-auth": (UP_TO_DATE, 0)}  # not "notes: up to date"
    assert tracking(bob) == ["fix-auth"]  # the stale tracking ref is gone, as `git fetch --prune` does
    assert bob.log("notes").path.read_bytes() == before  # bob's own copy is never touched
    assert outcomes(push(bob, "origin", ["notes"])) == {"notes": (NEW, 1)}  # and can be pushed again


def test_a_rewritten_remote_becomes_a_copy_and_a_rewound_one_leaves_the_session_ahead(team, tmp_path) -> None:
    remote, alice, bob = team
    carol = clone(tmp_path / "carol", remote.as_uri())
    session = carol.session("fix-auth")  # an unrelated history under the same name, force-pushed
    session.append(tagged_turn(2, 0))
    export(carol, Git.around(carol.root), ["fix-auth"])
    git(carol.root.parent, "push", "-q", "-f", "origin", "refs/sessions/fix-auth:refs/sessions/fix-auth")
    bob.session("fix-auth").append(tagged_turn(1, 0))
    [got] = pull(bob, "origin", ["fix-auth"])
    assert got.status == DIVERGED and got.into is not None
    assert [t[0] for t in tags(bob, got.into)] == [2, 2]  # carol's history, whole
    assert [t[:2] for t in tags(bob, "fix-auth")][::2] == [(0, 0), (0, 1), (0, 2), (1, 0)]  # bob's, whole
    assert bob.fsck().ok

    tip = git(remote, "rev-parse", "refs/sessions/notes").strip()
    alice.session("notes").append(tagged_turn(0, 1))
    push(alice)
    git(remote, "update-ref", "refs/sessions/notes", tip)  # the remote rewound to an older commit
    assert outcomes(pull(alice, "origin", ["notes"])) == {"notes": (AHEAD, 1)}
    assert outcomes(push(alice, "origin", ["notes"])) == {"notes": (PUSHED, 1)}


def test_a_ref_at_garbage_or_under_a_name_no_session_can_have_is_refused_and_the_rest_pulled(team) -> None:
    remote, alice, bob = team
    good = git(remote, "rev-parse", "refs/sessions/fix-auth").strip()
    junk = (
        subprocess.run(
            ["git", "-C", str(remote), "hash-object", "-w", "--stdin"], input=b"junk\n", capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    git(remote, "update-ref", "refs/sessions/junk", junk)  # a blob, not a commit
    git(remote, "update-ref", "refs/sessions/team/nested", good)  # no session name has a '/'
    git(remote, "update-ref", "refs/sessions/-dash", good)  # nor starts with '-'
    alice.session("notes").append(tagged_turn(0, 5))
    push(alice, "origin", ["notes"])
    found = {o.name: o for o in pull(bob)}
    assert {n: o.status for n, o in found.items()} == {
        "-dash": REJECTED,
        "fix-auth": UP_TO_DATE,
        "junk": REJECTED,
        "notes": FAST_FORWARD,  # the good sessions are pulled all the same
        "team/nested": REJECTED,
    }
    assert "not a sessionstore chain" in found["junk"].detail
    assert "is not a session name" in found["team/nested"].detail
    assert "is not a session name" in found["-dash"].detail
    assert sorted(bob.sessions()) == ["fix-auth", "notes"]
    assert store_files(bob) == store_files(alice)


def test_blob_bytes_that_do_not_match_their_ids_are_refused_and_nothing_is_appended(team, tmp_path) -> None:
    remote, alice, bob = team
    alice.session("fix-auth").append(tagged_turn(0, 7))
    push(alice)
    head = alice.log("fix-auth").head()
    assert head is not None and head.blob

    def flip(work: Path) -> None:
        path = work / "objects" / head.blob
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01  # one flipped bit, the same name
        path.write_bytes(bytes(data))

    forge(remote, tmp_path / "forge", "fix-auth", flip)
    before = store_files(bob)
    [got] = pull(bob, "origin", ["fix-auth"])
    assert got.status == REJECTED and f"blob {head.blob[:12]}" in got.detail and "corrupt" in got.detail
    assert store_files(bob) == before  # no line appended, no blob written
    assert bob.fsck().ok


def writer_turns(store: SessionStore, name: str, writer: int) -> list[int]:
    """The turn indexes `writer` wrote, in the order `name` replays them."""
    return [i for w, i, j in tags(store, name) if w == writer and j == 0]


@pytest.mark.slow
def test_a_pull_racing_a_writer_in_another_process_loses_no_turn(team) -> None:
    """A real pull process and a real writer process on the same session, let go at the same instant:
    whoever takes the lock first (the pull: a fast-forward the writer reloads onto; the writer: a
    divergence copy, or a pull refused as "changed while pulling"), every acknowledged turn of the
    writer replays in order in `fix-auth`, every remote turn is in `fix-auth` or its copy, the store
    is clean, and a further pull changes nothing."""
    _, alice, bob = team
    session = alice.session("fix-auth")
    for i in range(3, 100):
        session.append(tagged_turn(0, i))
    push(alice)
    puller = spawn("pull_child.py", bob.root, "pull", stdin=subprocess.PIPE)
    writer = spawn("pull_child.py", bob.root, "append", "fix-auth", 1, 30, stdin=subprocess.PIPE)
    for child in (puller, writer):
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in (puller, writer):
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    said = puller.communicate(timeout=60)[0]
    acked = writer.communicate(timeout=60)[0].split()[1:]  # after appender.py's own `ready`
    assert writer.returncode == 0 and len(acked) == 30, acked
    assert puller.returncode == 0 and said.startswith(("fix-auth ", "error ")), said
    pull(bob)  # finishes what the race left: a refused pull ("changed while pulling: pull again")
    assert writer_turns(bob, "fix-auth", 1) == list(range(30))
    remote = [i for name in bob.sessions() for i in writer_turns(bob, name, 0)]
    assert set(remote) == set(range(100))
    assert bob.fsck().ok
    before = store_files(bob)
    again = pull(bob)  # `ahead` when the pull fast-forwarded first and the writer's turns followed
    assert all(o.status in (UP_TO_DATE, AHEAD, DIVERGED) for o in again), [(o.name, o.status) for o in again]
    assert store_files(bob) == before


def test_a_copy_that_cannot_be_made_refuses_that_session_and_the_rest_is_pulled(team) -> None:
    _, alice, bob = team
    theirs = alice.session("fix-auth").append(tagged_turn(0, 50))
    alice.session("notes").append(tagged_turn(0, 51))
    push(alice)
    bob.session("fix-auth").append(tagged_turn(1, 0))  # diverged: the remote's goes to a copy
    taken = divergence_name("fix-auth", "origin", theirs.id)
    bob.session(taken).append(tagged_turn(1, 1))  # ... whose name bob already uses for his own
    before = bob.log(taken).path.read_bytes()
    found = {o.name: o for o in pull(bob)}
    assert found["fix-auth"].status == REJECTED and "has commits of its own" in found["fix-auth"].detail
    assert f"`session rename {taken} NEW`" in found["fix-auth"].detail  # fork would leave the name taken
    assert (found["notes"].status, found["notes"].commits) == (FAST_FORWARD, 1)
    assert bob.log(taken).path.read_bytes() == before


# -- any interleaving converges ---------------------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "compact", "push", "pull"]),
        st.integers(0, 1),
        st.sampled_from("st"),
    ),
    min_size=1,
    max_size=8,
)


def log_ids(store: SessionStore, name: str) -> list[str]:
    return [c.id for c in store.log(name).scan(since_reset=False)[0]] if store.exists(name) else []


def remote_chains(remote: Path) -> dict[str, list[str]]:
    """{session: its store commit ids, oldest first} as the remote holds them."""
    out = {}
    for name in git(remote, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/sessions/").split():
        subjects = git(remote, "log", "--reverse", "--format=%s", f"refs/sessions/{name}").splitlines()
        out[name] = [s.split(" ")[2] for s in subjects]
    return out


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_any_interleaving_of_appends_pushes_and_pulls_keeps_every_turn(
    ops, tmp_path_factory, monkeypatch
) -> None:
    """Two clones append to (and compact) two sessions and push and pull in any order: each clone keeps
    every commit it acknowledged in its own session, every session a pull saw on the remote is whole in
    some local session (its own name, or its divergence copy), both stores fsck clean after every step,
    and after a last round (push, pull both ways) a second pull changes nothing."""
    isolate_git(monkeypatch)
    base = tmp_path_factory.mktemp("team")
    remote = base / "origin.git"
    url = bare_remote(remote)
    clones = [clone(base / "alice", url), clone(base / "bob", url)]
    acked: list[dict[str, list[str]]] = [{}, {}]
    counter = [0, 0]

    def covered(c: int, chains: dict[str, list[str]]) -> None:
        local = {name: log_ids(clones[c], name) for name in clones[c].sessions()}
        for name, chain in chains.items():
            assert any(ids[: len(chain)] == chain for ids in local.values()), (c, name)

    for op, c, name in ops:
        store = clones[c]
        if op == "append":
            commit = store.session(name).append(tagged_turn(c, counter[c]))
            counter[c] += 1
            acked[c].setdefault(name, []).append(commit.id)
        elif op == "compact" and store.exists(name):
            with contextlib.suppress(CompactionError):  # too short to compact: a refusal, no commit
                acked[c].setdefault(name, []).append(store.session(name).compact().id)
        elif op == "push":
            for o in push(store):
                if o.status in (NEW, PUSHED, UP_TO_DATE) and store.exists(o.name):
                    assert remote_chains(remote)[o.name] == log_ids(store, o.name), o
        elif op == "pull":
            assert all(o.status != REJECTED for o in pull(store))
            covered(c, remote_chains(remote))
        for k in (0, 1):
            assert clones[k].fsck().ok, clones[k].fsck().problems
    for c in (0, 1, 0, 1):  # a last round: everyone pushes what they can, then pulls
        push(clones[c])
        pull(clones[1 - c])
    for c in (0, 1):
        for name, ids in acked[c].items():
            assert set(ids) <= set(log_ids(clones[c], name)), (c, name)  # nothing acknowledged lost
        covered(c, remote_chains(remote))
        before = store_files(clones[c])
        pull(clones[c])
        assert store_files(clones[c]) == before


def test_a_remote_commit_whose_count_its_blobs_do_not_hold_is_refused(team) -> None:
    """A line can verify (its id rehashed) and still not replay: its `count` says more messages than
    its blobs hold. Pulled, the session would not load ("replays to 4 messages but its head says 9");
    so it is refused, and nothing is appended."""
    _, alice, bob = team
    alice.session("fix-auth").append(tagged_turn(0, 9))
    log = alice.log("fix-auth").path
    *rest, last = log.read_bytes().splitlines(keepends=True)
    body = orjson.loads(last)
    del body["id"]
    body["count"] += 5
    body["id"] = hashlib.sha256(canonical(body)).hexdigest()
    log.write_bytes(b"".join(rest) + canonical(body) + b"\n")  # damaged in alice's store, then pushed
    assert statuses(push(alice)) == {"fix-auth": PUSHED, "notes": UP_TO_DATE}
    before = store_files(bob)
    [got] = pull(bob, "origin", ["fix-auth"])
    assert got.status == REJECTED and "says 13 messages, its blobs hold 8" in got.detail, got.detail
    assert store_files(bob) == before
    assert bob.session("fix-auth").history  # still loads


def killed_pulls(store: SessionStore, *, seed: int, rounds: int, longest: float) -> Iterator[None]:
    """Per round, a real pull of `store` (forked warm by pull_child.py, so it starts at once) killed
    with kill -9 at a seeded random instant up to `longest` s in (it may have finished: a whole pull is
    fine too); yields once it is reaped and the store fsck shows only what is derivable (a torn tail,
    a missing checkpoint ref)."""
    victim = spawn("pull_child.py", store.root, "fork", stdin=subprocess.PIPE)
    assert victim.stdin is not None and victim.stdout is not None
    assert victim.stdout.readline() == "ready\n"
    victim.stdin.write("go\n")
    victim.stdin.flush()
    rng = random.Random(seed)
    for _ in range(rounds):
        victim.stdin.write("round\n")
        victim.stdin.flush()
        pid = int(victim.stdout.readline().split()[1])
        time.sleep(rng.uniform(0.0, longest))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        assert victim.stdout.readline() == f"dead {pid}\n"
        for problem in store.fsck().problems:
            assert "torn last line" in problem or "is missing; `session fsck --repair`" in problem, problem
        yield
    victim.stdin.close()
    victim.wait(timeout=30)


@pytest.mark.slow
def test_a_divergence_pull_killed_at_random_instants_is_finished_by_the_next(team) -> None:
    """kill -9 of a real pull (forked warm, so it starts at once) at seeded random instants while it
    writes a divergence copy with checkpoints: after each kill the store is whole (at worst a torn tail
    or a missing checkpoint ref, both derivable), and the next pull completes the copy byte for byte."""
    _, alice, bob = team
    session = alice.session("fix-auth")
    for i in range(3, 90):
        session.append(tagged_turn(0, i))
        if i % 30 == 29:
            session.compact()
    push(alice)
    bob.session("fix-auth").append(tagged_turn(1, 0))
    mine = bob.log("fix-auth").path.read_bytes()
    for _ in killed_pulls(bob, seed=12, rounds=3, longest=0.25):
        sent = {o.name: o.status for o in push(bob)}  # the copy, whole or cut short, is origin's data
        assert sent["fix-auth"] == REJECTED and all(s != NEW for s in sent.values()), sent
        assert remote_chains(team[0]).keys() == {"fix-auth", "notes"}
    [got] = pull(bob, "origin", ["fix-auth"])
    assert got.status == DIVERGED and got.into is not None
    assert bob.log(got.into).path.read_bytes() == alice.log("fix-auth").path.read_bytes()
    assert [r.commit_id for r in bob.refs.list(got.into)] == [
        r.commit_id for r in alice.refs.list("fix-auth")
    ]
    assert bob.log("fix-auth").path.read_bytes() == mine
    assert bob.fsck().ok


def test_a_copy_whose_checkpoint_refs_a_killed_pull_left_out_gets_them_from_the_next_pull(team) -> None:
    """The state a kill -9 between a pull's append and its refs leaves (the random kills above land
    there only sometimes): the copy's log is whole, its refs are missing; the next pull makes them."""
    _, alice, bob = team
    session = alice.session("fix-auth")
    session.append(tagged_turn(0, 3))
    session.compact()
    session.append(tagged_turn(0, 4))
    push(alice)
    bob.session("fix-auth").append(tagged_turn(1, 0))
    [got] = pull(bob)[:1]
    assert got.status == DIVERGED and got.into is not None
    for ref in (bob.root / "refs" / "checkpoints" / got.into).iterdir():
        ref.unlink()
    assert not bob.fsck().ok
    assert pull(bob)[0].status == DIVERGED
    assert [r.commit_id for r in bob.refs.list(got.into)] == [
        r.commit_id for r in alice.refs.list("fix-auth")
    ]
    assert bob.fsck().ok


def test_a_ref_lock_a_killed_git_left_is_named_with_its_fix(team) -> None:
    """git leaves `<ref>.lock` when it is killed while it moves a ref; the next fetch cannot lock it.
    The refusal names that file and what to do, not the remote's URL (the remote is fine)."""
    _, alice, bob = team
    alice.session("fix-auth").append(tagged_turn(0, 8))
    push(alice)
    lock = bob.root.parent / ".git" / "refs" / "remotes" / "origin" / "sessions" / "fix-auth.lock"
    lock.write_text("")
    with pytest.raises(GitError) as err:
        pull(bob)
    said = str(err.value)
    assert str(lock) in said and "delete" in said and "get-url" not in said, said
    lock.unlink()
    assert outcomes(pull(bob))["fix-auth"] == (FAST_FORWARD, 1)


# -- git processes per pull -------------------------------------------------------------------------------


def test_a_pull_starts_as_many_git_processes_for_twelve_sessions_as_for_two(tmp_path, monkeypatch) -> None:
    """A pull batches: one fetch, one for-each-ref, one log of every chain, one transaction recording
    the divergence copies, one cat-file read in rounds, one transaction for `refs/sessions/*`, so a
    new, a fast-forward (half the sessions diverged) and an up-to-date pull of 12 sessions start
    exactly the git processes a pull of 2 does."""
    isolate_git(monkeypatch)
    seen = {}
    for n in (2, 12):
        alice, bob, names = two_clones(tmp_path / f"team-{n}", sessions=n)
        push(alice)
        with counting_git() as first:
            assert statuses(pull(bob)) == dict.fromkeys(names, NEW)
        for i, name in enumerate(names):
            alice.session(name).append(tagged_turn(0, 1))
            if i % 2:
                bob.session(name).append(tagged_turn(1, 1))  # diverged: the remote's goes to a copy
        push(alice)
        with counting_git() as second:
            found = statuses(pull(bob))
        assert found == {name: DIVERGED if i % 2 else FAST_FORWARD for i, name in enumerate(names)}
        with counting_git() as third:
            pull(bob)
        assert bob.fsck().ok
        seen[n] = [verbs(started) for started in (first, second, third)]
    assert seen[12] == seen[2], seen
    assert seen[12][1].count("cat-file") == 1 and seen[12][1].count("update-ref") == 2, seen[12][1]
    assert len(seen[12][1]) <= 8, seen[12][1]


def test_a_pull_leaves_a_refs_sessions_ref_another_process_moved_meanwhile(team, monkeypatch) -> None:
    """The pull's `refs/sessions/*` move from the values it read: one a push moved meanwhile keeps the
    push's value (refused, never overwritten), and the other sessions' refs move all the same."""
    _, alice, bob = team
    for name in ("fix-auth", "notes"):
        alice.session(name).append(tagged_turn(0, 20))
    push(alice)
    work = bob.root.parent
    elsewhere = git(work, "rev-parse", "refs/sessions/fix-auth~1").strip()
    real = remote_commits.ensure_checkpoint_refs

    def racing(store, name, commits=None):
        made = real(store, name, commits)
        if name == "fix-auth":  # just appended: another git moves it before the pull's own transaction
            git(work, "update-ref", "refs/sessions/fix-auth", elsewhere)
        return made

    monkeypatch.setattr(remote_commits, "ensure_checkpoint_refs", racing)
    assert outcomes(pull(bob)) == {"fix-auth": (FAST_FORWARD, 1), "notes": (FAST_FORWARD, 1)}
    assert git(work, "rev-parse", "refs/sessions/fix-auth").strip() == elsewhere
    theirs = git(work, "rev-parse", "refs/remotes/origin/sessions/notes").strip()
    assert git(work, "rev-parse", "refs/sessions/notes").strip() == theirs
    assert bob.fsck().ok


def test_a_copy_record_another_pull_wrote_meanwhile_refuses_that_session_only(team, monkeypatch) -> None:
    """A divergence copy's record moves only from the value this pull read: written by someone else
    meanwhile, it is not overwritten, that session is refused with nothing of its copy written, the
    others are pulled, and the next pull records the copy and pulls it."""
    _, alice, bob = team
    theirs = alice.session("fix-auth").append(tagged_turn(0, 30))
    alice.session("notes").append(tagged_turn(0, 31))
    push(alice)
    bob.session("fix-auth").append(tagged_turn(1, 0))
    copy = divergence_name("fix-auth", "origin", theirs.id)
    record = f"refs/session-copies/origin/{copy}"
    work = bob.root.parent
    foreign = git(work, "rev-parse", "refs/sessions/notes").strip()  # any commit but the copy's
    real = pulling._plan

    def racing(store, graph, remote, name, tip, kind):
        plan = real(store, graph, remote, name, tip, kind)
        if name == "fix-auth":
            git(work, "update-ref", record, foreign)
        return plan

    monkeypatch.setattr(pulling, "_plan", racing)
    before = bob.log("fix-auth").path.read_bytes()
    found = {o.name: o for o in pull(bob)}
    assert found["fix-auth"].status == REJECTED and "could not be recorded" in found["fix-auth"].detail
    assert (found["notes"].status, found["notes"].commits) == (FAST_FORWARD, 1)
    assert not bob.exists(copy) and bob.log("fix-auth").path.read_bytes() == before
    assert git(work, "rev-parse", record).strip() == foreign  # theirs stands
    monkeypatch.setattr(pulling, "_plan", real)
    [again] = pull(bob, "origin", ["fix-auth"])
    assert (again.status, again.into) == (DIVERGED, copy)
    remote_tip = git(work, "rev-parse", "origin/sessions/fix-auth").strip()
    assert git(work, "rev-parse", record).strip() == remote_tip
    assert bob.fsck().ok


def test_a_remote_ref_at_a_merge_of_two_chains_is_refused(team) -> None:
    remote, _, bob = team
    one, two = (git(remote, "rev-parse", f"refs/sessions/{n}").strip() for n in ("fix-auth", "notes"))
    tree = git(remote, "rev-parse", f"{one}^{{tree}}").strip()
    merge = git(remote, "commit-tree", tree, "-p", one, "-p", two, "-m", f"turn 4 {'a' * 64}").strip()
    git(remote, "update-ref", "refs/sessions/merged", merge)
    found = {o.name: o for o in pull(bob)}
    assert found["merged"].status == REJECTED and "not a sessionstore chain" in found["merged"].detail
    rest = {n: o.status for n, o in found.items() if n != "merged"}
    assert rest == dict.fromkeys(("fix-auth", "notes"), UP_TO_DATE)
    assert "merged" not in bob.sessions()


@pytest.mark.slow
def test_a_pull_of_many_sessions_killed_at_random_instants_leaves_each_as_it_was_or_whole(team) -> None:
    """kill -9 of a real pull of 15 sessions (a third of them diverged, so their copies are recorded
    in one transaction before any line) at seeded random instants: after each kill every session and
    copy is as it was or whole (at worst a torn tail), a copy that exists is recorded, and the next
    pull finishes every one byte for byte."""
    _, alice, bob = team
    names = [f"t{i:02d}" for i in range(15)]
    for i, name in enumerate(names):
        session = alice.session(name)
        for j in range(4):
            session.append(tagged_turn(0, 10 * i + j))
        if i % 3 == 0:
            bob.session(name).append(tagged_turn(1, i))  # bob's own history under the same name
    push(alice)
    whole = {name: alice.log(name).path.read_bytes() for name in names}
    mine = {name: bob.log(name).path.read_bytes() for name in names if bob.exists(name)}
    first = {name: alice.log(name).scan(since_reset=False)[0][0].id for name in mine}
    copies = {name: divergence_name(name, "origin", cid) for name, cid in first.items()}
    work = bob.root.parent
    for _ in killed_pulls(bob, seed=16, rounds=3, longest=0.3):
        listed = git(work, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/session-copies/")
        recorded = set(listed.split())
        for name in names:
            target = copies.get(name, name)
            data = bob.log(target).path.read_bytes() if bob.exists(target) else b""
            torn = whole[name].startswith(data) and not data.endswith(b"\n")
            assert data in (b"", whole[name]) or torn, (target, len(data))
            if name in mine:
                assert bob.log(name).path.read_bytes() == mine[name]  # bob's own never touched
                assert not data or target in recorded
    found = statuses(pull(bob))
    assert all(found[n] == DIVERGED for n in mine) and REJECTED not in found.values(), found
    for name in names:
        assert bob.log(copies.get(name, name)).path.read_bytes() == whole[name]
    assert bob.fsck().ok
