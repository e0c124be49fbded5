"""Turn starts, pairing and tail selection: the tail never splits a pair and keeps the last request."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.agent_histories import agent_histories
from sessionstore.accounting.thresholds import over_threshold
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.compaction.turns import (
    SafeFromEnd,
    Tail,
    choose_tail,
    in_turn_cut,
    is_summary_request,
    last_user_request,
    newest_request,
    orphans,
    pairs_intact,
    safe_cuts,
    select_tail,
    step_boundaries,
    turn_starts,
)


def user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def call(i: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("bash", {"command": "ls"}, tool_call_id=i)])


def ret(i: str, text: str = "ok") -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart("bash", text, tool_call_id=i)])


SUMMARY = ModelRequest(parts=[CompactionPart(content="# Conversation summary")])
HISTORY = [
    SUMMARY,
    user("a"),
    call("1"),
    ret("1"),
    ModelResponse(parts=[TextPart("done")]),
    user("b"),
    call("2"),
    ret("2"),
]


def test_turn_starts_counts_a_leading_summary() -> None:
    assert turn_starts(HISTORY) == [0, 1, 5]
    assert turn_starts(HISTORY[1:]) == [0, 4]
    assert turn_starts([]) == []
    assert is_summary_request(SUMMARY) and not is_summary_request(user("x"))
    assert last_user_request(HISTORY) == 5 and last_user_request([SUMMARY]) is None


def test_pairs() -> None:
    assert pairs_intact(HISTORY)
    assert orphans(HISTORY[3:]) == {"1"}
    assert orphans(HISTORY[:-1]) == {"2"}


def test_safe_cuts_reject_cuts_inside_a_pair() -> None:
    safe = safe_cuts(HISTORY)
    assert len(safe) == len(HISTORY) + 1
    assert [i for i, ok in enumerate(safe) if not ok] == [3, 7]


def test_a_request_mixing_returns_and_a_prompt_is_not_a_cut() -> None:
    mixed = ModelRequest(parts=[ToolReturnPart("bash", "ok", tool_call_id="1"), UserPromptPart("next")])
    history = [user("a"), call("1"), mixed, ModelResponse(parts=[TextPart("x")])]
    sizes = estimate_messages(history)
    assert select_tail(history, sizes, 1) == 0  # the only safe turn start is the first one


def test_select_tail_budget() -> None:
    sizes = [10] * len(HISTORY)
    assert select_tail(HISTORY, sizes, 30) == 5  # forced: the last turn, 30 tokens
    assert select_tail(HISTORY, sizes, 29) == 5  # the last turn is kept even over budget
    assert select_tail(HISTORY, sizes, 69) == 5
    assert select_tail(HISTORY, sizes, 70) == 1  # equal does not exceed
    assert select_tail(HISTORY, sizes, 80) == 0
    assert select_tail([], [], 10) == 0


@hsettings(max_examples=60, deadline=None)
@given(agent_histories(max_turns=5), st.integers(0, 60_000))
def test_tail_never_splits_pairs_and_keeps_last_request(history: list, budget: int) -> None:
    sizes = estimate_messages(history)
    start = select_tail(history, sizes, budget)
    tail = history[start:]
    assert pairs_intact(tail)
    last = last_user_request(history)
    assert last is not None and start <= last
    # Within budget unless it is the forced minimum (the last turn), and maximal: one more turn overflows.
    starts = [i for i in turn_starts(history) if safe_cuts(history)[i]]
    if start != starts[-1]:
        assert sum(sizes[start:]) <= budget
    earlier = [i for i in starts if i < start]
    if earlier:
        assert sum(sizes[earlier[-1] :]) > budget


# --- positional pairing and the in-turn cut (issue 10) ---------------------------------------------


def step(i: str, text: str = "ok", thinking: str = "") -> list:
    lead = [ThinkingPart(thinking)] if thinking else []
    return [
        ModelResponse(parts=[*lead, ToolCallPart("bash", {"command": "ls"}, tool_call_id=i)]),
        ret(i, text),
    ]


def run_turn_with_ids(prompt: str, ids: list[str], text: str = "ok") -> list:
    out: list = [user(prompt)]
    for i in ids:
        out += step(i, text)
    return [*out, ModelResponse(parts=[TextPart(f"answer to {prompt}")])]


def test_reused_ids_pair_within_their_turn() -> None:
    """FunctionModels restart ids per run: each turn's call_1 pairs with its own return."""
    history = run_turn_with_ids("a", ["call_1", "call_2"]) + run_turn_with_ids("b", ["call_1", "call_2"])
    assert pairs_intact(history)
    safe = safe_cuts(history)
    assert safe[6] and turn_starts(history) == [0, 6]  # the second turn starts at a safe cut
    sizes = [10] * len(history)
    assert select_tail(history, sizes, 60) == 6  # compactable: the first turn can be summarized
    assert orphans(history[:8] + history[9:]) == {"call_1"}  # a call whose return vanished
    assert orphans([history[2], *history]) == {"call_1"}  # a return before any call


