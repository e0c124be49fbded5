"""fsck tells a log cut short from a crash's torn tail (porcelain/maintenance/log_ends.py, issue 29.8).

Real files, real processes: the log is cut with `truncate(2)` in the middle of a line and at a
newline, after `session list` recorded it; the crash tear is a child killed with SIGKILL half-way
through writing its commit line. The cut is reported as lost commits with their seqs, before and
after `--repair`, and survives a listing in between; the tear is cut by `--repair`, a copy kept in
the trash, and nothing acknowledged is lost.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from click.testing import Result

from helpers.cli import run
from helpers.messages import tagged_turn
from helpers.procs import spawn
from sessionstore.porcelain.store import SessionStore

TURNS = 6


@pytest.fixture
def listed(tmp_path: Path) -> SessionStore:
    """Session `s` of six turns (no checkpoint: the heads cache is the only record of its length),
    settled and listed, so the cache holds its mark."""
    store = SessionStore.open(tmp_path / "store")
    session = store.session("s")
    for i in range(TURNS):
        session.append(tagged_turn(0, i), compact=False)
    settle(store)
    return store


def settle(store: SessionStore) -> None:
    """Date every log 10 s back (a listing caches only logs older than 2 s) and list the store."""
    old = time.time() - 10
    for name in store.sessions():
        os.utime(store.log(name).path, (old, old))
    assert run(store.root, "list").exit_code == 0


def line_ends(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


def problems(result: Result) -> list[str]:
    return [
        line.removeprefix("problem: ") for line in result.stdout.splitlines() if line.startswith("problem: ")
    ]


@pytest.mark.parametrize("mid_line", [True, False], ids=["mid-line", "at-a-newline"])
def test_a_log_cut_short_is_lost_commits_with_their_seqs_never_a_silent_repair(
    listed: SessionStore, mid_line: bool
) -> None:
    path = listed.log("s").path
    ends = line_ends(path)
    original = path.read_bytes()
    inode = path.stat().st_ino
    os.truncate(path, ends[2] + (25 if mid_line else 0))  # commits 4-6 gone; inside line 4, or after 3
    assert path.stat().st_ino == inode
    settle(listed)  # a listing after the cut keeps the record of how long the log was
    lost = (
        "s: acknowledged commits are missing: logs/s.jsonl ends after commit 3 (byte "
        f"{ends[2]}), but it held commit 6 ("
    )
    checked = run(listed.root, "fsck")
    assert checked.exit_code == 1
    [problem] = problems(checked)
    assert problem.startswith(lost) and "commits 4-6 are lost" in problem
    assert (
        "restore logs/s.jsonl from git or a backup, or, to go on without them, delete index/sessions.json"
        in problem
    )
    assert ("its last 25 bytes are the start of a lost line" in problem) == mid_line
    assert "torn" not in checked.stdout
    partial = path.read_bytes()[ends[2] :]

    repaired = run(listed.root, "fsck", "--repair")
    assert repaired.exit_code == 1  # still not ok: repair cannot bring them back
    [problem] = problems(repaired)
    assert problem.startswith(lost) and "commits 4-6 are lost" in problem
    copies = sorted((listed.root / "trash").glob(".cut-s-*.jsonl"))
    if mid_line:
        assert (
            "s: cut 25 bytes at the end of logs/s.jsonl: the start of a lost commit's line" in repaired.stdout
        )
        [copy] = copies
        assert copy.read_bytes() == partial and f"a copy is in trash/{copy.name}" in repaired.stdout
    else:
        assert copies == [] and "repaired:" not in repaired.stdout
    assert path.read_bytes() == original[: ends[2]]
    again = run(listed.root, "fsck")
    assert again.exit_code == 1 and "commits 4-6 are lost" in problems(again)[0]  # still named
    (listed.root / "index" / "sessions.json").unlink()  # the loss accepted, as the problem says how
    assert run(listed.root, "fsck").exit_code == 0


def test_a_log_cut_and_written_again_names_the_commit_it_replaced(listed: SessionStore) -> None:
    path = listed.log("s").path
    ends = line_ends(path)
    os.truncate(path, ends[2])
    session = listed.session("s")
    for i in range(4):
        session.append(tagged_turn(1, i), compact=False)  # new commits 4-7
    settle(listed)
    [problem] = problems(run(listed.root, "fsck"))
    assert (
        "it held commit 6 (" in problem
        and "commit 6 was replaced: the log was cut and written again" in problem
    )


def test_a_crash_tear_is_cut_with_a_copy_and_loses_nothing_acknowledged(listed: SessionStore) -> None:
    path = listed.log("s").path
    whole = path.read_bytes()
    child = spawn("stop_in_append.py", listed.root, "s")
    assert child.stdout and child.stdout.readline().strip() == "stopping"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    torn = path.read_bytes()[len(whole) :]
    assert torn and not torn.endswith(b"\n") and path.read_bytes().startswith(whole)

    checked = run(listed.root, "fsck")
    assert checked.exit_code == 1
    assert problems(checked) == [
        f"s: torn last line ({len(torn)} bytes without a newline: a crash mid-append); `session fsck "
        "--repair` cuts it, keeping a copy in the trash"
    ]
    repaired = run(listed.root, "fsck", "--repair")
    assert repaired.exit_code == 0, repaired.output
    [copy] = sorted((listed.root / "trash").glob(".cut-s-*.jsonl"))
    assert copy.read_bytes() == torn
    assert repaired.stdout.startswith(
        f"repaired: s: cut {len(torn)} bytes at the end of logs/s.jsonl: a last line without its newline, "
        f"which a crash mid-append leaves (never acknowledged); a copy is in trash/{copy.name}\n"
    )
    assert path.read_bytes() == whole
    assert run(listed.root, "fsck").exit_code == 0
    head = listed.log("s").head()
    assert head is not None and head.seq == TURNS  # every acknowledged commit


def test_a_checkpoint_ref_past_the_end_names_the_loss_without_a_record_of_the_head(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    session = store.session("s")
    for i in range(4):
        session.append(tagged_turn(0, i), compact=False)
    session.compact()
    path = store.log("s").path
    ends = line_ends(path)
    os.truncate(path, ends[1] + 7)  # no listing ever recorded it: the ref is the evidence
    found = problems(run(store.root, "fsck"))
    [problem] = [p for p in found if "acknowledged commits are missing" in p]
    assert "s: checkpoints/s/1 has no compaction commit in the log" in " ".join(found)
    assert problem.startswith(
        f"s: acknowledged commits are missing: logs/s.jsonl ends after commit 2 (byte {ends[1]}), but "
        f"checkpoints/s/1 points at byte {ends[3]}: the commits after 2 are lost"
    )
    assert "to go on without them, delete refs/checkpoints/s/1; its last 7 bytes" in problem
