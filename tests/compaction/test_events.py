"""The tier events carry their tier and the before/after numbers."""

from __future__ import annotations

import dataclasses

import pytest

from sessionstore.compaction.events import (
    CompactionEvent,
    ContextCompacted,
    ContextMicrocompacted,
    ContextUltimateCompacted,
)


@pytest.mark.parametrize(
    ("kind", "tier"), [(ContextMicrocompacted, 1), (ContextCompacted, 2), (ContextUltimateCompacted, 3)]
)
def test_events(kind: type[CompactionEvent], tier: int) -> None:
    event = kind(
        tokens_before=10, tokens_after=4, messages_before=5, messages_after=2, checkpoint="checkpoints/s/1"
    )
    assert event.tier == tier and isinstance(event, CompactionEvent)
    assert (event.tokens_before, event.tokens_after, event.messages_before, event.messages_after) == (
        10,
        4,
        5,
        2,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.tier = 9  # type: ignore[misc]
    assert kind(1, 1, 1, 1).checkpoint is None
