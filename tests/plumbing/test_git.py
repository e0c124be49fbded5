"""The git wrapper: streamed reads of many objects, fast-import's all-or-nothing refs, named failures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.gitrepos import git, isolate_git
from sessionstore.plumbing.git import Git, GitError


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Git:
    isolate_git(monkeypatch)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    return Git.around(tmp_path / "r")


def _import_blobs(repo: Git, blobs: list[bytes]) -> str:
    stream = [b"commit refs/heads/x\ncommitter t <t> 0 +0000\ndata 2\nm\n"]
    for i, data in enumerate(blobs):
        stream.append(b"M 100644 inline f%d\ndata %d\n%s\n" % (i, len(data), data))
    repo.fast_import([b"".join(stream) + b"\ndone\n"], force=False)
    return repo.run("rev-parse", "refs/heads/x").decode().strip()


def test_cat_streams_many_objects_in_order_and_names_missing_ones(repo: Git) -> None:
    blobs = [bytes([i % 256]) * (i * 97) for i in range(400)]  # some far bigger than a pipe buffer
    tip = _import_blobs(repo, blobs)
    specs = [f"{tip}:f{i}" for i in range(400)] + [f"{tip}:nope"]
    got = list(repo.cat(specs))
    assert got[:-1] == blobs and got[-1] is None


def test_a_stream_cut_short_moves_no_ref(repo: Git) -> None:
    with pytest.raises(GitError, match="fast-import failed"):
        repo.fast_import(
            [b"commit refs/heads/y\ncommitter t <t> 0 +0000\ndata 2\nm\n", b"garbage\n"], force=False
        )
    assert repo.refs("refs/heads/") == {}


def test_refs_and_chain_read_subjects(repo: Git, tmp_path: Path) -> None:
    tip = _import_blobs(repo, [b"a"])
    assert repo.refs("refs/heads/") == {"x": (tip, "m")}
    assert repo.chain(tip) == [(tip, [], "m")]
    assert git(tmp_path / "r", "cat-file", "-t", tip).strip() == "commit"


def test_outside_a_repository_the_error_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"not inside a git repository.*git init"):
        Git.around(tmp_path)


def test_a_failure_names_gits_reason_not_its_closing_advice(repo: Git, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    for url, reason in (
        ((tmp_path / "gone.git").as_uri(), "does not appear to be a git repository"),
        (str(tmp_path / "plain"), "does not appear to be a git repository"),
    ):
        with pytest.raises(GitError) as err:
            repo.ls_remote(url, "refs/sessions/")
        said = str(err.value)
        assert said.startswith(f"reading the refs of remote {url!r} failed: ") and reason in said, said
        assert "and the repository exists" not in said and "fatal:" not in said
        assert f"git remote get-url {url}" in said and "\n" not in said


def test_without_git_on_path_the_error_says_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(GitError, match=r"git is not installed \(no `git` on PATH\): install git"):
        Git.around(tmp_path / "r")
