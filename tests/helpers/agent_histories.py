"""Agent-shaped histories for the compaction tests: turns of user request, tool rounds, final answer.

Unlike `messages.py` (arbitrary messages), these keep pydantic-ai's structure: every call is answered
in the next request (success, failed or retried), so pair invariants are meaningful.
"""

from __future__ import annotations

from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

TOOLS = ("read_file", "bash", "grep", "edit", "search")

small_texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
huge_texts = st.sampled_from(
    ["x" * 20_000, "🙂漢字é" * 2_000, "def f(x):\n    return x  # src/app/main.py\n" * 600, "a\n" * 9_000]
)
texts = st.one_of(small_texts, small_texts, small_texts, huge_texts)
args = st.one_of(
    st.fixed_dictionaries({"path": st.sampled_from(["src/a.py", "docs/b.md", "ü/ñ.txt"])}),
    st.fixed_dictionaries({"command": texts}),
    st.dictionaries(small_texts, texts, max_size=3),
    texts.map(lambda t: '{"q": ' + repr(t)[:50].replace("'", '"') + "}"),
)


@st.composite
def agent_histories(
    draw: st.DrawFn, max_turns: int = 4, max_rounds: int = 3, summary: bool | None = None
) -> list[ModelMessage]:
    """A valid agent history; may start with a summary request and may end mid-run (calls answered)."""
    history: list[ModelMessage] = []
    ids = iter(range(10_000))
    if summary if summary is not None else draw(st.booleans()):
        history.append(ModelRequest(parts=[CompactionPart(content="# Conversation summary\n" + draw(texts))]))
    for turn in range(draw(st.integers(1, max_turns))):
        parts: list = []
        if turn == 0 and draw(st.booleans()):
            parts.append(SystemPromptPart(draw(texts)))
        parts.append(UserPromptPart(draw(texts)))
        history.append(ModelRequest(parts=parts, instructions=draw(st.none() | small_texts)))
        for _ in range(draw(st.integers(0, max_rounds))):
            calls = [
                ToolCallPart(draw(st.sampled_from(TOOLS)), draw(args), tool_call_id=f"c{next(ids)}")
                for _ in range(draw(st.integers(1, 3)))
            ]
            lead = [ThinkingPart(draw(texts))] if draw(st.booleans()) else []
            history.append(ModelResponse(parts=[*lead, *calls]))
            returns: list = []
            for call in calls:
                outcome = draw(st.sampled_from(["success", "success", "failed", "retried"]))
                retry = RetryInfo("model_retry") if outcome == "retried" else None
                returns.append(
                    ToolReturnPart(
                        call.tool_name,
                        draw(texts),
                        tool_call_id=call.tool_call_id,
                        outcome=outcome,
                        retry=retry,
                    )
                )
            if draw(st.integers(0, 5)) == 0:
                returns.append(RetryFeedbackPart(draw(texts), retry=RetryInfo("no_output")))
            history.append(ModelRequest(parts=returns))
        if draw(st.integers(0, 4)) > 0:
            history.append(ModelResponse(parts=[TextPart(draw(texts))]))
    return history