def test_a_long_tool_loop_is_cut_inside_with_its_request_first() -> None:
    history = [user("q"), *step("1"), *step("2"), *step("3"), ModelResponse(parts=[TextPart("end")])]
    sizes = [10, 10, 100, 10, 100, 10, 100, 10]
    assert step_boundaries(history, 0) == [3, 5, 7]
    tail = choose_tail(history, sizes, 150)  # the turn (350) is over budget; one step fits, two do not
    assert tail == Tail(5, request=0)
    assert tail.messages(history) == [history[0], *history[5:]] and tail.sizes(sizes) == [10, 10, 100, 10]
    assert choose_tail(history, sizes, 20) == Tail(7, request=0)  # forced: the newest step stays
    assert choose_tail(history, sizes, 1000) == Tail(0)  # everything fits
    assert in_turn_cut([user("q"), ModelResponse(parts=[TextPart("x")])], [1, 1], 0, 1) is None


@st.composite
def long_loops(draw: st.DrawFn) -> tuple[list, list[int]]:
    """Earlier turns and one newest turn of many steps, tool-call ids restarting in every turn."""
    history: list = []
    sizes: list[int] = []
    for t in range(draw(st.integers(0, 2)) + 1):
        history.append(user(f"request {t}"))
        sizes.append(draw(st.integers(5, 50)))
        for _ in range(draw(st.integers(0 if t == 0 else 1, 12))):
            calls = draw(st.integers(1, 3))
            history.append(
                ModelResponse(
                    parts=[
                        ThinkingPart("hmm"),
                        *(ToolCallPart("bash", {}, tool_call_id=f"call_{c}") for c in range(calls)),
                    ]
                )
            )
            history.append(
                ModelRequest(
                    parts=[ToolReturnPart("bash", "o", tool_call_id=f"call_{c}") for c in range(calls)]
                )
            )
            sizes += [draw(st.integers(5, 2000)), draw(st.integers(5, 8000))]
        if draw(st.booleans()):
            history.append(ModelResponse(parts=[TextPart("done")]))
            sizes.append(draw(st.integers(5, 500)))
    return history, sizes


@hsettings(max_examples=80, deadline=None)
@given(long_loops(), st.integers(50, 20_000))
def test_in_turn_tail_keeps_pairs_request_and_budget(drawn: tuple[list, list[int]], budget: int) -> None:
    history, sizes = drawn
    assert pairs_intact(history)
    tail = choose_tail(history, sizes, budget)
    kept = tail.messages(history)
    assert pairs_intact(kept), "no pair is ever split"
    last = last_user_request(history)
    assert last is not None and any(m is history[last] for m in kept), "the last request is kept"
    if tail.request is not None:
        assert kept[0] is history[last], "the user request is verbatim at the start of the tail"
        assert isinstance(kept[1], ModelResponse)
        boundaries = step_boundaries(history, last)
        if tail.start != boundaries[-1]:  # not the forced newest step: within budget, and maximal
            assert sum(tail.sizes(sizes)) <= budget
            earlier = [j for j in boundaries if j < tail.start]
            if earlier:
                assert sizes[last] + sum(sizes[earlier[-1] :]) > budget
    elif tail.start > 0:
        assert sum(sizes[tail.start :]) <= budget or step_boundaries(history, last) == []


