"""The check an LLM summary must pass (summary/check.py), on extractions of real message lists.

What callers (summarizer.py) rely on: `required` lists every current user constraint and value-binding
fact and nothing superseded or the assistant's; `states` ignores case and markdown but never a value;
`complete` only appends (a model can add, never lose) and its result states every required item, for
any summary and any transcript; `checklist` is the prompt's bullet list, newest kept.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.agent_histories import agent_histories
from sessionstore.summary.check import (
    checklist,
    complete,
    correct,
    missing,
    required,
    stale,
    states,
    without_notes,
)
from sessionstore.summary.extraction import Extraction, Item
from sessionstore.summary.extractive import collect
from sessionstore.summary.render import KEPT, parse_summary
from sessionstore.summary.skeleton import section_body

RULES = [
    "Never push to main without review.",
    "The budget cap is $500.",
    "Use pnpm, not npm.",
    "The staging host is db.internal:5432.",
    "Deadline is 2027-01-22.",
]


def user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def transcript() -> list[ModelMessage]:
    return [
        user("I want to migrate the billing service. " + " ".join(RULES)),
        ModelResponse(parts=[TextPart("The root cause is the 30 s timeout in src/app.py.")]),
        user("Correction: the budget cap is $750."),
    ]


def texts(items: list[Item]) -> list[str]:
    return [i.text for i in items]


# -- required -------------------------------------------------------------------------------------


def test_required_is_current_user_rules_and_bound_values_not_the_assistants_nor_superseded() -> None:
    ex = collect(transcript())
    assert texts(required(ex)) == [  # oldest first
        "Never push to main without review.",
        "Use pnpm, not npm.",
        "The staging host is db.internal:5432.",
        "Deadline is 2027-01-22.",
        "Correction: the budget cap is $750.",
    ]
    orders = [i.order for i in required(ex)]
    assert orders == sorted(orders)
    assert "The budget cap is $500." not in texts(required(ex))  # corrected later: not required
    assert not any("root cause" in t for t in texts(required(ex)))  # the assistant's conclusion


def test_a_fact_without_a_value_is_not_required_but_a_constraint_is() -> None:
    ex = Extraction()
    ex.add("fact", "The team likes the new dashboard layout", "user")
    ex.add("constraint", "Always answer in English", "user")
    ex.add("fact", "The release is version 3.11", "user")
    ex.add("fact", "The cluster runs on host api.internal:8443", "assistant")
    ex.add("decision", "We decided on 4 replicas", "user")
    assert texts(required(ex)) == ["Always answer in English", "The release is version 3.11"]


# -- states ---------------------------------------------------------------------------------------


def test_states_ignores_case_markdown_and_wording_but_never_a_value() -> None:
    ex = Extraction()
    item = ex.add("constraint", "The budget cap is $500 for the whole migration.", "user")
    assert item.values == ("$500",)
    assert states("- **THE BUDGET CAP** is `$500` for the whole migration.", item)
    assert states("Whole migration: budget capped at $500.", item)  # most content stems kept
    assert not states("The budget cap for the whole migration is $750.", item)  # the value is lost
    assert not states("Spend at most $500.", item)  # the value, but not what it is the value of
    # "Most" content words: 3 of its 4 stems (budget, cap, whole, migration) is enough, 2 is not.
    assert states("Migration budget cap: $500.", item)
    assert not states("Budget for the migration: $500.", item)


def test_a_value_inside_a_longer_number_or_word_is_not_stated() -> None:
    ex = Extraction()
    cap = ex.add("constraint", "The budget cap is $500.", "user")
    host = ex.add("fact", "The staging host is db.internal:5432.", "user")
    wait = ex.add("constraint", "The timeout must stay at 30 s.", "user")
    for other in ("$5000", "$500,000", "$500.50", "$500k"):
        assert not states(f"The budget cap is {other}.", cap), other
    assert states("The budget cap is $500, all included.", cap)  # punctuation after it is not a digit
    assert states("budget cap ($500)", cap)
    assert not states("The staging host is db.internal:54321.", host)
    assert states("Staging host: `db.internal:5432`", host)
    assert not states("The timeout must stay at 130 s.", wait)
    assert states("The timeout must stay at 30 s, never more.", wait)
    # So a summary that changed the number gets the rule back verbatim.
    assert complete("## Critical Context\n- The budget cap is $5000.\n", ex).endswith(
        f"- {KEPT}The budget cap is $500.\n- {KEPT}The staging host is db.internal:5432.\n"
        f"- {KEPT}The timeout must stay at 30 s.\n"
    )


# -- complete -------------------------------------------------------------------------------------


def test_complete_appends_what_is_missing_verbatim_under_critical_context() -> None:
    ex = collect(transcript())
    summary = "# Conversation summary\n\n## Goal\nmigrate billing\n\n## Critical Context\n"
    summary += "- BUDGET CAP is **$750**\n"
    lost = missing(summary, ex)
    assert texts(lost) == [t for t in texts(required(ex)) if "$750" not in t]
    done = complete(summary, ex)
    assert done.startswith(summary.rstrip())
    body = section_body(done, "## Critical Context")
    for item in lost:
        assert f"- {KEPT}{item.text}" in body
    assert missing(done, ex) == []
    # A re-compaction reads the kept lines back as constraints, so they survive the next summary too.
    again = parse_summary(done)
    assert {i.text for i in again.items if i.kind == "constraint"} >= {i.text for i in lost}


def test_a_summary_that_states_everything_is_returned_unchanged() -> None:
    ex = collect(transcript())
    summary = "## Critical Context\n" + "\n".join(f"- {t}" for t in texts(required(ex)))
    assert complete(summary, ex) is summary
    assert missing(summary, ex) == []


sentences = st.one_of(
    st.builds(
        "The {} cap is ${}.".format, st.sampled_from(["budget", "spend", "cost"]), st.integers(1, 10**6)
    ),
    st.builds(
        "Deadline is 20{:02d}-0{}-1{}.".format, st.integers(0, 99), st.integers(1, 9), st.integers(0, 9)
    ),
    st.builds(
        "Never {} on {}.".format,
        st.sampled_from(["deploy", "merge", "reboot"]),
        st.sampled_from(["Friday", "main"]),
    ),
    st.builds(
        "Use {}, not {}.".format, st.sampled_from(["pnpm", "uv", "ruff"]), st.sampled_from(["npm", "pip"])
    ),
    st.builds(
        "The {} host is {}.internal:{}.".format,
        st.sampled_from(["db", "cache"]),
        st.sampled_from(["a", "b"]),
        st.integers(1000, 9999),
    ),
    st.builds("Version {}.{} is required.".format, st.integers(0, 20), st.integers(0, 20)),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
)
prompts = st.lists(sentences, min_size=1, max_size=6).map(" ".join)


@st.composite
def transcripts(draw: st.DrawFn) -> list[ModelMessage]:
    """Agent histories (tools, thinking, a leading summary) with rule-bearing user prompts mixed in."""
    history = draw(agent_histories(max_turns=2, max_rounds=1))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(history)))
        history.insert(at, user(draw(prompts)))
    return history


summaries = st.builds(
    str.__add__, st.sampled_from(["", "  ", "\n\n"]), st.text(max_size=200) | prompts | st.just("")
)


@settings(max_examples=40, deadline=None)
@given(transcripts(), summaries)
def test_for_any_summary_complete_only_appends_and_notes_then_states_every_required_item(
    history: list[ModelMessage], summary: str
) -> None:
    ex = collect(history)
    done = complete(summary, ex)
    mine = without_notes(done)
    assert mine.startswith(summary.rstrip())  # nothing the model wrote is removed or rewritten
    assert (done == mine) == (stale(summary, ex) == [])  # notes only where an old value reads as current
    assert missing(done, ex) == [] and stale(done, ex) == []
    assert complete(done, ex) == done  # idempotent: a checked summary passes the check
    added = mine[len(summary.rstrip()) :].strip().splitlines()
    assert added == [f"- {KEPT}{i.text}" for i in missing(correct(summary, ex), ex)]


# -- checklist ------------------------------------------------------------------------------------


def test_checklist_lists_required_items_then_the_superseded_marked_not_current() -> None:
    ex = collect(transcript())
    lines = checklist(ex).splitlines()
    assert lines[: len(required(ex))] == [f"- {t}" for t in texts(required(ex))]
    assert lines[len(required(ex)) :] == ["- (superseded, not current) The budget cap is $500."]


def test_checklist_keeps_the_newest_items_when_over_its_limit() -> None:
    ex = Extraction()
    for n in range(30):
        ex.add("constraint", f"Rule {n}: never touch module {n}", "user")
    assert checklist(ex, limit=5).splitlines() == [
        f"- Rule {n}: never touch module {n}" for n in range(25, 30)
    ]


# -- superseded values stated as current ----------------------------------------------------------

CHAIN = [
    user("I want to plan the ad campaign. The budget cap is $500."),
    ModelResponse(parts=[TextPart("Noted.")]),
    user("The release deadline is 2027-03-25."),
    user("Correction: the budget cap is $700, not $500."),
    user("Actually, the release deadline moved to 2027-09-12."),
]


def unmarked(summary: str) -> list[str]:
    """The lines of `summary` that present what they say as current (no superseded mark)."""
    return [line for line in summary.splitlines() if "superseded" not in line.lower()]


def test_a_summary_restating_a_corrected_value_as_current_is_corrected_in_that_line() -> None:
    ex = collect(CHAIN)
    summary = (
        "## Goal\n- plan the ad campaign\n\n## Critical Context\n- Budget cap: $500\n- Ship by 2027-03-25\n"
    )
    assert [(line, value) for line, _item, value in stale(summary, ex)] == [
        ("- Budget cap: $500", "$500"),
        ("- Ship by 2027-03-25", "2027-03-25"),
    ]
    done = complete(summary, ex)
    assert "- Budget cap: $500 [$500 is superseded; current: $700]" in done.splitlines()
    assert "- Ship by 2027-03-25 [2027-03-25 is superseded; current: 2027-09-12]" in done.splitlines()
    # the old values are never on a line that reads as current; the new ones are
    current = "\n".join(unmarked(done))
    assert "$500" not in current.replace("not $500", "") and "2027-03-25" not in current
    assert "$700" in current and "2027-09-12" in current
    assert stale(done, ex) == [] and missing(done, ex) == []
    assert complete(done, ex) == done  # idempotent


def test_a_line_keeping_both_values_or_only_the_new_one_is_left_alone() -> None:
    ex = collect(CHAIN)
    both = (
        "## Critical Context\n- Budget cap: $700 (raised from $500)\n"
        "- Release deadline 2027-09-12, was 2027-03-25\n"
    )
    assert stale(both, ex) == []
    assert complete(both, ex).startswith(both.rstrip())
    new = "## Critical Context\n- Budget cap: $700\n- Release deadline: 2027-09-12\n"
    assert complete(new, ex) is new
    marked = "## Critical Context\n- Budget cap: $700\n- Old deadline 2027-03-25 is no longer current\n"
    assert stale(marked, ex) == []  # the summary itself says it is old


def test_a_withdrawn_value_stated_as_current_is_marked_withdrawn() -> None:
    for withdrawal in ("The budget cap is no longer $500.", "Forget the budget cap, spend what it takes."):
        ex = collect([user("The budget cap is $500."), user(withdrawal)])
        done = complete("## Critical Context\n- Budget cap: $500\n", ex)
        assert "- Budget cap: $500 [$500 is superseded: no longer current]" in done.splitlines()
        assert f"- {KEPT}{withdrawal}" in done.splitlines()  # the withdrawal is the current rule
        assert complete(done, ex) == done


def test_the_old_value_used_for_something_else_is_not_flagged() -> None:
    ex = collect(CHAIN)
    # no word of the budget cap's subject on the line: "$500" there is another amount
    assert stale("- Spent $500 on hosting so far\n", ex) == []
    both = collect([*CHAIN, user("The hosting budget is $500.")])
    assert stale("- Hosting budget: $500\n", both) == []  # still current for another subject


def test_an_llm_summary_restating_the_old_value_is_corrected_by_summarize() -> None:
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from sessionstore.accounting.settings import Settings
    from sessionstore.summary.skeleton import SKELETON
    from sessionstore.summary.summarizer import summarize

    def stale_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        text = SKELETON.replace("## Goal\n", "## Goal\n- plan the ad campaign\n")
        return ModelResponse(parts=[TextPart(text.rstrip() + "\n- Budget cap: **$500**\n")])

    done = summarize(CHAIN, settings=Settings(model="test"), model=FunctionModel(stale_model))
    assert "- Budget cap: **$500** [$500 is superseded; current: $700]" in done.splitlines()
    assert f"- {KEPT}Correction: the budget cap is $700, not $500." in done.splitlines()
    # the tail's correction counts too: the value is stale even though the summary's part never corrects it
    later = [user("Correction: the budget cap is $900.")]
    tail = summarize(
        CHAIN[:3], settings=Settings(model="test"), model=FunctionModel(stale_model), later=later
    )
    assert "- Budget cap: **$500** [$500 is superseded; current: $900]" in tail.splitlines()


_SUBJECTS = {"budget cap": "${}", "release deadline": "2027-0{}-1{}", "team size": "{} people"}
_PHRASES = (
    "The {s} is {v}.",
    "Correction: the {s} is {v}.",
    "Actually, the {s} is now {v}.",
    "Update: the {s} is {v}.",
    "Change the {s} to {v}.",
)


def holds(line: str, value: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(value)}(?![\w-])", line) is not None


def _value(subject: str, n: int) -> str:
    shape = _SUBJECTS[subject]
    return shape.format(n % 9 + 1, n % 10) if "0{}" in shape else shape.format(100 + n * 37)


@st.composite
def chains(draw: st.DrawFn) -> tuple[str, list[str], list[ModelMessage]]:
    """A subject corrected 1..4 times (distinct values, varied phrasing), with filler between."""
    subject = draw(st.sampled_from(sorted(_SUBJECTS)))
    numbers = draw(
        st.lists(st.integers(0, 60), min_size=2, max_size=5, unique_by=lambda n: _value(subject, n))
    )
    vals = [_value(subject, n) for n in numbers]
    history: list[ModelMessage] = []
    for n, v in enumerate(vals):
        phrase = _PHRASES[0] if n == 0 else draw(st.sampled_from(_PHRASES[1:]))
        history.append(user(phrase.format(s=subject, v=v)))
        if draw(st.booleans()):
            history.append(ModelResponse(parts=[TextPart("Noted, I will keep that in mind.")]))
    return subject, vals, history


@settings(max_examples=40, deadline=None)
@given(chains(), st.data())
def test_for_any_correction_chain_no_line_presents_an_old_value_as_current(
    chain: tuple[str, list[str], list[ModelMessage]], data: st.DataObject
) -> None:
    subject, vals, history = chain
    ex = collect(history)
    old = vals[:-1]
    kind = data.draw(st.sampled_from(["old", "both", "new"]))
    pick = data.draw(st.sampled_from(old))
    lines = {
        "old": [f"- {subject.title()}: {pick}"],
        "both": [f"- {subject.title()}: {vals[-1]} (earlier {pick})"],
        "new": [f"- {subject.title()}: {vals[-1]}"],
    }[kind]
    summary = "## Critical Context\n" + "\n".join(lines) + "\n"
    done = complete(summary, ex)
    assert stale(done, ex) == [] and missing(done, ex) == [] and complete(done, ex) == done
    for line in unmarked(done):  # an old value is on a current line only next to the latest one
        for v in old:
            assert not holds(line, v) or holds(line, vals[-1]), (line, v)
    assert any(holds(line, vals[-1]) for line in unmarked(done))
    if kind != "old":
        assert done.startswith(summary.rstrip())  # nothing to correct: only appended to


_WITHDRAWALS = ("Forget the {s}.", "The {s} no longer applies.", "There is no longer a {s}.")


@settings(max_examples=25, deadline=None)
@given(chains(), st.sampled_from(_WITHDRAWALS), st.data())
def test_for_any_chain_ending_in_a_withdrawal_no_line_presents_any_of_its_values_as_current(
    chain: tuple[str, list[str], list[ModelMessage]], withdrawal: str, data: st.DataObject
) -> None:
    subject, vals, history = chain
    taken_back = withdrawal.format(s=subject)
    ex = collect([*history, user(taken_back)])
    pick = data.draw(st.sampled_from(vals))
    summary = f"## Critical Context\n- {subject.title()}: {pick}\n"
    done = complete(summary, ex)
    assert stale(done, ex) == [] and complete(done, ex) == done
    assert f"- {subject.title()}: {pick} [" in done and " is superseded: no longer current]" in done
    for line in unmarked(done):
        assert not any(holds(line, v) for v in vals), line
    assert f"- {KEPT}{taken_back}" in done.splitlines()  # the withdrawal itself is the current rule


def test_a_path_the_user_retired_is_not_left_current_in_an_llm_summary() -> None:
    ex = collect(
        [
            user("Fix the parser in src/utils.py and src/legacy.py."),
            user("I renamed src/utils.py to src/helpers.py."),
            user("Stop touching src/legacy.py."),
        ]
    )
    summary = (
        "## Critical Context\n- Files: `src/utils.py`, `src/legacy.py`\n"
        "- Renamed src/utils.py to src/helpers.py\n"  # the line says so itself
    )
    assert [(line, item, value) for line, item, value in stale(summary, ex)] == [
        ("- Files: `src/utils.py`, `src/legacy.py`", None, "src/utils.py"),
        ("- Files: `src/utils.py`, `src/legacy.py`", None, "src/legacy.py"),
    ]
    done = complete(summary, ex)
    assert (
        "- Files: `src/utils.py`, `src/legacy.py` [src/utils.py is superseded; current: src/helpers.py]"
        " [src/legacy.py is superseded: no longer current]"
    ) in done.splitlines()
    assert complete(done, ex) == done and without_notes(done).startswith(summary.rstrip())


def test_an_llm_summary_quoting_a_request_with_a_renamed_path_is_told_the_new_one() -> None:
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from sessionstore.accounting.settings import Settings
    from sessionstore.summary.summarizer import summarize

    history = [
        user("Please edit src/a.py to add the retry loop."),
        ModelResponse(parts=[TextPart("OK.")]),
        user("a.py is now src/core/a.py."),
    ]
    quoted = (
        "# Conversation summary\n\n## Goal\n- Add the retry loop\n\n## Constraints & Preferences\n- none\n\n"
        "## Progress\n\n### Done\n- none\n\n"
        "### In Progress\n- Please edit src/a.py to add the retry loop.\n\n"
        "### Blocked\n- none\n\n## Key Decisions\n- none\n\n## Next Steps\n- Edit `src/a.py`\n\n"
        "## Critical Context\n- none\n"
    )

    def model(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(quoted)])

    done = summarize(history, settings=Settings(model="test"), model=FunctionModel(model))
    note = " [src/a.py is superseded; current: src/core/a.py]"
    assert f"- Please edit src/a.py to add the retry loop.{note}" in done.splitlines()
    assert f"- Edit `src/a.py`{note}" in done.splitlines()
    assert without_notes(done) == f"{quoted}- {KEPT}a.py is now src/core/a.py.\n"  # the rename, kept
