"""The import staging area: what an interrupted import leaves is listed, then removed under the lock."""

from __future__ import annotations

from helpers.messages import tagged_turn
from sessionstore.porcelain.importing.staging_dir import (
    leftover_imports,
    publish,
    remove_leftover_import,
    remove_staging,
    staging_store,
)
from sessionstore.porcelain.session.session import Session
from sessionstore.porcelain.store import SessionStore


def test_a_staged_session_is_invisible_until_published(store: SessionStore) -> None:
    staging = staging_store(store, "new")
    Session(staging, "new").commit_turn(tagged_turn(0, 0), usage=None, kind="import")
    assert store.sessions() == [] and leftover_imports(store) == [("new", "locks/importing/new/")]
    publish(store, staging, "new")
    remove_staging(staging.top)
    assert store.sessions() == ["new"] and store.session("new").persisted_count == 2
    assert leftover_imports(store) == [] and not (store.locks_dir / "importing").exists()
    assert store.fsck().ok


def test_leftovers_are_removed_but_a_published_session_is_not(store: SessionStore) -> None:
    store.session("kept").append(tagged_turn(0, 0))
    staging_store(store, "gone")  # an import killed before it published
    store.refs.create("orphan", 1, "a" * 64, 0)  # refs published, then killed before the log
    assert sorted(leftover_imports(store)) == [
        ("gone", "locks/importing/gone/"),
        ("orphan", "refs/checkpoints/orphan/ (no log)"),
    ]
    assert remove_leftover_import(store, "gone") and remove_leftover_import(store, "orphan")
    assert not remove_leftover_import(store, "kept")
    assert leftover_imports(store) == [] and store.session("kept").persisted_count == 2