# --- the tail chosen walking back from the newest message equals the whole-history choice ----------


@st.composite
def messy_histories(draw: st.DrawFn) -> tuple[list, list[int]]:
    """Any mix of requests and responses: ids reused, returns twice or with no call, calls unanswered,
    prompts beside returns, maybe a summary first: every shape the pairing rules speak of."""
    ids = st.sampled_from(["a", "b", "c", "d"])
    request_part = st.one_of(
        st.builds(UserPromptPart, st.just("u")),
        st.builds(lambda i: ToolReturnPart("bash", "o", tool_call_id=i), ids),
    )
    response_part = st.one_of(
        st.builds(TextPart, st.just("t")),
        st.builds(lambda i: ToolCallPart("bash", {}, tool_call_id=i), ids),
        st.builds(lambda i: ToolReturnPart("bash", "o", tool_call_id=i), ids),
    )
    message = st.one_of(
        st.builds(lambda p: ModelRequest(parts=p), st.lists(request_part, min_size=1, max_size=3)),
        st.builds(lambda p: ModelResponse(parts=p), st.lists(response_part, min_size=1, max_size=3)),
    )
    history = ([SUMMARY] if draw(st.booleans()) else []) + draw(st.lists(message, max_size=30))
    return history, draw(st.lists(st.integers(1, 400), min_size=len(history), max_size=len(history)))


def whole_history_select(history: list, sizes: list[int], budget: int) -> int:
    """select_tail as it was before it walked back (passes over the whole history): the reference."""
    if not history:
        return 0
    safe = safe_cuts(history)
    candidates = [i for i in turn_starts(history) if safe[i]]
    if not candidates or candidates[0] != 0:
        candidates.insert(0, 0)
    start = candidates[-1]
    suffix = sum(sizes[start:])
    for cut in reversed(candidates[:-1]):
        suffix += sum(sizes[cut:start])
        if over_threshold(suffix, budget):
            break
        start = cut
    return start


def whole_history_tail(history: list, sizes: list[int], budget: int) -> Tail:
    """choose_tail as it was before it walked back: the reference."""
    if not history:
        return Tail(0)
    safe = safe_cuts(history)
    start = whole_history_select(history, sizes, budget)
    if not over_threshold(sum(sizes[start:]), budget):
        return Tail(start)
    starts = [i for i in turn_starts(history) if safe[i] and i in user_requests(history)]
    if not starts:
        return Tail(start)
    request = starts[-1]
    cut = in_turn_cut(history, sizes, request, budget, safe)  # the whole-history safety list
    return Tail(start) if cut is None else Tail(cut, request)


@hsettings(max_examples=200, deadline=None)
@given(messy_histories(), st.integers(0, 6000), st.randoms(use_true_random=False))
def test_the_tail_walked_back_is_the_whole_history_choice(drawn: tuple, budget: int, rnd: object) -> None:
    history, sizes = drawn
    expected = safe_cuts(history)
    lazy = SafeFromEnd(history)
    order = list(range(len(history) + 1))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    assert {i: lazy[i] for i in order} == dict(enumerate(expected))
    assert choose_tail(history, sizes, budget) == whole_history_tail(history, sizes, budget)
    assert select_tail(history, sizes, budget) == whole_history_select(history, sizes, budget)
    prompts = [i for i in turn_starts(history) if expected[i] and i in user_requests(history)]
    assert newest_request(history) == (prompts[-1] if prompts else None)


def user_requests(history: list) -> set[int]:
    return {
        i
        for i, m in enumerate(history)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    }
