"""Derived titles in the heads cache (porcelain/session/heads.py with naming.title_from_start): kept while the
log bytes they came from are unchanged, made again when they move, never made from a damaged blob."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.untitled import written_before_titles
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.history import naming
from sessionstore.porcelain.session.heads import HeadsCache
from sessionstore.porcelain.store import SessionStore


def _age(store: SessionStore) -> None:
    """Date every log 60 s back: settled, so the next listing caches it."""
    past = time.time() - 60
    for path in store.logs_dir.glob("*.jsonl"):
        os.utime(path, (past, past))


def _turn(text: str) -> list[Any]:
    return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(f"on it: {text}")])]


class Counted:
    """`naming.title_from_start`, counting the sessions it derives a title for."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, store: Any, name: str, start: bytes, whole: bool, head: Any) -> tuple[str, int] | None:
        self.calls.append(name)
        return naming.title_from_start(store, name, start, whole, head)


def _titles(store: SessionStore, titler: Any = naming.title_from_start) -> dict[str, str | None]:
    return {row[0]: row[2] for row in HeadsCache(store).listing(titler, lambda head: [], "t")}


def _truth(store: SessionStore) -> dict[str, str]:
    return {name: naming.derived_title(store, name) for name in store.sessions()}


def test_a_title_is_kept_across_appends_and_made_again_when_the_first_lines_change(tmp_path: Path) -> None:
    """For logs written before the `title` field, whose titles come from blobs; a recorded title
    is read again from the log's first line instead (no blob)."""
    store = SessionStore.open(tmp_path / "store", warm=False)
    with written_before_titles():
        store.session("a").append(_turn("fix the login bug"), compact=False)
        store.session("b").append(_turn("<command-name>/clear</command-name>"), compact=False)  # no request
    store.session("c").append(_turn("tidy the docs"), compact=False)
    _age(store)
    counted = Counted()
    first = {"a": "fix the login bug", "b": "", "c": "tidy the docs"}
    assert _titles(store, counted) == first == _truth(store)
    with written_before_titles():
        store.session("a").append(_turn("and the logout one"), compact=False)
        store.session("b").append(_turn("write the release notes"), compact=False)
    store.session("c").append(_turn("and the tests"), compact=False)
    _age(store)
    counted.calls.clear()
    # a's title came from its first line, still there: kept; b's depended on lines still to come;
    # c's is recorded on its first line: read again from it
    assert _titles(store, counted) == {**first, "b": "write the release notes"}
    assert counted.calls == ["b", "c"] and _titles(store) == _truth(store)
    # the log replaced by another whose first line differs (a pull, a restore): made again
    shutil.copyfile(store.log("b").path, store.log("a").path)
    _age(store)
    counted.calls.clear()
    both = "write the release notes"
    assert _titles(store, counted) == {**first, "a": both, "b": both}
    assert _titles(store) == _truth(store)
    assert counted.calls == ["a", "c"]


def test_a_checkout_and_a_compaction_keep_the_title_the_first_lines_give(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store", warm=False)
    session = store.session("a")
    for text in ("plan the migration", "run it", "check it"):
        session.append(_turn(text), compact=False)
    _age(store)
    assert _titles(store) == {"a": "plan the migration"}
    with store.lock("a"):
        session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("summary: migrated")])], tier=2)
    _age(store)
    assert _titles(store) == {"a": "plan the migration"} == _truth(store)


def test_a_damaged_first_blob_gives_no_title_and_none_is_kept(tmp_path: Path) -> None:
    """A flipped byte in the request's text must not become the title (it would misname the
    session): no title is shown, none is cached, and once the blob is whole again the title is back.
    (A log written before the `title` field: its title comes from the blob.)"""
    store = SessionStore.open(tmp_path / "store", warm=False)
    with written_before_titles():
        store.session("a").append(_turn("deploy the billing service"), compact=False)
    _age(store)
    head = store.log("a").head()
    assert head is not None and head.blob is not None
    path = store.objects.path(head.blob)
    good = path.read_bytes()
    at = good.index(b"billing")
    path.chmod(0o644)
    path.write_bytes(good[:at] + b"f" + good[at + 1 :])  # "filling": still text, still JSON
    assert naming.derived_title(store, "a") == ""
    assert _titles(store) == {"a": ""}
    assert HeadsCache(store).load()["a"].title is None  # not kept: read again next time
    assert any(head.blob[:12] in problem for problem in store.fsck().problems)
    path.write_bytes(good)
    assert _titles(store) == {"a": "deploy the billing service"}


def test_a_missing_blob_or_a_log_that_is_no_file_never_crashes_the_listing(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store", warm=False)
    with written_before_titles():
        store.session("a").append(_turn("tidy the docs"), compact=False)
    head = store.log("a").head()
    assert head is not None and head.blob is not None
    store.objects.path(head.blob).unlink()
    assert _titles(store) == {"a": ""}
    assert naming.title_from_start(store, "a", b'{"blob": 7}\n', True) is None  # not an object id
    assert naming.title_from_start(store, "a", b"[1, 2]\n", True) == ("", -1)  # no commit there


def test_one_read_of_a_short_log_gives_the_head_log_head_gives(tmp_path: Path, monkeypatch: Any) -> None:
    """A log of at most 64 KiB is read once from its start for both its head and its title; its head
    is exactly `Log.head`'s, and a longer log, a torn tail or damage goes through `Log.head` itself."""
    store = SessionStore.open(tmp_path / "store", warm=False)
    store.session("short").append(_turn("one"), compact=False)
    long = store.session("long")
    for i in range(50):  # a commit line lists each message's size: 50 long lines, not 300 short ones
        long.append([ModelRequest(parts=[UserPromptPart(f"{i}:{j}")]) for j in range(400)], compact=False)
    assert store.log("long").path.stat().st_size > 1 << 16
    with open(store.log("short").path, "ab") as f:
        f.write(b'{"torn')  # a crash mid-append: ignored by readers
    heads_read: list[str] = []
    original = Log.head

    def counting(self: Log) -> Any:
        heads_read.append(self.session)
        return original(self)

    monkeypatch.setattr(Log, "head", counting)
    infos = {i.name: i for i in HeadsCache(store).infos(None, cached=False)}
    assert sorted(heads_read) == ["long", "short"]  # both need `Log.head`: one long, one torn
    monkeypatch.setattr(Log, "head", original)
    assert infos["long"].head == store.log("long").head() and infos["short"].head == store.log("short").head()
    store.session("plain").append(_turn("two"), compact=False)
    monkeypatch.setattr(Log, "head", counting)
    heads_read.clear()
    infos = {i.name: i for i in HeadsCache(store).infos(None, cached=False)}
    assert "plain" not in heads_read
    monkeypatch.setattr(Log, "head", original)
    assert infos["plain"].head == store.log("plain").head()
