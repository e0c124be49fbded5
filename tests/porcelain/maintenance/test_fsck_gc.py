"""fsck names every kind of damage and repairs only what is derivable; gc removes only unreachable blobs."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.errors import CorruptLogError, CorruptObjectError, SessionStoreError
from sessionstore.porcelain.maintenance.fsck_gc import fsck, gc
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
    from sessionstore.plumbing.commits import make_line

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


# -- gc against real writer processes at grace 0 (DESIGN §2: writers and gc exclude each other) --------

GC_WRITERS = 4
GC_COMMITS = 500


@pytest.mark.slow
def test_gc_at_grace_zero_never_deletes_a_blob_a_writer_is_committing(store: SessionStore) -> None:
    from helpers.procs import spawn

    turns = GC_COMMITS // GC_WRITERS
    children = [spawn("appender.py", store.root, f"g{w}", w, turns) for w in range(GC_WRITERS)]
    runs = 0
    try:
        while any(child.poll() is None for child in children) or runs == 0:
            gc(store, grace_days=0)  # a blob written but not yet committed is exactly what gc must spare
            runs += 1
            time.sleep(0.05)  # a loop, not a siege: writers get in between runs
    finally:
        outputs = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0] * GC_WRITERS
    assert runs >= 5, f"gc ran {runs} times: it never raced the writers"
    report = fsck(store)
    assert report.ok, report.problems[:5]  # 0 missing blobs
    for w, out in enumerate(outputs):
        assert out.split()[1:] == [str(seq) for seq in range(1, turns + 1)]  # every seq acknowledged
        session = store.session(f"g{w}")
        assert session.persisted_count == sum(1 + i % 3 for i in range(turns))
    assert report.commits == GC_COMMITS


# -- damage that looks like a torn tail (DESIGN §2: only a last line without its newline is one) --------


def test_fsck_names_a_flipped_byte_in_the_last_line_and_repair_cuts_nothing(filled: SessionStore) -> None:
    path = filled.log("a").path
    flip(path, len(path.read_bytes()) - 30)  # inside the last (newline-terminated) line
    damaged = path.read_bytes()
    report = filled.fsck(repair=True)
    assert any("'a'" in p and "line 6" in p and "restore" in p for p in report.problems)
    assert not report.repaired and path.read_bytes() == damaged
    with pytest.raises(CorruptLogError, match="line 6"):
        filled.session("a")


def test_fsck_repair_says_what_it_cuts_and_why(filled: SessionStore) -> None:
    path = filled.log("b").path
    with open(path, "ab") as f:
        f.write(b'{"half')
    assert any("torn last line (6 bytes without a newline" in p for p in filled.fsck().problems)
    [said] = filled.fsck(repair=True).repaired
    assert said.startswith("b: cut 6 bytes at the end of logs/b.jsonl: a last line without its newline")
    assert filled.fsck().ok


def test_a_log_truncated_mid_history_is_named_by_its_checkpoint_ref(filled: SessionStore) -> None:
    path = filled.log("a").path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))  # lines 4.. (the checkpoint among them) are gone, on a boundary
    report = filled.fsck(repair=True)
    assert any("acknowledged commits are missing" in p and "checkpoints/a/1" in p for p in report.problems)
    assert path.read_bytes() == b"".join(lines[:3])
    with pytest.raises(SessionStoreError, match="acknowledged commits are missing"):
        filled.resolve("checkpoints/a/1")


# -- hostile file systems ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sub", ["locks", "logs", "objects", "refs"])
def test_a_symlinked_store_directory_is_refused_and_nothing_lands_outside(
    filled: SessionStore, tmp_path, sub: str
) -> None:
    import shutil

    real = filled.root / sub
    outside = tmp_path / f"outside-{sub}"
    shutil.copytree(real, outside, symlinks=True)
    shutil.rmtree(real)
    real.symlink_to(outside)
    before = sorted(p.relative_to(outside) for p in outside.rglob("*") if ".lock" not in p.name)
    if sub == "refs":  # a plain turn touches no ref: a checkpoint does
        with pytest.raises(
            SessionStoreError, match=r"refs is a symlink: nothing is read or written through it"
        ):
            filled.refs.create("a", 2, "f" * 64, 0)
        with pytest.raises(SessionStoreError, match=r"refs is a symlink"):
            filled.resolve("checkpoints/a/1")
    else:
        with pytest.raises(
            SessionStoreError, match=rf"{sub} is a symlink: nothing is read or written through it"
        ):
            filled.session("a").append(tagged_turn(0, 9))
        with pytest.raises(SessionStoreError, match=rf"{sub} is a symlink"):
            filled.session("new").append(tagged_turn(0, 9))
    report = filled.fsck()
    assert any(f"{sub} is a symlink" in p for p in report.problems)
    with pytest.raises(SessionStoreError, match=rf"gc refused: .*{sub} is a symlink"):
        filled.gc(grace_days=0)
    after = sorted(p.relative_to(outside) for p in outside.rglob("*") if ".lock" not in p.name)
    assert after == before  # nothing was written through the link


def test_fsck_lists_every_non_regular_object_instead_of_hanging(filled: SessionStore, tmp_path) -> None:
    # Two fan-out directories no blob uses (blob names vary with the commit times: "ee" once existed).
    free = [f"{i:02x}" for i in range(255, -1, -1) if not (filled.objects.dir / f"{i:02x}").exists()]
    fan = filled.objects.dir / free[0]
    fan.mkdir()
    os.mkfifo(fan / ("1" * 62))
    (fan / ("2" * 62)).symlink_to("/dev/zero")
    (fan / ("3" * 62)).mkdir()
    (filled.objects.dir / free[1]).symlink_to(tmp_path)
    report = fsck(filled)
    kinds = sorted(p.split(" is ")[1].split(",")[0] for p in report.problems if p.startswith("objects/"))
    assert kinds == ["a FIFO", "a directory", "a symlink", "a symlink"], report.problems


def test_a_non_ascii_byte_in_a_checkpoint_ref_is_one_line_everywhere(filled: SessionStore) -> None:
    ref = filled.refs.dir / "a" / "1"
    data = bytearray(ref.read_bytes())
    data[3] = 0xE9
    ref.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match=r"checkpoints/a/1 is malformed \(a non-ASCII byte 0xe9"):
        filled.resolve("checkpoints/a/1")
    report = fsck(filled)
    assert any("checkpoints/a/1 is malformed" in p for p in report.problems)
    repaired = fsck(filled, repair=True)
    assert repaired.repaired == ["a: rewrote the malformed checkpoints/a/1"] and fsck(filled).ok
    assert filled.resolve("checkpoints/a/1").kind == "compaction"


def test_a_ref_made_unreadable_does_not_make_append_raise_after_the_turn(tmp_path) -> None:
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.usage import RequestUsage

    from sessionstore.accounting.settings import Settings

    small = SessionStore.open(
        tmp_path / "s",
        settings=Settings(
            context_window_tokens=10_000, micro_keep_recent_tokens=500, keep_recent_tokens=2_000
        ),
    )
    session = small.session("c")
    with small.lock("c"):
        session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("sum")])], tier=2)
    ref = small.refs.dir / "c" / "1"
    ref.write_bytes(b"\xff" + ref.read_bytes()[1:])
    session = small.session("c")  # a fresh load reads the refs at its first compaction
    for i in range(6):
        session.append(tagged_turn(0, i))
    big = [
        ModelRequest(parts=[UserPromptPart("x = 1\n" * 300)]),
        ModelResponse(parts=[TextPart("ok")], usage=RequestUsage(input_tokens=9_000, output_tokens=5)),
    ]
    with pytest.warns(UserWarning, match=r"compaction failed.*checkpoints/c/1 is malformed"):
        commit = session.append(big)  # the cascade fires, reads the refs, and must not raise
    assert commit.kind == "turn" and small.session("c").head.id == commit.id


# -- unreadable turns are never acknowledged (DESIGN §2: decode before commit) ----------------------------


def _deep(depth: int) -> dict:
    args: dict = {}
    node = args
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return args


def test_a_turn_nested_too_deep_to_read_back_is_refused_before_anything_is_written(
    store: SessionStore,
) -> None:
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    from sessionstore.plumbing.codec import UnreadableMessages

    session = store.session("deep")
    session.append(tagged_turn(0, 0))
    objects = set(store.objects)
    log = store.log("deep").path.read_bytes()
    deep = [ModelResponse(parts=[ToolCallPart("t", _deep(200), tool_call_id="c")])]
    with pytest.raises(UnreadableMessages, match="nested too deeply"):
        session.append([ModelRequest(parts=[UserPromptPart("go")]), *deep])
    assert set(store.objects) == objects and store.log("deep").path.read_bytes() == log
    assert store.session("deep").persisted_count == session.persisted_count == 2
    assert fsck(store).ok


def test_fsck_reports_a_stored_blob_that_does_not_load(store: SessionStore) -> None:
    from sessionstore.plumbing.commits import make_line

    session = store.session("s")
    session.append(tagged_turn(0, 0))
    line = b'{"parts":[{"part_kind":"tool-call","tool_name":"t","args":' + b'{"a":' * 200 + b"1" + b"}" * 200
    oid = store.objects.write(line + b',"tool_call_id":"c"}],"kind":"response"}\n')
    body_line, body = make_line(
        parent=session.head, kind="turn", blob=oid, count=3, tokens=1, usage=None, extra={"sizes": [1]}
    )
    store.log("s").append(body_line, body, session.head)  # what an old writer could acknowledge
    report = fsck(store)
    assert any(p.startswith(f"s@2: object {oid[:12]} does not load") for p in report.problems), (
        report.problems
    )


@pytest.mark.parametrize(
    ("at", "mask"),
    [(at, mask) for at in (0, 1) for mask in (0x01, 0x02, 0x20, 0x80) if (at, mask) != (1, 0x01)],
)  # "1\n" -> "1\v" still reads as version 1 (open strips whitespace): harmless, so not counted
def test_a_flipped_byte_in_version_is_refused_in_one_line(filled: SessionStore, at: int, mask: int) -> None:
    from sessionstore.errors import NotAStoreError

    version = filled.root / "VERSION"
    data = bytearray(version.read_bytes())
    data[at] ^= mask
    version.write_bytes(bytes(data))
    with pytest.raises(NotAStoreError, match="has store format") as err:
        SessionStore.open(filled.root)
    assert "\n" not in str(err.value)


def _killed_mid_ref_write(store: SessionStore, name: str) -> Path:
    """Compact `name` in a child stopped inside its checkpoint-ref write, kill -9 it there, and return
    the temp file it left."""
    child = spawn("stop_in_ref_write.py", store.root, name)
    assert child.stdout is not None and child.stdout.readline().strip() == "stopping"
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    child.kill()
    assert child.wait(timeout=10) == -signal.SIGKILL
    (left,) = store.refs.stray_temps()
    return left


def test_a_ref_write_killed_mid_way_is_a_note_for_fsck_and_gc_removes_it_after_the_grace_period(
    filled: SessionStore,
) -> None:
    left = _killed_mid_ref_write(filled, "b")
    head = filled.log("b").head()
    assert head is not None and head.kind == "compaction"
    assert left.parent == filled.refs.dir / "b" and left.read_bytes() == f"{head.id} {head.offset}\n".encode()
    report = filled.fsck()
    assert report.problems == ["b: checkpoints/b/1 is missing; `session fsck --repair` recreates it"]
    assert len(report.notes) == 1 and report.notes[0].startswith("refs/checkpoints/b/.tmp-")
    assert filled.fsck(repair=True).repaired == ["b: recreated checkpoints/b/1"]
    report = filled.fsck()
    assert report.ok and len(report.notes) == 1, "a leftover is not a problem, and repair leaves it to gc"
    history = filled.session("b").history

    relative = str(left.relative_to(filled.root))
    young = filled.gc(grace_days=14)
    assert (young.temps_removed, young.temps_kept) == ([], 1) and left.exists()
    for days, gone in ((13, False), (15, True)):
        past = time.time() - days * 86400
        os.utime(left, (past, past))
        dry = filled.gc(grace_days=14, dry_run=True)
        assert dry.temps_removed == ([relative] if gone else []) and left.exists()
        done = filled.gc(grace_days=14)
        assert (done.temps_removed, done.temps_kept) == (([relative], 0) if gone else ([], 1))
        assert left.exists() is not gone
    report = filled.fsck()
    assert report.ok and report.notes == []
    assert filled.refs.read("b", 1).commit_id == head.id and filled.session("b").history == history


def test_gc_at_grace_zero_removes_a_fresh_leftover_since_no_ref_writer_runs_during_gc(
    filled: SessionStore,
) -> None:
    left = _killed_mid_ref_write(filled, "a")
    assert filled.gc(grace_days=0).temps_removed == [str(left.relative_to(filled.root))]
    assert not left.exists() and filled.fsck(repair=True).repaired == ["a: recreated checkpoints/a/2"]
    assert filled.fsck().ok
