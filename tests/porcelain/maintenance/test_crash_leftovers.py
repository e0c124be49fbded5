"""porcelain/maintenance/crash_leftovers.py: what writes killed mid-way left (temp files, interrupted
moves), for fsck and gc.

The real kill -9 cases are in test_fsck_gc.py (a ref write) and history/test_naming.py (rm, rename).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from helpers.messages import tagged_turn
from sessionstore.plumbing.fsutil import write_temp
from sessionstore.porcelain.history import naming
from sessionstore.porcelain.maintenance import crash_leftovers
from sessionstore.porcelain.session import file_moves
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def left(store: SessionStore) -> list[Path]:
    """One leftover temp file of each kind, as a write killed before its rename or link leaves it."""
    session = store.session("a")
    session.append(tagged_turn(0, 0))
    naming.set_title(store, "a", "a title")
    (store.root / "trash").mkdir()
    refs = store.refs.dir / "a"
    refs.mkdir(parents=True)
    return [
        write_temp(refs, b"half"),
        write_temp(store.root / "titles", b"t"),
        write_temp(store.root / "trash", b"{"),
    ]


def _age(path: Path, days: float) -> None:
    past = time.time() - days * 86400
    os.utime(path, (past, past))


def test_every_kind_is_listed_and_noted_once(store: SessionStore, left: list[Path]) -> None:
    assert sorted(crash_leftovers.leftover_temps(store)) == sorted(left)
    note = crash_leftovers.temps_note(store)
    assert note is not None and note.startswith("refs/checkpoints/a/.tmp-") and " (and 2 more): " in note
    report = store.fsck()
    assert report.ok and report.notes == [note]


def test_prune_removes_only_what_is_older_than_the_cutoff(store: SessionStore, left: list[Path]) -> None:
    _age(left[0], 20)
    _age(left[2], 20)
    cutoff = time.time() - 14 * 86400
    names = sorted(str(p.relative_to(store.root)) for p in (left[0], left[2]))
    dry = crash_leftovers.prune_temps(store, cutoff, dry_run=True)
    assert (sorted(dry[0]), dry[1]) == (names, 1) and all(p.exists() for p in left)
    done = crash_leftovers.prune_temps(store, cutoff, dry_run=False)
    assert (sorted(done[0]), done[1]) == (names, 1)
    assert [p.exists() for p in left] == [False, True, False]
    assert naming.title(store, "a") == "a title" and store.session("a").persisted_count == 2


def test_none_is_no_note(store: SessionStore) -> None:
    store.session("a").append(tagged_turn(0, 0))
    assert crash_leftovers.leftover_temps(store) == [] and crash_leftovers.temps_note(store) is None


def test_an_interrupted_move_is_a_problem_until_repair_finishes_it(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.session("a").append(tagged_turn(0, 0))
    real = file_moves.rename_durably

    def cut_after_the_log(src: Path, dst: Path) -> bool:
        if dst == store.log("b").path:
            real(src, dst)
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(file_moves, "rename_durably", cut_after_the_log)
    with pytest.raises(OSError):
        naming.rename(store, "a", "b")
    monkeypatch.undo()
    problems: list[str] = []
    repaired: list[str] = []
    crash_leftovers.check_moves(store, False, problems, repaired)
    assert len(problems) == 1 and problems[0].startswith(
        "`session rename a b` was interrupted (its journal is trash/"
    )
    assert problems[0].endswith("`session fsck --repair` finishes it") and repaired == []
    crash_leftovers.check_moves(store, True, problems := [], repaired)
    assert problems == [] and repaired == ["finished `session rename a b`, interrupted after its log moved"]
    assert store.sessions() == ["b"] and store.fsck().ok
