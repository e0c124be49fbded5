"""Tier 3: the result always fits the budget, keeps the last user request and every pair whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.agent_histories import agent_histories
from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.turns import last_user_request, pairs_intact
from sessionstore.compaction.ultimate import MIN_ULTIMATE_BUDGET, merge_summaries, ultimate_compact
from sessionstore.errors import CompactionError
from sessionstore.summary.offline import MARKER
from sessionstore.summary.skeleton import HEADINGS, is_summary_request, validate_summary
from sessionstore.summary.text import user_text


def summary(goal: str, filler: str = "") -> str:
    bodies = {"## Goal": goal, "### Done": f"- {filler}"}
    return "\n\n".join(f"{h}\n{bodies.get(h, '- x')}" for h in HEADINGS) + "\n"


def last_prompt_text(messages: list) -> str:
    i = last_user_request(messages)
    assert i is not None
    return "\n\n".join(user_text(p) for p in messages[i].parts if isinstance(p, UserPromptPart))


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    agent_histories(max_turns=4),
    st.one_of(st.just(MIN_ULTIMATE_BUDGET), st.integers(MIN_ULTIMATE_BUDGET, 30_000)),
    st.lists(st.sampled_from(["one", "two", "x" * 30_000]), max_size=4),
    st.integers(0, 3),
)
def test_always_fits(history: list, budget: int, goals: list, keep: int) -> None:
    sizes = estimate_messages(history)
    summaries = [summary(g) for g in goals]
    result = ultimate_compact(
        history, sizes, budget=budget, summaries=summaries, settings=Settings(ultimate_keep_checkpoints=keep)
    )
    assert sum(estimate_messages(result.messages)) <= budget
    assert result.sizes == estimate_messages(result.messages)
    assert result.tokens_before == sum(sizes) and result.tokens_after == sum(result.sizes)
    assert pairs_intact(result.messages)
    # The newest user request survives: verbatim, or head+tail shortened (its start kept).
    original = last_prompt_text(history)
    kept = last_prompt_text(result.messages)
    assert kept == original or "elided" in kept
    if kept != original and original:
        assert original.startswith(kept.split("\n[...")[0][:20])
    if result.summary:
        assert is_summary_request(result.messages[0])
        assert result.messages[0].parts[-1].content == result.summary
        leading = history[0].parts[0].content if is_summary_request(history[0]) else None
        newest = leading if leading and leading not in summaries else summaries[-1] if summaries else None
        if newest and not validate_summary(newest):
            assert validate_summary(result.summary) == []  # shortening keeps a valid skeleton valid


def test_fits_when_the_last_request_alone_is_huge() -> None:
    huge = "please refactor everything " * 20_000
    history = [ModelRequest(parts=[UserPromptPart(huge)]), ModelResponse(parts=[TextPart("ok")])]
    result = ultimate_compact(
        history, estimate_messages(history), budget=1000, summaries=[summary("g")], settings=Settings()
    )
    assert sum(result.sizes) <= 1000
    text = last_prompt_text(result.messages)
    assert text.startswith("please refactor") and "elided" in text and text.rstrip().endswith("everything")


def test_small_history_is_kept_verbatim_after_the_summary() -> None:
    history = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")])]
    result = ultimate_compact(
        history, estimate_messages(history), budget=5000, summaries=[summary("g")], settings=Settings()
    )
    assert result.messages[1:] == history
    assert result.summary == summary("g")


def test_keeps_newest_summary_and_kept_earlier_ones() -> None:
    summaries = [summary(f"goal {i}") for i in range(5)]
    merged = merge_summaries(summaries, 2)
    assert merged.startswith(summaries[-1].rstrip())
    assert "goal 3" in merged and "goal 2" in merged and "goal 1" not in merged
    assert validate_summary(merged) == []  # earlier summaries are quoted, their headings inert
    assert "goal 0" in merge_summaries(summaries, 0)  # 0 keeps all
    history = [ModelRequest(parts=[UserPromptPart("hi")])]
    result = ultimate_compact(
        history,
        estimate_messages(history),
        budget=50_000,
        summaries=summaries,
        settings=Settings(ultimate_keep_checkpoints=1),
    )
    assert "goal 4" in result.summary and "goal 3" in result.summary and "goal 2" not in result.summary


def test_without_summaries_the_dropped_part_is_summarized_offline() -> None:
    history = []
    for i in range(6):
        history += [
            ModelRequest(parts=[UserPromptPart(f"request {i} " + "z" * 4000)]),
            ModelResponse(parts=[TextPart("ok")]),
        ]
    result = ultimate_compact(
        history, estimate_messages(history), budget=2000, summaries=[], settings=Settings()
    )
    assert MARKER in result.summary and sum(result.sizes) <= 2000
    assert last_prompt_text(result.messages).startswith("request 5")


def test_budget_below_minimum_is_refused() -> None:
    with pytest.raises(CompactionError, match="at least 256 tokens"):
        ultimate_compact([], [], budget=255, summaries=[], settings=Settings())


REAL = [
    "claude_code/codemie_session-3fe1b6bc.jsonl",
    "claude_code/spotter_tool_heavy.jsonl",
    "codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
]


@pytest.mark.parametrize("window", [32_000, 128_000, 200_000])
@pytest.mark.parametrize("name", REAL)
def test_real_transcripts_full_then_ultimate_fit(realdata: Path, name: str, window: int) -> None:
    from sessionstore.compaction.full import full_compact
    from sessionstore.formats.transcripts import read_transcript

    history = [m for step in read_transcript(realdata / name).steps for m in step.messages]
    sizes = estimate_messages(history)
    full_level = int(window * 0.8)
    settings = Settings()
    result = full_compact(history, sizes, settings=settings, full_level=full_level)
    assert validate_summary(result.summary) == [] and pairs_intact(result.messages)
    assert last_prompt_text(result.messages) == last_prompt_text(history)  # verbatim after tier 2
    if sum(result.sizes) > full_level:
        result = ultimate_compact(
            result.messages, result.sizes, budget=full_level, summaries=[result.summary], settings=settings
        )
    assert sum(estimate_messages(result.messages)) <= full_level
    assert pairs_intact(result.messages) and validate_summary(result.summary) == []
    kept = last_prompt_text(result.messages)
    assert kept == last_prompt_text(history) or "elided" in kept
