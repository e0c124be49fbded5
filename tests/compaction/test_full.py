"""Tier 2: [summary, *tail] with the tail rule, system prompts carried, merging, and clean failures."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.full import full_compact, split_point
from sessionstore.compaction.turns import Tail, pairs_intact
from sessionstore.errors import CompactionError
from sessionstore.summary.offline import MARKER
from sessionstore.summary.skeleton import HEADINGS, is_summary_request, section_body, validate_summary
from sessionstore.summary.user_words import HEADING as USER_WORDS

PAD = "output line\n" * 400  # ~1,600 tokens


def turn(i: int) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(f"request {i}: edit src/m{i}.py")]),
        ModelResponse(parts=[ToolCallPart("edit", {"path": f"src/m{i}.py"}, tool_call_id=f"c{i}")]),
        ModelRequest(parts=[ToolReturnPart("edit", PAD, tool_call_id=f"c{i}")]),
        ModelResponse(parts=[TextPart(f"done {i}")]),
    ]


def history_of(n: int) -> list[ModelMessage]:
    out = [m for i in range(n) for m in turn(i)]
    out[0] = ModelRequest(parts=[SystemPromptPart("You are a careful engineer."), *out[0].parts])
    return out


def test_summary_then_tail_within_budget() -> None:
    history = history_of(10)
    sizes = estimate_messages(history)
    settings = Settings(keep_recent_tokens=4000)
    result = full_compact(history, sizes, settings=settings, full_level=100_000)
    head, *tail = result.messages
    assert is_summary_request(head) and head.parts[-1] == CompactionPart(content=result.summary)
    assert head.parts[0].content == "You are a careful engineer."  # carried, not lost
    assert validate_summary(result.summary) == [] and MARKER in result.summary
    assert tail == history[-12:]  # three whole turns (~1,250 tokens each) fit in 4,000 tokens, four do not
    assert sum(sizes[-12:]) <= 4000 < sum(sizes[-16:])
    assert result.sizes == estimate_messages(result.messages)
    assert result.tokens_before == sum(sizes) and result.tokens_after == sum(result.sizes)
    assert pairs_intact(result.messages)
    assert section_body(result.summary, "## Goal") == "request 6: edit src/m6.py"  # the latest summarized
    *said, last = [line for line in section_body(result.summary, USER_WORDS).split("\n") if line]
    assert said == [f"> request {i}: edit src/m{i}.py" for i in range(7)]
    assert last.startswith("The store keeps every message this summary replaced (28 so far)")


def test_half_the_full_level_caps_the_tail() -> None:
    history = history_of(10)
    sizes = estimate_messages(history)
    result = full_compact(history, sizes, settings=Settings(keep_recent_tokens=20_000), full_level=8000)
    assert result.messages[1:] == history[-12:]  # min(20,000, 8,000 // 2) = 4,000


def test_successive_compactions_merge() -> None:
    history = history_of(6)
    settings = Settings(keep_recent_tokens=2000)
    first = full_compact(history, estimate_messages(history), settings=settings, full_level=100_000)
    grown = first.messages + [m for i in range(6, 9) for m in turn(i)]
    second = full_compact(grown, estimate_messages(grown), settings=settings, full_level=100_000)
    said = section_body(second.summary, USER_WORDS)
    assert "> request 0: edit src/m0.py" in said and "> request 6: edit src/m6.py" in said  # carried, merged
    assert said.count("request 0") == 1 and "## Goal" not in said  # not quoted a second time
    assert "`src/m0.py`" in second.summary and "`src/m6.py`" in second.summary  # the work log, carried
    assert second.messages[0].parts[0].content == "You are a careful engineer."
    assert sum(1 for p in second.messages[0].parts if isinstance(p, SystemPromptPart)) == 1


def test_when_everything_fits_the_tail_is_the_last_turn() -> None:
    history = history_of(3)
    result = full_compact(history, estimate_messages(history), settings=Settings(), full_level=1_000_000)
    assert result.messages[1:] == history[-4:]


def test_single_turn_is_cut_inside_only_when_it_has_a_tool_step() -> None:
    history = turn(0)
    result = full_compact(history, estimate_messages(history), settings=Settings(), full_level=100)
    assert result.messages[1:] == [history[0], history[3]]  # the request verbatim, then the newest step
    bare = [history[0], history[3]]
    with pytest.raises(CompactionError, match="nothing to compact"):
        full_compact(bare, estimate_messages(bare), settings=Settings(), full_level=100)
    # the newest turn alone is over 10 tokens: the cut falls inside it, after its tool return
    assert split_point(history_of(2), estimate_messages(history_of(2)), 10) == Tail(7, request=4)


def test_failed_summary_leaves_input_untouched() -> None:
    history = history_of(4)
    snapshot = list(history)

    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("rate limited")

    with pytest.raises(CompactionError, match="rate limited"):
        full_compact(
            history,
            estimate_messages(history),
            settings=Settings(),
            full_level=1000,
            model=FunctionModel(broken),
        )
    assert history == snapshot


def test_llm_summary_is_the_head() -> None:
    valid = "\n\n".join(f"{h}\n- goal: edit files" for h in HEADINGS) + "\n"

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(valid)])

    history = history_of(4)
    sizes = estimate_messages(history)
    sync = full_compact(history, sizes, settings=Settings(), full_level=4000, model=FunctionModel(answer))
    assert sync.summary.startswith(valid.rstrip())  # the model's skeleton, then what is added to it
    assert "> request 0: edit src/m0.py" in section_body(sync.summary, USER_WORDS)
    assert any(isinstance(p, CompactionPart) and p.content == sync.summary for p in sync.messages[0].parts)


def test_sizes_must_match() -> None:
    with pytest.raises(ValueError, match="sizes"):
        full_compact(history_of(2), [1], settings=Settings(), full_level=10)


def test_summary_fits_its_share_at_small_windows() -> None:
    """Issue 26: a summary takes at most a quarter of the full level, and at most its two settings."""
    from sessionstore.accounting.tokens import count_text
    from sessionstore.compaction.full import summary_budget

    history = []
    for i in range(60):
        history += [
            ModelRequest(
                parts=[
                    UserPromptPart(f"Never break api v{i}.{i}; module m{i} must keep {i * 7} tests green.")
                ]
            ),
            ModelResponse(parts=[TextPart(f"I decided to refactor m{i} because it is slow.")]),
        ]
    sizes = estimate_messages(history)
    for full_level, setting in ((4000, 4000), (20_000, 4000), (1_000_000, 700)):
        settings = Settings(summary_max_tokens=setting, summary_user_tokens=setting)
        budget = summary_budget(settings, full_level)
        assert budget == min(2 * setting, full_level // 4)
        result = full_compact(history, sizes, settings=settings, full_level=full_level)
        assert count_text(result.summary) <= budget
