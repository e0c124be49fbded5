"""The check an LLM summary must pass (compaction/check.py), on extractions of real message lists.

What callers (summarizer.py) rely on: `required` lists every current user constraint and value-binding
fact and nothing superseded or the assistant's; `states` ignores case and markdown but never a value;
`complete` only appends (a model can add, never lose) and its result states every required item, for
any summary and any transcript; `checklist` is the prompt's bullet list, newest kept.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from helpers.agent_histories import agent_histories
from sessionstore.compaction.check import checklist, complete, missing, required, states
from sessionstore.compaction.extraction import Extraction, Item
from sessionstore.compaction.extractive import collect
from sessionstore.compaction.render import KEPT, parse_summary
from sessionstore.compaction.skeleton import section_body

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
def test_for_any_summary_complete_only_appends_and_then_states_every_required_item(
    history: list[ModelMessage], summary: str
) -> None:
    ex = collect(history)
    done = complete(summary, ex)
    assert done.startswith(summary.rstrip())  # nothing the model wrote is removed or rewritten
    assert missing(done, ex) == []
    assert complete(done, ex) == done  # idempotent: a checked summary passes the check
    added = done[len(summary.rstrip()) :].strip().splitlines()
    assert added == [f"- {KEPT}{i.text}" for i in missing(summary, ex)]


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
