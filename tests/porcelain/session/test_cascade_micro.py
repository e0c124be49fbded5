"""Tier 1 carried across turns by the session (`cascade.micro_state`): one state per history, fed
only what was appended, its blanks standing, equal to a from-scratch `microcompact` (one priority)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore import SessionStore, Settings
from sessionstore.compaction import micro
from sessionstore.compaction.micro import ELIDED, microcompact
from sessionstore.porcelain.session import cascade
from sessionstore.porcelain.session.session import Session


def turn(i: int, *, output: int) -> list:
    """A user request, one read_file round trip of `output` lines, and the answer."""
    call = ToolCallPart("read_file", {"path": f"src/m{i}.py"}, tool_call_id=f"c{i}")
    return [
        ModelRequest(parts=[UserPromptPart(f"step {i}: read the next module")]),
        ModelResponse(parts=[call]),
        ModelRequest(parts=[ToolReturnPart("read_file", "y = 2\n" * output, tool_call_id=f"c{i}")]),
        ModelResponse(parts=[TextPart(f"module {i} read")]),
    ]


def blanked(messages: list) -> set[tuple[int, int]]:
    return {
        (i, j)
        for i, m in enumerate(messages)
        for j, p in enumerate(m.parts)
        if getattr(p, "content", None) == ELIDED
    }


def over_micro_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Session, list[int]]:
    """A 10k window (micro 6,000) and no usage: the local estimate decides, so the level is fixed."""
    store = SessionStore.open(
        tmp_path, settings=Settings(context_window_tokens=10_000, micro_keep_recent_tokens=500)
    )
    built: list[int] = []
    real = micro.MicroState.of.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        micro.MicroState, "of", classmethod(lambda cls, h, s, st: built.append(len(h)) or real(cls, h, s, st))
    )
    return store.session("s"), built


def test_the_state_is_carried_and_its_blanks_stand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s, built = over_micro_session(tmp_path, monkeypatch)
    seen: set[tuple[int, int]] = set()
    over = 0
    for i in range(25):  # ~300 tokens a turn: over micro (6,000) from turn 20, under full (8,000)
        s.append(turn(i, output=50))
        view = s.view()
        now = blanked(view)
        assert seen <= now  # a blank, once made, stands
        seen = now
        scratch = microcompact(s.history, s.sizes, level=6_000, settings=s.store.settings)
        assert view == scratch.messages  # one priority, one level: equal to tier 1 from scratch
        if now:
            over += 1
    assert over >= 3, "the session went over the micro level for several turns"
    assert {c.kind for c in s.log()} == {"turn"}, "and stayed under the full level"
    assert len(built) == 1, f"one state for the whole history, fed each turn's messages; built {built}"
    again = SessionStore.open(s.store.root, settings=s.store.settings).session("s")
    assert again.view() == s.view()  # a reopened session sends the same view


def test_a_reset_point_starts_a_new_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s, built = over_micro_session(tmp_path, monkeypatch)
    for i in range(12):  # ~550 tokens a turn: over micro after 11
        s.append(turn(i, output=100))
    assert blanked(s.view())
    first = s.log()[-1]
    s.checkout(first.id)  # the history is replaced: the old state must not be extended
    for i in range(12, 24):
        s.append(turn(i, output=100))
    assert {c.kind for c in s.log()} == {"turn", "checkout"}
    view = s.view()
    assert view == microcompact(s.history, s.sizes, level=6_000, settings=s.store.settings).messages
    assert len(built) == 2
    assert cascade.micro_state(s, 6_000, None).view() == view
