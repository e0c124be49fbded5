"""fsck names every kind of damage and repairs only what is derivable; gc removes only unreachable blobs."""

from __future__ import annotations

import os
import time

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import tagged_turn
from sessionstore.errors import CorruptLogError, CorruptObjectError, SessionStoreError
from sessionstore.porcelain.maintenance import fsck, gc
from sessionstore.porcelain.store import SessionStore


def flip(path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.fixture
def filled(store: SessionStore) -> SessionStore:
    session = store.session("a")
    for i in range(4):
        session.append(tagged_turn(0, i))
    with store.lock("a"):
        session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("sum")])], tier=2)
    session.append(tagged_turn(0, 4))
    store.session("b").append(tagged_turn(1, 0))
    return store


def test_a_healthy_store_passes(filled: SessionStore) -> None:
    steps: list[tuple[int, int]] = []
    report = fsck(filled, progress=lambda done, total: steps.append((done, total)))
    assert report.ok and (report.sessions, report.commits) == (2, 7)
    assert report.objects == len(list(filled.objects)) == 7
    assert steps == [(1, 2), (2, 2)]


def test_a_flipped_byte_in_a_blob_is_named_by_load_and_fsck(filled: SessionStore) -> None:
    blob = filled.session("a").head.blob
    flip(filled.objects.path(blob), 5)
    with pytest.raises(CorruptObjectError, match=blob[:12]):
        filled.session("a")
    report = filled.fsck(repair=True)
    assert [p for p in report.problems if blob[:12] in p and p.startswith("a@6")]
    assert not report.repaired  # nothing to rebuild: blobs are not derivable


def test_a_missing_blob_is_named(filled: SessionStore) -> None:
    blob = filled.session("b").head.blob
    os.unlink(filled.objects.path(blob))
    with pytest.raises(CorruptObjectError, match=f"{blob[:12]} is missing"):
        filled.session("b")
    assert any("b@1" in p and "missing" in p for p in filled.fsck().problems)


def test_a_flipped_byte_mid_log_is_named_by_load_and_fsck(filled: SessionStore) -> None:
    # Line 6 follows the reset point (line 5), so a load must read it; a 7th line makes it mid-file.
    path = filled.log("a").path
    filled.session("a").append(tagged_turn(0, 5))
    lines = path.read_bytes().splitlines(keepends=True)
    offset = sum(map(len, lines[:5])) + lines[5].index(b'"count"') + 2
    flip(path, offset)  # inside line 6, which is not the last line
    with pytest.raises(CorruptLogError, match="session 'a' is damaged at line 6"):
        filled.session("a")
    report = filled.fsck(repair=True)
    assert any("'a'" in p and "line 6" in p for p in report.problems) and not report.repaired
    assert filled.session("b").persisted_count == 2  # other sessions still load
    with pytest.raises(SessionStoreError, match="gc refused"):
        filled.gc(grace_days=0)


def test_damage_before_the_reset_point_is_still_found_by_fsck(filled: SessionStore) -> None:
    path = filled.log("a").path
    flip(path, path.read_bytes().index(b'"count"') + 2)  # line 1: loads never reach it
    assert filled.session("a").persisted_count == 3
    assert any("line 1" in p for p in filled.fsck().problems)


def test_a_wrong_count_is_reported(store: SessionStore) -> None:
    from sessionstore.plumbing.logs import make_line

    session = store.session("s")
    session.append(tagged_turn(0, 0))
    line, body = make_line(
        parent=session.head, kind="turn", blob=session.head.blob, count=99, tokens=0, usage=None,
        extra={"sizes": [1, 1]},
    )  # fmt: skip
    store.log("s").append(line, body, session.head)
    assert any("commit says 99 messages, its blobs hold 4" in p for p in store.fsck().problems)


def test_fsck_repair_recreates_a_deleted_checkpoint_ref(filled: SessionStore) -> None:
    ref = filled.refs.dir / "a" / "1"
    content = ref.read_bytes()
    ref.unlink()
    assert any("checkpoints/a/1 is missing" in p for p in filled.fsck().problems)
    report = filled.fsck(repair=True)
    assert report.repaired == ["a: recreated checkpoints/a/1"] and report.ok
    assert ref.read_bytes() == content and filled.fsck().ok
    assert filled.resolve("checkpoints/a/1").kind == "compaction"


def test_mismatching_and_stray_refs_are_reported(filled: SessionStore) -> None:
    filled.refs.create("a", 2, "f" * 64, 0)
    (filled.refs.dir / "a" / "1").write_text(f"{'e' * 64} 0\n")  # rewritten behind the store's back
    report = filled.fsck(repair=True)
    assert any("checkpoints/a/2 has no compaction commit" in p for p in report.problems)
    assert any("checkpoints/a/1 points at eeeeeeeeeeee" in p for p in report.problems)
    assert not report.repaired


def test_fsck_repair_cuts_a_torn_tail(filled: SessionStore) -> None:
    path = filled.log("b").path
    with open(path, "ab") as f:
        f.write(b'{"half')
    assert any("torn last line" in p for p in filled.fsck().problems)
    assert filled.fsck(repair=True).repaired == ["b: truncated a torn last line"]
    assert filled.fsck().ok and path.read_bytes().endswith(b"\n")


def test_an_unreachable_corrupt_blob_is_reported(filled: SessionStore) -> None:
    oid = filled.objects.write(b"orphan\n")
    flip(filled.objects.path(oid), 0)
    assert any(p.startswith("unreachable") and oid[:12] in p for p in filled.fsck().problems)


# -- gc -------------------------------------------------------------------------------------------------


