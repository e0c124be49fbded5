"""The git wrapper: streamed reads of many objects (one process, in rounds), `update-ref`
transactions' all-or-nothing refs, many refs and chains read at once, named failures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.git_processes import counting_git, verbs
from helpers.gitrepos import git, isolate_git
from sessionstore.plumbing.git import ZERO, Git, GitError, RefLocked
from sessionstore.plumbing.git_pack import PackWriter, tree


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Git:
    isolate_git(monkeypatch)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    return Git.around(tmp_path / "r")


def _import_blobs(repo: Git, blobs: list[bytes], parent: str | None = None) -> str:
    """A commit of `blobs` (files f0, f1, ...) on refs/heads/x, a root unless `parent` is given."""
    pack = PackWriter(repo.objects_dir())
    files = {f"f{i}": ("100644", pack.add("blob", data)) for i, data in enumerate(blobs)}
    body = b"tree %s\n" % pack.add("tree", tree(files)).encode()
    if parent:
        body += b"parent %s\n" % parent.encode()
    sha = pack.add("commit", body + b"author t <t> 0 +0000\ncommitter t <t> 0 +0000\n\nm\n")
    pack.finish()
    repo.update_refs({"refs/heads/x": sha})
    return sha


def test_cat_streams_many_objects_in_order_and_names_missing_ones(repo: Git) -> None:
    blobs = [bytes([i % 256]) * (i * 97) for i in range(400)]  # some far bigger than a pipe buffer
    tip = _import_blobs(repo, blobs)
    specs = [f"{tip}:f{i}" for i in range(400)] + [f"{tip}:nope"]
    got = list(repo.cat(specs))
    assert got[:-1] == blobs and got[-1] is None


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


def test_one_cat_file_answers_rounds_of_reads_with_ids_and_revisions(repo: Git) -> None:
    """`CatFile` keeps one process across rounds (a pull reads lines, then the blobs they name), each
    round bigger than a pipe buffer without blocking, and answers `^{commit}` and `~n` with the id."""
    blobs = [bytes([i % 256]) * (i * 97) for i in range(300)]
    tip = _import_blobs(repo, blobs)
    second = _import_blobs(repo, [b"next"], parent=tip)
    with counting_git() as started, repo.reader() as reader:
        first = reader.read([f"{tip}:f{i}" for i in range(300)])
        assert [f.data if f else None for f in first] == blobs
        again = reader.read([f"{second}~1", f"{tip}^{{commit}}", f"{tip}:nope", f"{tip}:f1^{{commit}}"])
        answers = [(f.sha, f.kind) if f else None for f in again]
        assert answers == [(tip, "commit"), (tip, "commit"), None, None]
        assert reader.read([]) == []
    assert verbs(started) == ["cat-file"]


def test_a_transaction_moves_every_ref_or_none_and_only_from_the_old_value(repo: Git, tmp_path: Path) -> None:
    one = _import_blobs(repo, [b"1"])
    two = _import_blobs(repo, [b"2"], parent=one)
    repo.transaction({"refs/t/a": (one, ZERO), "refs/t/b": (one, ZERO)})
    assert repo.refs("refs/t/") == {"a": (one, "m"), "b": (one, "m")}
    for stale in ({"refs/t/a": (two, one), "refs/t/b": (two, two)}, {"refs/t/a": (two, ZERO)}):
        with pytest.raises(GitError, match="update-ref failed"):
            repo.transaction(stale)  # one ref not at its old value: nothing moves
        assert repo.refs("refs/t/") == {"a": (one, "m"), "b": (one, "m")}
    lock = tmp_path / "r" / ".git" / "refs" / "t" / "b.lock"
    lock.write_text("")
    with pytest.raises(RefLocked, match=r"delete .*b\.lock"):
        repo.transaction({"refs/t/a": (two, one), "refs/t/b": (two, one)})
    assert repo.refs("refs/t/") == {"a": (one, "m"), "b": (one, "m")}
    lock.unlink()
    repo.transaction({"refs/t/a": (two, one), "refs/t/b": (two, one)})
    assert repo.refs("refs/t/") == {"a": (two, "m"), "b": (two, "m")}


def test_ref_table_and_commit_graph_read_many_refs_and_chains_at_once(repo: Git) -> None:
    first = _import_blobs(repo, [b"1"])
    second = _import_blobs(repo, [b"2"], parent=first)
    blob = repo.run("hash-object", "-w", "--stdin", input=b"junk\n").decode().strip()
    repo.transaction({"refs/s/one": (first, ZERO), "refs/s/two": (second, ZERO), "refs/s/junk": (blob, ZERO)})
    table = repo.ref_table("refs/s/", "refs/heads/")
    assert table == {
        "refs/heads/x": (second, "commit", "m"),
        "refs/s/junk": (blob, "blob", ""),
        "refs/s/one": (first, "commit", "m"),
        "refs/s/two": (second, "commit", "m"),
    }
    assert repo.commit_graph([first, second]) == {first: ([], "m"), second: ([first], "m")}
    assert repo.commit_graph([]) == {}
