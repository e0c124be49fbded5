"""A store committed to git and appended in two clones: the merge conflict is named by every reader and
`fsck --repair` splits it into two complete sessions (real git, real merges)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import tagged_turn
from sessionstore.plumbing.logs import MergeConflictError
from sessionstore.porcelain.maintenance.fsck_gc import fsck
from sessionstore.porcelain.store import SessionStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not found on PATH")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
}  # fmt: skip


def git(
    repo: Path, *args: str, check: bool = True, autocrlf: str = "false"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", f"core.autocrlf={autocrlf}", "-c", "init.defaultBranch=main", *args],
        cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=check,
    )  # fmt: skip


def checkpoint(store: SessionStore, name: str, text: str) -> None:
    session = store.session(name)
    with store.lock(name):
        session.commit_checkpoint([ModelRequest(parts=[UserPromptPart(text)])], tier=2)


def repo_with_a_store(path: Path) -> SessionStore:
    """A fresh git repository at `path` holding a store whose session `s` has one turn."""
    path.mkdir()
    git(path, "init", "-q")
    store = SessionStore.open(path / ".sessions")
    store.session("s").append(tagged_turn(0, 0))
    return store


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[SessionStore, dict[str, list]]:
    """Clone `a` merges clone `b`; both appended to session `s` and both made its checkpoint 2."""
    a = tmp_path / "a"
    a.mkdir()
    git(a, "init", "-q")
    store_a = SessionStore.open(a / ".sessions")
    s = store_a.session("s")
    for i in range(2):
        s.append(tagged_turn(0, i))
    checkpoint(store_a, "s", "first summary")
    commit_all(a, "base")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(a), str(b))
    store_b = SessionStore.open(b / ".sessions")
    for store, writer in ((store_a, 1), (store_b, 2)):
        session = store.session("s")
        session.append(tagged_turn(writer, 0))
        checkpoint(store, "s", f"summary of writer {writer}")  # both create refs/checkpoints/s/2
        session = store.session("s")
        for i in range(1, 1 + writer):
            session.append(tagged_turn(writer, i))
    histories = {"ours": store_a.session("s").history, "theirs": store_b.session("s").history}
    heads = {"ours head": store_a.log("s").head(), "theirs head": store_b.log("s").head()}
    commit_all(a, "ours")
    commit_all(b, "theirs")
    git(a, "fetch", "-q", str(b), "main")
    merged = git(a, "merge", "--no-edit", "FETCH_HEAD", check=False)
    assert merged.returncode != 0 and "CONFLICT" in merged.stdout, merged.stdout
    assert b"<<<<<<<" in (a / ".sessions" / "logs" / "s.jsonl").read_bytes()
    assert b"<<<<<<<" in (a / ".sessions" / "refs" / "checkpoints" / "s" / "2").read_bytes()  # add/add
    return SessionStore.open(a / ".sessions"), {**histories, **heads}


def test_every_reader_names_the_merge_conflict_and_the_fix(diverged) -> None:
    store, _ = diverged
    log = store.log("s")
    before = log.path.read_bytes()
    for read in (
        log.head,
        lambda: store.session("s"),
        lambda: store.resolve("s"),
        lambda: store.resolve("s@1"),
    ):
        with pytest.raises(
            MergeConflictError, match=r"git merge conflict .*`session fsck --repair` to split"
        ):
            read()
    report = fsck(store)
    assert any("git merge conflict" in p for p in report.problems)
    assert log.path.read_bytes() == before  # never cut as a torn tail


def test_fsck_repair_splits_into_two_complete_sessions(diverged) -> None:
    store, was = diverged
    report = fsck(store, repair=True)
    theirs = f"s-{was['theirs head'].id[:7]}"
    assert report.ok, report.problems
    assert report.repaired[0] == (
        f"s: split the git merge conflict in logs/s.jsonl: ours (6 commits) stays 's', "
        f"theirs (7 commits) is now {theirs!r}"
    )
    assert store.sessions() == ["s", theirs]
    assert store.session("s").history == was["ours"] and store.log("s").head() == was["ours head"]
    assert store.session(theirs).history == was["theirs"]
    assert store.log(theirs).head().id == was["theirs head"].id
    for name in ("s", theirs):  # both complete with their checkpoint refs, each pointing into its own log
        assert [r.k for r in store.refs.list(name)] == [1, 2]
        assert store.resolve(f"checkpoints/{name}/2").kind == "compaction"
    assert store.resolve(f"checkpoints/{theirs}/2").id != store.resolve("checkpoints/s/2").id
    again = fsck(store, repair=True)
    assert again.ok and not again.repaired
    store.session("s").append(tagged_turn(3, 0))  # both go on as ordinary sessions
    store.session(theirs).append(tagged_turn(3, 1))
    assert fsck(store).ok


def test_a_blob_git_converted_to_crlf_is_named_with_the_fix_that_works(tmp_path: Path) -> None:
    a = tmp_path / "a"
    repo_with_a_store(a)
    (a / ".sessions" / ".gitattributes").unlink()  # a store made before `session init` wrote it
    commit_all(a, "store")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(a), str(b), autocrlf="true")  # Git for Windows' default
    git(b, "config", "core.autocrlf", "true")
    clone = SessionStore.open(b / ".sessions")
    report = fsck(clone)
    assert report.problems and all("only by CRLF line endings" in p for p in report.problems), report.problems
    (b / ".sessions" / ".gitattributes").write_text("* -text\n")
    fix = "git ls-files -z .sessions/objects | xargs -0 git checkout-index -f --"
    assert fix in report.problems[0]
    subprocess.run(fix, shell=True, cwd=b, check=True, env={**os.environ, **GIT_ENV})  # autocrlf still on
    assert fsck(clone).ok and clone.session("s").persisted_count == 2


def test_gc_keeps_the_blobs_git_tracks_unless_told(tmp_path: Path) -> None:
    a = tmp_path / "a"
    store = repo_with_a_store(a)
    store.fork("s", "f").append(tagged_turn(0, 1))  # a fork another clone may have pushed
    commit_all(a, "store with a fork")
    fork_blob = store.log("f").head().blob
    store.log("f").remove()  # this clone drops the fork: its turn's blob is unreachable here only
    orphan = store.objects.write(b"never committed\n")
    report = store.gc(grace_days=0)
    assert report.removed == [orphan] and report.kept_committed == 1 and store.objects.exists(fork_blob)
    from sessionstore.porcelain.maintenance.fsck_gc import gc

    report = gc(store, grace_days=0, include_committed=True)
    assert report.removed == [fork_blob] and report.kept_committed == 0


def test_files_follow_the_umask_so_a_group_can_read_a_shared_store(tmp_path: Path) -> None:
    import stat

    old = os.umask(0o002)
    try:
        store = SessionStore.open(tmp_path / "shared")
        store.session("s").append(tagged_turn(0, 0))
        checkpoint(store, "s", "summary")
    finally:
        os.umask(old)
    files = [store.objects.path(store.log("s").head().blob), store.log("s").path, store.refs.dir / "s" / "1"]
    assert [oct(stat.S_IMODE(p.stat().st_mode)) for p in files] == [oct(0o664)] * 3


def test_the_cli_readers_name_the_conflict_in_one_line(diverged) -> None:
    from helpers.cli import assert_refused, run

    store, _ = diverged
    listed = run(store.root, "list")
    assert "merge conflict: `session fsck --repair` splits it" in listed.stdout
    for args in (["log", "s"], ["gauge", "s"], ["show", "s"], ["export", "s"]):
        assert_refused(run(store.root, *args), "git merge conflict", "session fsck --repair")
    checked = run(store.root, "fsck")
    assert checked.exit_code == 1 and "git merge conflict" in checked.stdout
