"""porcelain/session/first_request.py: the title rules, and the `title` field that records a session's
title on the line where it is first known, so that a listing reads no blob for it.

The invariant: whatever a session's first commits hold, the title its lines record is the one reading
its blobs gives (a log written before the field), through the public API and `session list --json`;
a log begun before the field, or one whose later lines were, still gets the blob-derived title; a
damaged line carrying a title gives none."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    UserPromptPart,
)

from helpers.cli import run
from helpers.untitled import written_before_titles
from sessionstore.errors import CorruptObjectError
from sessionstore.porcelain.history import naming
from sessionstore.porcelain.session import first_request
from sessionstore.porcelain.session.first_request import FIELD, TITLE_COMMITS
from sessionstore.porcelain.session.heads import HEADS_FILE
from sessionstore.porcelain.store import SessionStore

PROMPTS: list[Any] = [
    "fix the login bug",
    "<command-name>/clear</command-name>",  # housekeeping: no request
    "<command-name>/review</command-name><command-args>pr 7</command-args>",
    "<system-reminder>be brief</system-reminder>",  # injected: no request
    "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>use uv</INSTRUCTIONS>",
    "notes.md\n## My request for Codex:\nsummarise the notes",
    "   ",
    "a request long enough to be cut at a word boundary when it becomes the session's title",
    ["look at this", "and this"],  # a list content: rendered as search renders it
    "ünïcödé — “quoted” request",
]


def _turn(prompt: Any, *, big: bool = False) -> list[ModelMessage]:
    """One turn: a request with `prompt`, a response; `big`: a 70 KB system prompt first, so the
    request lies past the first 64 KiB of the blob (no title from it, both ways)."""
    parts: list[Any] = [SystemPromptPart("x" * 70_000)] if big else []
    return [ModelRequest(parts=[*parts, UserPromptPart(prompt)]), ModelResponse(parts=[TextPart("ok")])]


def _apply(store: SessionStore, name: str, step: tuple[str, int, bool]) -> None:
    op, k, big = step
    session = store.session(name)
    if op == "turn" or session.head is None:
        session.append(_turn(PROMPTS[k % len(PROMPTS)], big=big), compact=False)
    elif op == "compact":
        with store.lock(name):
            session.commit_checkpoint(
                [ModelRequest(parts=[UserPromptPart(PROMPTS[k % len(PROMPTS)])])], tier=2
            )
    elif op == "checkout":
        log = session.log()
        session.checkout(log[k % len(log)])
    elif op == "fork" and not store.exists(f"{name}-f"):
        store.fork(name, f"{name}-f")


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["turn", "turn", "compact", "checkout", "fork"]),
        st.integers(0, 50),
        st.sampled_from([False, False, False, True]),
    ),
    min_size=1,
    max_size=TITLE_COMMITS + 3,
)


def _lines(store: SessionStore, name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in store.log(name).path.read_bytes().splitlines()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_the_recorded_title_is_the_one_the_blobs_give(steps: list[tuple[str, int, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        new = SessionStore.open(Path(tmp) / "new", warm=False)
        old = SessionStore.open(Path(tmp) / "old", warm=False)
        for step in steps:
            _apply(new, "s", step)
            with written_before_titles():
                _apply(old, "s", step)
        for name in new.sessions():
            assert naming.title(new, name) == naming.title(old, name)
            recorded = [line[FIELD] for line in _lines(new, name) if FIELD in line]
            assert all(FIELD not in line for line in _lines(old, name))
            # recorded on the first lines until one holds a request, never past TITLE_COMMITS
            assert recorded and len(recorded) <= TITLE_COMMITS and not any(recorded[:-1])
            assert recorded[-1] or len(recorded) == min(TITLE_COMMITS, len(_lines(new, name)))


def test_session_list_shows_the_same_titles_for_both_kinds_of_log(tmp_path: Path) -> None:
    """Through the CLI: every prompt kind, as a first turn and after a first turn holding no request."""
    roots = {"new": tmp_path / "new", "old": tmp_path / "old"}
    for kind, root in roots.items():
        store = SessionStore.open(root, warm=False)
        for i, prompt in enumerate(PROMPTS):
            with written_before_titles() if kind == "old" else nullcontext():
                store.session(f"first{i}").append(_turn(prompt), compact=False)
                later = store.session(f"later{i}")
                later.append(_turn("<command-name>/clear</command-name>"), compact=False)
                later.append(_turn(prompt), compact=False)
                store.session(f"big{i}").append(_turn(prompt, big=True), compact=False)
    listed = {kind: json.loads(run(root, "list", "--json").stdout) for kind, root in roots.items()}
    titles = {kind: {r["name"]: r["title"] for r in rows} for kind, rows in listed.items()}
    assert titles["new"] == titles["old"]
    assert titles["new"]["first0"] == "fix the login bug" and titles["new"]["later2"] == "/review pr 7"
    assert titles["new"]["first1"] == "" and titles["new"]["big0"] == ""


def test_a_rebuilt_listing_of_titled_logs_opens_no_blob(tmp_path: Path) -> None:
    """With every blob gone, `session list` (its heads cache removed first) still shows each title."""
    root = tmp_path / "store"
    store = SessionStore.open(root, warm=False)
    store.session("a").append(_turn("deploy the billing service"), compact=False)
    store.session("b").append(_turn("<command-name>/clear</command-name>"), compact=False)
    store.session("b").append(_turn("write the release notes"), compact=False)
    store.session("c").append(_turn("plan the migration"), compact=False)
    store.session("c").append(_turn("and run it"), compact=False)
    store.fork("c", "d")
    expected = {"a": "deploy the billing service", "b": "write the release notes"}
    expected |= {"c": "plan the migration", "d": "plan the migration"}
    shutil.rmtree(root / "objects")
    (root / "objects").mkdir()
    past = time.time() - 60  # settled: the listing caches every row
    for path in root.glob("logs/*.jsonl"):
        os.utime(path, (past, past))
    rows = json.loads(run(root, "list", "--json").stdout)
    assert {r["name"]: r["title"] for r in rows} == expected
    (root / HEADS_FILE).unlink()  # written by that listing: rebuilt by the next
    plain = run(root, "list").stdout
    assert all(title in plain for title in expected.values())


def test_a_log_begun_before_the_field_keeps_deriving_from_its_blobs(tmp_path: Path) -> None:
    """Lines appended by this code to an older log carry no title (the parent has none), and the
    title is still the blob-derived one; a titled log continued by older code is read from its blobs
    from its first untitled line on."""
    store = SessionStore.open(tmp_path / "store", warm=False)
    with written_before_titles():
        store.session("old").append(_turn("<command-name>/clear</command-name>"), compact=False)
    store.session("old").append(_turn("tidy the docs"), compact=False)
    assert all(FIELD not in line for line in _lines(store, "old"))
    assert naming.title(store, "old") == "tidy the docs"
    store.session("mixed").append(_turn("<command-name>/clear</command-name>"), compact=False)
    with written_before_titles():
        store.session("mixed").append(_turn("ship the release"), compact=False)
    assert [line.get(FIELD) for line in _lines(store, "mixed")] == ["", None]
    assert naming.title(store, "mixed") == "ship the release"


def test_a_damaged_line_carrying_a_title_gives_none(tmp_path: Path) -> None:
    """A flipped byte in a recorded title must not rename the session: the line's id is checked
    first, so no title is shown, and fsck names the line."""
    store = SessionStore.open(tmp_path / "store", warm=False)
    store.session("a").append(_turn("deploy the billing service"), compact=False)
    path = store.log("a").path
    good = path.read_bytes()
    at = good.index(b"billing")
    path.chmod(0o644)
    path.write_bytes(good[:at] + b"f" + good[at + 1 :])
    assert naming.title_from_start(store, "a", path.read_bytes(), True) is None
    assert not store.fsck().ok
    path.write_bytes(good)
    # read again from the line whenever the log changes (-1: not kept by the line's bytes)
    assert naming.title_from_start(store, "a", good, True) == ("deploy the billing service", -1)


def test_title_field_records_only_until_a_request_is_found() -> None:
    blob = b'{"kind":"request","parts":[{"part_kind":"user-prompt","content":"hello there"}]}\n'
    reads: list[str] = []

    class Objects:
        def read(self, oid: str) -> bytes:
            reads.append(oid)
            if oid != "b1":
                raise CorruptObjectError(f"object {oid} is missing")
            return blob

    objects = Objects()
    assert first_request.title_field(None, "b1", {}, objects, None) == {FIELD: "hello there"}
    assert first_request.title_field(None, "new", {}, objects, blob) == {FIELD: "hello there"}  # in hand
    assert first_request.title_field(None, "gone", {}, objects, None) == {}  # unreadable: no guess
    assert first_request.title_field(None, None, {"blobs": []}, objects, None) == {FIELD: ""}
    assert reads == ["b1", "gone"]

    class Parent:
        def __init__(self, seq: int, extra: dict[str, Any]) -> None:
            self.seq, self.extra = seq, extra

    reads.clear()
    assert first_request.title_field(Parent(1, {FIELD: "x"}), "b1", {}, objects, None) == {}  # found already
    assert first_request.title_field(Parent(1, {}), "b1", {}, objects, None) == {}  # an older log
    assert first_request.title_field(Parent(TITLE_COMMITS, {FIELD: ""}), "b1", {}, objects, None) == {}
    assert reads == []  # none of those read a blob
    assert first_request.title_field(Parent(TITLE_COMMITS - 1, {FIELD: ""}), "b1", {}, objects, None) == {
        FIELD: "hello there"
    }


def test_request_rules() -> None:
    assert first_request.request_text("<command-name>/clear</command-name>") is None
    assert first_request.shorten_title("word " * 30) == ("word " * 11).strip() + "…"
    assert first_request.first_request(b"no prompt here") == ""
