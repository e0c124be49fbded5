"""The store's API and the CLI on object storage: `SessionStore.open("s3://bucket/prefix")` against a
real S3 API server (moto on 127.0.0.1), and URLs that hold no store refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.messages import tagged_turn
from helpers.s3_server import S3Server
from sessionstore.cli.main import cli
from sessionstore.errors import SessionStoreError, StaleSessionError
from sessionstore.plumbing.object_logs import flush_hints
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def url(s3_env: S3Server) -> str:
    return f"s3://{s3_env.bucket()}/team/sessions"


@pytest.mark.parametrize("bad", ["ftp://host/x", "file:///tmp/x", "http://127.0.0.1:1/x"])
def test_a_url_that_holds_no_store_is_refused_in_one_line(bad: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SessionStoreError, match="a store is a directory or an object-storage URL") as err:
        SessionStore.open(bad)
    assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []  # no local directory named after the URL


def test_a_url_made_into_a_path_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SessionStoreError, match="looks like a URL turned into a path"):
        SessionStore.open(Path("s3://bucket/x"))  # Path collapses the // : "s3:/bucket/x"
    assert list(tmp_path.iterdir()) == []


def test_sessions_live_on_s3(url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SessionStore.open(url, warm=False)
    s = store.session("chat")
    for i in range(4):
        s.append(tagged_turn(0, i, size=2))
    compaction = s.compact()
    s.append(tagged_turn(0, 9, size=1))
    again = SessionStore.open(url, warm=False).session("chat")  # another process's view: same bytes
    assert again.history == s.history and again.persisted_count == s.persisted_count
    assert [c.seq for c in again.log()] == [6, 5, 4, 3, 2, 1]
    assert store.refs.list("chat")[0].commit_id == compaction.id
    assert store.resolve("checkpoints/chat/1").id == compaction.id
    again.checkout("chat@3")
    assert again.persisted_count == 6
    with pytest.raises(StaleSessionError):
        s.append(tagged_turn(0, 10, size=1))  # `s` loaded the head `again` moved on from
    fork = store.fork("chat@2", "chat-b")
    assert fork.history == SessionStore.open(url, warm=False).session("chat-b").history
    flush_hints()
    infos = {i.name: i for i in store.infos()}
    assert sorted(infos) == ["chat", "chat-b"] and infos["chat"].head.kind == "checkout"
    assert infos["chat"].checkpoints == 1
    assert store.fsck().ok
    young = store.gc()  # the refused append's blob is an orphan, younger than the grace period
    assert (young.removed, young.kept_young, young.reachable) == ([], 1, 6)
    report = store.gc(grace_days=0)
    assert len(report.removed) == 1 and report.reachable == 6
    assert store.fsck().ok and SessionStore.open(url, warm=False).session("chat").history == again.history
    assert list(tmp_path.iterdir()) == []  # nothing local


def test_the_environment_names_the_store(url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SESSIONSTORE_DIR", url)
    SessionStore.open(warm=False).session("x").append(tagged_turn(0, 0, size=1))
    flush_hints()
    result = CliRunner().invoke(cli, ["list"], env={"SESSIONSTORE_DIR": url})
    assert result.exit_code == 0 and "x " in result.output
    result = CliRunner().invoke(cli, ["--store", url, "log", "x"])
    assert result.exit_code == 0 and "x@1" in result.output
    result = CliRunner().invoke(cli, ["--store", "ftp://nowhere/x", "list"])
    assert result.exit_code == 2 and "ftp:// is neither" in result.output


def test_commands_that_need_a_directory_are_refused_in_one_line(
    url: str, tmp_path: Path, monkeypatch
) -> None:
    """rm (and its trash), rename and titles, import, push and pull: refused on object storage with
    exit 2, one line naming the command and why, and nothing changed."""
    monkeypatch.chdir(tmp_path)
    store = SessionStore.open(url, warm=False)
    store.session("chat").append(tagged_turn(0, 0, size=2))
    before = [c.id for c in store.session("chat").log()]
    commands = {
        "`session rm`": ["rm", "chat"],
        "`session rm --list`": ["rm", "--list"],
        "`session rm --undo`": ["rm", "--undo", "chat"],
        "`session rename`": ["rename", "chat", "chat2"],
        "`session rename --title`": ["rename", "chat", "--title", "Fix the login"],
        "`session import`": ["import", "--example", "--as", "ex"],
        "`session push`": ["push"],
        "`session pull`": ["pull"],
    }
    for what, args in commands.items():
        result = CliRunner().invoke(cli, ["--store", url, *args])
        assert result.exit_code == 2, (args, result.output)
        [line] = result.output.strip().splitlines()
        assert line.startswith(f"session: {what} needs a store directory: {url} is on object storage, where ")
        assert line.endswith("; nothing was changed")
    after = SessionStore.open(url, warm=False)
    assert after.sessions() == ["chat"] and [c.id for c in after.session("chat").log()] == before
    assert list(tmp_path.iterdir()) == []  # nothing local
