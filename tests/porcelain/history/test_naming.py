"""porcelain/history/naming.py: rm (reversible until gc), rename (atomic, both locks, refs move), titles."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.cli import snapshot
from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.accounting.settings import Settings
from sessionstore.errors import LockTimeout, SessionStoreError, UnknownRevision
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.history import naming
from sessionstore.porcelain.session import first_request
from sessionstore.porcelain.store import SessionStore


def _prompt(text: str) -> list:
    return [ModelRequest(parts=[UserPromptPart(text)]), *tagged_turn(0, 0)[1:]]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store", settings=Settings(lock_timeout_s=0.2))
    session = store.session("fix-auth")
    session.append(_prompt("Add a 30 s leeway to verify_token and a test for the expired-token path"))
    summary = [ModelRequest(parts=[UserPromptPart("# Conversation summary\n## Goal\nleeway")])]
    with store.lock("fix-auth"):
        session.commit_checkpoint(summary, tier=2)
    session.append(tagged_turn(0, 1), compact=False)
    store.session("other").append(tagged_turn(1, 1), compact=False)
    return store


def test_rm_then_undo_gives_back_every_byte(store: SessionStore) -> None:
    before = snapshot(store.root)
    entry = naming.remove(store, "fix-auth")
    assert not store.exists("fix-auth") and store.sessions() == ["other"]
    assert not (store.refs.dir / "fix-auth").exists() and store.fsck().ok
    assert [e.name for e in naming.removed(store)] == ["fix-auth"] and entry.path.is_dir()
    naming.undo_remove(store, "fix-auth")
    after = {k: v for k, v in snapshot(store.root).items() if not k.startswith("trash")}
    assert after == before and store.fsck().ok
    assert store.resolve("checkpoints/fix-auth/1").kind == "compaction"
    with pytest.raises(SessionStoreError, match="no removed session 'fix-auth'"):
        naming.undo_remove(store, "fix-auth")


def test_rm_keeps_its_blobs_for_the_grace_period_then_gc_deletes_entry_and_blobs(store: SessionStore) -> None:
    import os
    import time

    for oid in store.objects:  # blobs written long ago: only the trash entry's age may protect them
        os.utime(store.objects.path(oid), (time.time() - 30 * 86400,) * 2)
    naming.remove(store, "fix-auth")
    kept = store.gc(grace_days=14)
    assert kept.removed == [] and kept.trash_removed == []  # removed just now: undo must still work
    naming.undo_remove(store, "fix-auth")
    assert store.fsck().ok
    entry = naming.remove(store, "fix-auth")
    dry = store.gc(grace_days=0, dry_run=True)
    assert dry.trash_removed == [f"fix-auth.{entry.when}"] and entry.path.is_dir()  # a dry run keeps it
    done = store.gc(grace_days=0)
    assert done.removed and done.trash_removed == [f"fix-auth.{entry.when}"] and not entry.path.exists()
    with pytest.raises(SessionStoreError, match="no removed session 'fix-auth' to restore"):
        naming.undo_remove(store, "fix-auth")
    assert not store.exists("fix-auth") and store.fsck().ok


def test_undo_refuses_when_a_blob_it_needs_is_gone(store: SessionStore) -> None:
    entry = naming.remove(store, "fix-auth")
    blob = next(c.blob for c in Log(entry.path, "log").scan(since_reset=False)[0] if c.blob)
    store.objects.path(blob).unlink()  # lost some other way than gc (gc keeps it for the grace period)
    with pytest.raises(SessionStoreError, match=r"`session gc` has removed 1 of its blobs"):
        naming.undo_remove(store, "fix-auth")
    assert not store.exists("fix-auth") and entry.path.is_dir()


def test_undo_refuses_when_the_name_is_taken_again(store: SessionStore) -> None:
    naming.remove(store, "other")
    store.session("other").append(tagged_turn(2, 2), compact=False)
    with pytest.raises(SessionStoreError, match="exists again: rename it first"):
        naming.undo_remove(store, "other")


def test_rename_moves_the_log_refs_and_title(store: SessionStore) -> None:
    naming.set_title(store, "fix-auth", "the auth work")
    head = store.log("fix-auth").head()
    naming.rename(store, "fix-auth", "auth")
    assert store.sessions() == ["auth", "other"] and store.log("auth").head().id == head.id
    assert store.resolve("checkpoints/auth/1").session == "auth"
    assert naming.title(store, "auth") == "the auth work" and store.fsck().ok
    assert store.session("auth").persisted_count == head.count  # replays from the moved checkpoint
    with pytest.raises(UnknownRevision):
        store.resolve("fix-auth")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("fix-auth", "other", "'other' already exists"),
        ("fix-auth", "fix-auth", "already has that name"),
        ("fix-auth", "../x", "invalid session name"),
        ("nope", "x", "no session 'nope'"),
    ],
)
def test_refused_renames_change_nothing(store: SessionStore, old: str, new: str, words: str) -> None:
    before = snapshot(store.root)
    with pytest.raises(SessionStoreError, match=words):
        naming.rename(store, old, new)
    assert snapshot(store.root) == before


def test_rename_waits_for_both_locks_held_by_another_process(store: SessionStore) -> None:
    before = snapshot(store.root)
    for held in ("fix-auth", "auth"):
        holder = spawn("hold_lock.py", store.root, held, stdin=subprocess.PIPE)
        try:
            assert holder.stdout and holder.stdout.readline().strip() == "locked"
            with pytest.raises(LockTimeout, match=f"session '{held}' is locked"):
                naming.rename(store, "fix-auth", "auth")
        finally:
            assert holder.stdin
            holder.stdin.close()
            holder.wait(timeout=10)
        assert snapshot(store.root) == before


def test_titles_skip_what_the_harness_said() -> None:
    assert first_request.request_text("<command-name>/clear</command-name>") is None
    assert first_request.request_text("Caveat: The messages below were generated by the user") is None
    slash = "<command-message>x</command-message>\n<command-name>/review</command-name>"
    slash += "<command-args>pr 7</command-args>"
    assert first_request.request_text(slash) == "/review pr 7"
    codex = "# Files mentioned by the user:\n\n## a.vtt: /x\n\n## My request for Codex:\nsummarise it\n"
    assert first_request.request_text(codex).strip() == "summarise it"
    assert first_request.shorten_title("word " * 30) == ("word " * 11).strip() + "…"
    assert len(first_request.shorten_title("x" * 200)) == first_request.TITLE_CHARS


def test_title_is_derived_set_and_cleared(store: SessionStore) -> None:
    derived = "Add a 30 s leeway to verify_token and a test for the…"
    assert naming.title(store, "fix-auth") == derived
    naming.set_title(store, "fix-auth", "  leeway\n work ")
    assert naming.title(store, "fix-auth") == "leeway work"
    naming.set_title(store, "fix-auth", "")
    assert naming.title(store, "fix-auth") == derived
    with pytest.raises(UnknownRevision):
        naming.set_title(store, "nope", "x")


KILLS = 8


def _where(store: SessionStore, names: tuple[str, str]) -> list[str]:
    """Every place a copy of the session's log is: a live name, or a trash entry."""
    live = [n for n in names if store.log(n).path.exists()]
    return live + [f"trash/{e.path.name}" for e in naming.removed(store) if (e.path / "log.jsonl").exists()]


