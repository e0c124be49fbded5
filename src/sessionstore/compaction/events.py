"""Events each compaction tier emits to subscribers (DESIGN §7): what changed, in tokens and messages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompactionEvent:
    """Base of the three tier events; `checkpoint` is the ref a persisted tier wrote (tiers 2 and 3)."""

    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    checkpoint: str | None = None
    tier: int = 0


@dataclass(frozen=True)
class ContextMicrocompacted(CompactionEvent):
    """Tier 1 blanked old tool output in the view; nothing was persisted, so there is no checkpoint."""

    tier: int = 1


@dataclass(frozen=True)
class ContextCompacted(CompactionEvent):
    """Tier 2 replaced everything before the tail with a skeleton summary and wrote a checkpoint."""

    tier: int = 2


@dataclass(frozen=True)
class ContextUltimateCompacted(CompactionEvent):
    """Tier 3 rebuilt the history from checkpoint summaries and hard-truncated it to the budget."""

    tier: int = 3
