"""The pack writer (plumbing/git_pack.py): the objects it writes are the ones git itself makes (same
ids, same bytes), its pack and index pass `git verify-pack` and `git fsck --strict` for any contents,
and a pack not finished leaves nothing in the repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.gitrepos import isolate_git
from sessionstore.plumbing.git import Git
from sessionstore.plumbing.git_pack import PackWriter, object_id, tree


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Git:
    isolate_git(monkeypatch)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    return Git.around(tmp_path / "r")


def git(repo: Git, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    import os

    return subprocess.run(
        ["git", "-C", str(repo.top), *args], input=input, check=True, capture_output=True,
        env={**os.environ, **(env or {})},
    ).stdout  # fmt: skip


def packs(repo: Git) -> list[str]:
    return sorted(p.name for p in (repo.objects_dir() / "pack").iterdir())


def test_blobs_trees_and_commits_are_the_ones_git_makes(repo: Git) -> None:
    pack = PackWriter(repo.objects_dir())
    data = b'{"kind":"request"}\n' * 50
    blob = pack.add("blob", data)
    line = pack.add("blob", b"line\n")
    assert blob == git(repo, "hash-object", "--stdin", input=data).decode().strip()
    sub = {"b" * 64: ("100644", blob), "a" * 64: ("100644", line)}
    inner = pack.add("tree", tree(sub))
    entries = {"line": ("100644", line), "objects": ("40000", inner), "objects.x": ("100644", blob)}
    root = pack.add("tree", tree(entries))  # "objects.x" sorts before the tree "objects" ("objects/")
    when = "sessionstore <sessionstore@localhost> 1700000000 +0000"
    body = f"tree {root}\nauthor {when}\ncommitter {when}\n\nturn 1 {'c' * 64}\n".encode()
    commit = pack.add("commit", body)
    assert pack.add("blob", data) == blob  # added once
    name = pack.finish()
    assert name is not None and packs(repo) == [f"pack-{name}.idx", f"pack-{name}.pack"]
    mktree = "".join(f"{mode.rjust(6, '0') if mode == '40000' else mode} "
                     f"{'tree' if mode == '40000' else 'blob'} {sha}\t{n}\n"
                     for n, (mode, sha) in entries.items())  # fmt: skip
    assert git(repo, "mktree", input=mktree.encode()).decode().strip() == root
    made = git(
        repo, "commit-tree", root, "-m", f"turn 1 {'c' * 64}",
        env={"GIT_AUTHOR_NAME": "sessionstore", "GIT_AUTHOR_EMAIL": "sessionstore@localhost",
             "GIT_COMMITTER_NAME": "sessionstore", "GIT_COMMITTER_EMAIL": "sessionstore@localhost",
             "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000"},
    )  # fmt: skip
    assert made.decode().strip() == commit
    assert git(repo, "cat-file", "blob", f"{commit}:objects/{'b' * 64}") == data
    git(repo, "update-ref", "refs/heads/x", commit)
    git(repo, "fsck", "--strict", "--no-dangling")
    git(repo, "verify-pack", str(repo.objects_dir() / "pack" / f"pack-{name}.idx"))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=20))
def test_any_blobs_make_a_pack_git_verifies_and_reads_back(repo: Git, blobs: list[bytes]) -> None:
    pack = PackWriter(repo.objects_dir())
    ids = [pack.add("blob", b) for b in blobs]
    assert ids == [object_id("blob", b) for b in blobs]
    name = pack.finish()
    git(repo, "verify-pack", str(repo.objects_dir() / "pack" / f"pack-{name}.idx"))
    for sha, data in zip(ids, blobs, strict=True):
        assert git(repo, "cat-file", "blob", sha) == data


def test_a_pack_not_finished_or_empty_leaves_nothing(repo: Git) -> None:
    pack = PackWriter(repo.objects_dir())
    pack.add("blob", b"x")
    pack.discard()
    assert packs(repo) == []
    assert PackWriter(repo.objects_dir()).finish() is None
    assert packs(repo) == []