def age(store: SessionStore, days: float) -> None:
    past = time.time() - days * 86400
    for oid in store.objects:
        os.utime(store.objects.path(oid), (past, past))


def test_gc_removes_only_unreachable_blobs(filled: SessionStore) -> None:
    session = filled.session("a")
    session.checkout("a@2")  # turns 3..4, the checkpoint and turn 5 stay reachable through the log
    orphans = [filled.objects.write(f"orphan {i}\n".encode()) for i in range(3)]
    histories = {n: filled.session(n).history for n in filled.sessions()}
    reachable = set(filled.objects) - set(orphans)

    dry = filled.gc(grace_days=0, dry_run=True)
    assert sorted(dry.removed) == sorted(orphans) and set(filled.objects) == reachable | set(orphans)

    report = gc(filled, grace_days=0)
    assert sorted(report.removed) == sorted(orphans) and report.freed_bytes == sum(
        len(f"orphan {i}\n") for i in range(3)
    )
    assert set(filled.objects) == reachable and report.reachable == len(reachable)
    assert {n: filled.session(n).history for n in filled.sessions()} == histories
    assert filled.fsck().ok


def test_gc_spares_young_blobs_and_touched_ones(filled: SessionStore) -> None:
    old = filled.objects.write(b"old orphan\n")
    young = filled.objects.write(b"young orphan\n")
    age(filled, 30)
    filled.objects.write(b"young orphan\n")  # rewritten: its mtime is touched, gc must spare it
    report = filled.gc()
    assert report.removed == [old] and report.kept_young == 1 and filled.objects.exists(young)
    with pytest.raises(SessionStoreError, match="≥ 0 days"):
        filled.gc(grace_days=-1)


def test_gc_removes_old_stray_temps(filled: SessionStore) -> None:
    oid = next(iter(filled.objects))
    stray = filled.objects.path(oid).parent / ".tmp-crash"
    stray.write_bytes(b"half")
    filled.gc(grace_days=0)
    assert stray.exists()  # young: a writer may still be using it
    os.utime(stray, (time.time() - 7200,) * 2)
    filled.gc(grace_days=0, dry_run=True)
    assert stray.exists()
    filled.gc(grace_days=0)
    assert not stray.exists()


def test_gc_skips_a_temp_its_writer_removed_meanwhile(
    filled: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writers take no store lock: a temp listed by gc may be linked and unlinked before gc stats it,
    # which once raised FileNotFoundError after gc had already deleted blobs.
    gone = filled.objects.dir / "ab" / ".tmp-finished"
    monkeypatch.setattr(type(filled.objects), "stray_temps", lambda self: iter([gone]))
    orphan = filled.objects.write(b"orphan\n")
    age(filled, 30)
    assert filled.gc(grace_days=14).removed == [orphan]


@pytest.mark.parametrize("grace", [float("nan"), "7", None, True])
def test_gc_refuses_a_grace_period_that_is_not_a_number_of_days(filled: SessionStore, grace: object) -> None:
    orphan = filled.objects.write(b"orphan\n")
    age(filled, 30)
    with pytest.raises(SessionStoreError, match="≥ 0 days"):
        filled.gc(grace_days=grace)  # type: ignore[arg-type]
    assert filled.objects.exists(orphan)  # nan compares false: it would have kept nothing


def test_a_stray_log_is_an_fsck_problem_and_stops_gc(filled: SessionStore) -> None:
    name = filled.sessions()[0]
    stray = filled.logs_dir / f"{name} (1).jsonl"  # a renamed copy: its blobs must not look unreachable
    stray.write_bytes((filled.logs_dir / f"{name}.jsonl").read_bytes())
    report = fsck(filled)
    assert not report.ok and any(f"logs/{stray.name} is not a session log" in p for p in report.problems)
    objects = set(filled.objects)
    with pytest.raises(SessionStoreError, match=r"gc refused: logs/.* is not a session log"):
        filled.gc(grace_days=0)
    assert set(filled.objects) == objects


# -- gc against writers that take no store lock ------------------------------------------------------


def _old_unreachable_blob(store: SessionStore) -> tuple[str, bytes]:
    import os

    data = b'{"orphan": true}\n'
    oid = store.objects.write(data)
    os.utime(store.objects.path(oid), (1_000_000, 1_000_000))
    return oid, data


def test_gc_keeps_a_blob_a_writer_touches_just_before_it_is_pruned(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    oid, data = _old_unreachable_blob(store)
    real_rename = os.rename

    def writer_touches_first(src, dst):  # type: ignore[no-untyped-def]
        store.objects.write(data)  # a writer reusing the object, between gc's stat and its rename
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", writer_touches_first)
    report = store.gc(grace_days=1)
    assert oid not in report.removed and store.objects.read(oid) == data


def test_a_writer_after_the_rename_writes_the_blob_again(store: SessionStore) -> None:
    import os

    oid, data = _old_unreachable_blob(store)
    path = store.objects.path(oid)
    trash = path.with_name(".gc-" + path.name)
    os.rename(path, trash)  # gc renamed it aside...
    assert store.objects.write(data) == oid  # ...a writer needs it now: written anew, not lost
    assert store.objects.read(oid) == data


def test_a_crashed_prune_is_restored_on_read_and_cleaned_by_the_next_gc(store: SessionStore) -> None:
    import os

    oid, data = _old_unreachable_blob(store)
    path = store.objects.path(oid)
    os.rename(path, path.with_name(".gc-" + path.name))  # crash between rename and unlink
    assert store.objects.read(oid) == data, "read restores what a log may still need"
    os.rename(path, path.with_name(".gc-" + path.name))
    store.gc(grace_days=0)
    assert not list(store.objects.pruning_leftovers()) and not path.exists()
