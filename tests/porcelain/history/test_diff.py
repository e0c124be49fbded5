"""porcelain/history/diff.py: messages added and removed between two states, and what compactions replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import tagged_turn
from sessionstore.porcelain.history.diff import diff
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store")
    session = store.session("s")
    for i in range(1, 4):
        session.append(tagged_turn(0, i, size=3), compact=False)
    summary = [ModelRequest(parts=[UserPromptPart("# Conversation summary\n## Goal\nthe goal")])]
    with store.lock("s"):
        session.commit_checkpoint([*summary, *session.history[-3:]], tier=2)  # keeps turn 3
    session.append(tagged_turn(0, 4, size=2), compact=False)
    return store


def test_a_turn_only_adds_its_messages(store: SessionStore) -> None:
    result = diff(store, store.resolve("s@1"), store.resolve("s@2"))
    assert result.removed == [] and [m.preview for m in result.added] == ["w0:2:0", "w0:2:1", "w0:2:2"]
    assert [m.index for m in result.added] == [3, 4, 5] and result.compactions == []
    assert sum(m.tokens for m in result.added) == store.resolve("s@2").tokens - store.resolve("s@1").tokens


def test_a_compaction_reports_what_its_summary_replaced(store: SessionStore) -> None:
    before, after = store.resolve("s@3"), store.resolve("s@4")
    result = diff(store, before, after)
    (comp,) = result.compactions
    assert comp.commit == after and comp.kept == 3
    assert [m.preview for m in comp.replaced] == [f"w0:{i}:{j}" for i in (1, 2) for j in range(3)]
    assert sum(m.tokens for m in comp.replaced) + sum(m.tokens for m in comp.summary) == (
        before.tokens - sum(before.sizes[-3:]) + sum(after.sizes[:1])
    )
    assert "## Goal" in comp.to_json()["summary"] and comp.to_json()["replaced_messages"] == 6
    assert [m.role for m in result.added] == ["user"]


def test_reversed_revisions_swap_added_and_removed(store: SessionStore) -> None:
    forward = diff(store, store.resolve("s@2"), store.resolve("s@5"))
    back = diff(store, store.resolve("s@5"), store.resolve("s@2"))
    assert [m.text for m in forward.added] == [m.text for m in back.removed]
    assert [m.text for m in forward.removed] == [m.text for m in back.added]
    assert len(forward.compactions) == len(back.compactions) == 1


def test_states_of_two_sessions_compare_too(store: SessionStore) -> None:
    fork = store.fork("s@2", "t")
    fork.append(tagged_turn(1, 1), compact=False)
    result = diff(store, store.resolve("s@2"), store.resolve("t"))
    assert result.removed == [] and [m.preview for m in result.added] == ["w1:1:0", "w1:1:1"]
