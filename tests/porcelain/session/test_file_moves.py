"""porcelain/session/file_moves.py: a journalled move of a log with its followers, finished from its journal.

A move cut at each of its renames (an OSError there, as a full disk or a kill would leave it; the
kill -9 test of `rm`/`rename` is in test_naming.py) is finished, forward or back, to a whole state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.cli import snapshot
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.session import file_moves
from sessionstore.porcelain.store import SessionStore

FILES = {"logs/a.jsonl": b"log\n", "refs/checkpoints/a/1": b"ref\n", "titles/a": b"title\n"}
MOVE = file_moves.Move(
    what="session rename a b",
    locks=("a", "b"),
    log=("logs/a.jsonl", "logs/b.jsonl"),
    followers=(("refs/checkpoints/a", "refs/checkpoints/b"), ("titles/a", "titles/b")),
)
BEFORE = FILES
AFTER = {"logs/b.jsonl": b"log\n", "refs/checkpoints/b/1": b"ref\n", "titles/b": b"title\n"}


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store")
    for path, data in FILES.items():
        (store.root / path).parent.mkdir(parents=True, exist_ok=True)
        (store.root / path).write_bytes(data)
    return store


def ours(store: SessionStore) -> dict[str, bytes]:
    """The files under logs/, refs/ and titles/ (the store's VERSION and the like left out)."""
    return {k: v for k, v in snapshot(store.root).items() if k.split("/")[0] in {"logs", "refs", "titles"}}


def orphans(store: SessionStore) -> list[str]:
    """Names that have refs or a title but no log: what a cut move must never leave."""
    return [
        name
        for name in ("a", "b")
        if ((store.root / f"refs/checkpoints/{name}").exists() or (store.root / f"titles/{name}").exists())
        and not (store.root / f"logs/{name}.jsonl").exists()
    ]


def test_a_move_takes_the_followers_along_and_leaves_no_journal(store: SessionStore) -> None:
    with store.lock("a"), store.lock("b"):
        file_moves.run(store, MOVE)
    assert ours(store) == AFTER
    assert file_moves.interrupted(store) == [] and list((store.root / "trash").iterdir()) == []


def test_a_follower_that_is_absent_is_skipped(store: SessionStore) -> None:
    (store.root / "titles/a").unlink()
    file_moves.run(store, MOVE)
    assert ours(store) == {k: v for k, v in AFTER.items() if k != "titles/b"}


def cut_move(store: SessionStore, monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    """Run MOVE with its `at`-th rename failing (an OSError: the journal stays, as after a crash)."""
    real = file_moves.rename_durably
    renames = 0

    def failing(src: Path, dst: Path) -> bool:
        nonlocal renames
        renames += 1
        if renames == at:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(file_moves, "rename_durably", failing)
    with pytest.raises(OSError):
        file_moves.run(store, MOVE)
    monkeypatch.setattr(file_moves, "rename_durably", real)


@pytest.mark.parametrize("cut", range(1, 6))
def test_a_move_cut_at_any_rename_is_finished_from_its_journal(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    cut_move(store, monkeypatch, cut)
    committed = cut > 3  # renames 1-2 stage the followers, 3 is the log (the commit point)
    assert orphans(store) == [], "a name has refs or a title but no log"
    (found,) = file_moves.interrupted(store)
    assert found.what == "session rename a b"
    said = file_moves.finish_involving(store, ["b"])
    assert said == [f"{'finished' if committed else 'undid'} `session rename a b`, interrupted "
                    f"{'after' if committed else 'before'} its log moved"]  # fmt: skip
    assert ours(store) == (AFTER if committed else BEFORE)
    assert file_moves.interrupted(store) == [] and list((store.root / "trash").iterdir()) == []


def test_a_destination_taken_meanwhile_keeps_both(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cut_move(store, monkeypatch, 4)  # the log has moved, the refs are staged
    (store.root / "refs/checkpoints/b").mkdir(parents=True)  # a writer recreated b's ref from the log
    (store.root / "refs/checkpoints/b/1").write_bytes(b"ref\n")
    assert file_moves.finish_involving(store, ["a"])
    assert ours(store) == AFTER
    (aside,) = (store.root / "trash").iterdir()
    assert aside.name.startswith(".stale-checkpoints-a-") and (aside / "1").read_bytes() == b"ref\n"


def test_a_session_created_at_the_destination_after_the_crash_gets_nothing_of_the_move(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cut before the commit point, then someone starts a session `b` before any finish: the journal's
    # inode tells the moved log (still at `a`) from the new one, so the move is undone, and the new
    # session gets neither `a`'s refs nor its title.
    cut_move(store, monkeypatch, 3)
    (store.root / "logs/b.jsonl").write_bytes(b"another session\n")
    assert file_moves.finish_involving(store, ["b"]) == [
        "undid `session rename a b`, interrupted before its log moved"
    ]
    assert ours(store) == {**BEFORE, "logs/b.jsonl": b"another session\n"}


def test_a_move_of_other_names_is_left_alone(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    cut_move(store, monkeypatch, 1)
    assert file_moves.finish_involving(store, ["c"]) == [] and len(file_moves.interrupted(store)) == 1
    assert file_moves.finish_involving(store, ["a"]) and ours(store) == BEFORE


ESCAPING = (
    b'{"what": "x", "locks": ["a"], "log": ["../../etc/passwd", "logs/b.jsonl"], "followers": [], '
    b'"made": null, "emptied": null}'
)


@pytest.mark.parametrize("journal", [b"{not json", b'{"what": "x"}', ESCAPING])
def test_a_journal_that_does_not_parse_is_named_and_nothing_is_moved(
    store: SessionStore, journal: bytes
) -> None:
    (store.root / "trash").mkdir()
    (store.root / "trash/.moving-0123.json").write_bytes(journal)
    before = snapshot(store.root)
    (found,) = file_moves.interrupted(store)
    assert found.move is None and found.what == "the move journalled in trash/.moving-0123.json"
    assert file_moves.finish_involving(store, ["a"]) == []  # no names to go by: left to a person
    with pytest.raises(SessionStoreError, match=r"trash/\.moving-0123\.json is not a move journal"):
        file_moves.finish(store, found)
    assert snapshot(store.root) == before
    report = store.fsck(repair=True)
    assert any("trash/.moving-0123.json is not a move journal" in p for p in report.problems)


def test_stray_temps_are_the_temp_files_in_trash_and_titles_only(store: SessionStore, tmp_path: Path) -> None:
    (store.root / "trash").mkdir()
    left = [store.root / "titles/.tmp-1", store.root / "trash/.tmp-2"]
    for path in left:
        path.write_bytes(b"half")
    (store.root / "trash/.tmp-dir").mkdir()
    (store.root / "trash/.tmp-link").symlink_to(tmp_path)
    (store.root / "trash/a.20260101T000000000000Z").mkdir()
    assert sorted(file_moves.stray_temps(store)) == sorted(left)