def test_kill_9_during_rm_and_rename_leaves_the_session_whole_at_one_place(store: SessionStore) -> None:
    """Real `session rename` / `rm` / `rm --undo` commands killed with SIGKILL at random instants: the
    log is always at exactly one place, `fsck --repair` finishes what the kill cut (the journalled move),
    and then the session is whole: its log, refs and set title at one name, or all of it in the trash
    for `rm --undo`; nothing is left at the other name."""
    import random
    import signal
    import time

    names = ("fix-auth", "auth")
    naming.set_title(store, "fix-auth", "the auth work")
    log, ref = store.log("fix-auth").path.read_bytes(), (store.refs.dir / "fix-auth" / "1").read_bytes()
    history = store.session("fix-auth").history
    rng = random.Random(15)
    interrupted = 0
    for kill in range(KILLS):
        child = spawn("naming_loop.py", store.root, *names, ("rename", "rm")[kill % 2])
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.02))
        child.kill()
        assert child.wait(timeout=10) == -signal.SIGKILL, f"kill {kill}: the loop ended on its own"
        where = _where(store, names)
        assert len(where) == 1, f"kill {kill}: the log is at {where}"  # never lost, never doubled
        repaired = store.fsck(repair=True).repaired
        interrupted += any("interrupted" in line for line in repaired)
        report = store.fsck()
        assert report.ok, f"kill {kill}: {report.problems}"
        if where[0].startswith("trash/"):  # removed: `rm --undo` brings all of it back
            naming.undo_remove(store, where[0].removeprefix("trash/").rpartition(".")[0])
        (name,) = [n for n in names if store.exists(n)]
        other = names[1 - names.index(name)]
        assert store.log(name).path.read_bytes() == log and (store.refs.dir / name / "1").read_bytes() == ref
        assert naming.title(store, name) == "the auth work", f"kill {kill}: the title did not follow"
        assert not (store.refs.dir / other).exists() and not (store.root / "titles" / other).exists()
        assert all((e.path / "log.jsonl").is_file() for e in naming.removed(store)), "an empty trash entry"
        assert not [p.name for p in (store.root / "trash").iterdir() if p.name.startswith(".moving-")]
    print(f"{KILLS} kills, {interrupted} of them mid-move")
    assert store.session(name).history == history and store.fsck().ok
    store.gc(grace_days=0)  # a journal's temp file a kill cut mid-write is gc's, like a ref's
    assert not [p.name for p in (store.root / "trash").iterdir()] and not store.fsck().notes
