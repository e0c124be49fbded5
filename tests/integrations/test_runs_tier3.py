"""Inside a run, when only tier 3 can shorten the history (one long user turn, no tool step): the
request is shortened and reported as the tier-3 event it is, never as a failed compaction."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from helpers.long_runs import filler
from sessionstore import SessionStore, Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.events import ContextUltimateCompacted
from sessionstore.errors import NothingToCompact
from sessionstore.integrations.runs import RunReport, run_turn

WINDOW = 5_000


def test_a_prompt_only_tier_3_can_shorten_is_a_tier_3_event_not_a_warning(tmp_path: Path) -> None:
    # issue 28, item 13: `UserWarning: mid-run compaction failed: nothing to compact`, then a request
    # that fit all the same.
    settings = Settings(context_window_tokens=WINDOW, micro_keep_recent_tokens=400, keep_recent_tokens=1_000)
    store = SessionStore.open(tmp_path / "s", settings=settings)
    events: list[object] = []
    store.listeners.append(events.append)
    sent: list[int] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(sum(estimate_messages(messages)))
        return ModelResponse(parts=[TextPart("read it")])

    report = RunReport()
    session = store.session("pasted")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_turn(session, Agent(FunctionModel(answer)), filler(4_300, "pasted log"), report=report)
    said = [str(w.message) for w in caught]
    assert not any("failed" in line for line in said), said
    assert [r.tier for r in report.requests] == [3] and report.checkpoints == 0
    assert [type(e) for e in events] == [ContextUltimateCompacted]
    assert sent and max(sent) <= WINDOW
    # After the turn the history is still one long turn: said once, as what it is, not as a failure.
    assert len(said) == 1
    assert said[0].startswith("session 'pasted': not compacted, history kept: nothing to compact:")
    with pytest.raises(NothingToCompact, match="only ultimate compaction \\(tier 3\\) can shorten it"):
        session.compact()  # a CompactionError: what `session compact` refuses with
