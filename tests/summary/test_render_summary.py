"""The offline summary's text (compaction/render.py): typed items into the skeleton and back again.

(tests/cli/test_render.py is the CLI's renderer; test directories have no __init__.py, so basenames
are unique.) What callers (extractive.py, check.py, the re-compaction) rely on: `render` always gives
a valid skeleton with the extractive marker, within `max_tokens` or at its bare minimum, whole lines
only (a kept line keeps its values), chronological inside each section, the most important sections
kept first, superseded values marked and never presented as current; `parse_summary` reads a rendered
summary back item for item, so a re-compaction merges every section.
"""

from __future__ import annotations

import itertools
import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.extraction import Extraction, resolve
from sessionstore.summary.render import EXTRACTIVE_MARKER, KEPT, SUPERSEDED, parse_summary, render
from sessionstore.summary.skeleton import section_body, validate_summary

CONSTRAINTS = "## Constraints & Preferences"
CONTEXT = "## Critical Context"


def bullets(text: str, heading: str) -> list[str]:
    """The section's bullets, without the placeholder of an empty one."""
    lines = section_body(text, heading).splitlines()
    return [line[2:] for line in lines if line.startswith("- ") and line != "- (none recorded)"]


def sample() -> Extraction:
    ex = Extraction(messages=12)
    ex.set_goal("Migrate the billing service to Postgres 15")
    ex.requests.append("Migrate the billing service to Postgres 15")
    ex.add("constraint", "Never push to main without review.", "user")
    ex.add("constraint", "The budget cap is $500.", "user")
    ex.add("fact", "The staging host is db.internal:5432.", "user")
    ex.add("done", "read_file(path=src/billing.py)", "tool")
    ex.add("blocked", "bash(command=pytest) failed: 2 tests failed", "tool")
    ex.add("decision", "We will use pgloader for the copy.", "user")
    ex.add("conclusion", "The root cause is the 30 s timeout.", "assistant")
    ex.add("question", "Should the old tables be dropped?", "user")
    ex.add("constraint", "Correction: the budget cap is $750.", "user")
    ex.files.append("src/billing.py")
    ex.commands.append("pytest -x")
    return resolve(ex)


# -- render ---------------------------------------------------------------------------------------


def test_every_section_comes_from_its_items_and_superseded_values_are_marked() -> None:
    text = render(sample(), max_tokens=4_000)
    assert validate_summary(text) == []
    assert text.splitlines()[1].startswith(EXTRACTIVE_MARKER) and "extracted from 12 messages" in text
    assert section_body(text, "## Goal") == "Migrate the billing service to Postgres 15"
    assert bullets(text, CONSTRAINTS) == [
        "Never push to main without review.",
        "Correction: the budget cap is $750.",
    ]  # chronological; the corrected $500 is not a current constraint
    context = bullets(text, CONTEXT)
    assert "The staging host is db.internal:5432." in context
    assert f"{SUPERSEDED}The budget cap is $500." in context
    assert "Files: `src/billing.py`" in context and "Commands: `pytest -x`" in context
    assert bullets(text, "### Done") == ["read_file(path=src/billing.py)"]
    assert bullets(text, "### Blocked") == [
        "bash(command=pytest) failed: 2 tests failed",
        "Open question: Should the old tables be dropped?",
    ]
    assert bullets(text, "## Key Decisions") == [
        "We will use pgloader for the copy.",
        "Concluded: The root cause is the 30 s timeout.",
    ]
    assert bullets(text, "## Next Steps") == [
        "Continue from the latest request: Migrate the billing service to Postgres 15"
    ]


def test_a_superseded_value_is_scrubbed_from_the_verbatim_requests() -> None:
    ex = Extraction()
    stale = "Deploy to the eu-west-1 region."
    ex.set_goal("Set up the cluster. " + stale)
    ex.requests.append("Set up the cluster. " + stale)
    ex.add("constraint", stale, "user")
    ex.add("constraint", "Deploy to the us-east-2 region.", "user")
    ex.items[0].superseded = True
    text = render(ex, max_tokens=2_000)
    for heading in ("## Goal", "### In Progress", "## Next Steps"):
        assert stale not in section_body(text, heading) and "us-east-2" not in section_body(text, heading)
        assert "[superseded: see Critical Context]" in section_body(text, heading)
    assert f"{SUPERSEDED}{stale}" in bullets(text, CONTEXT)


def test_a_small_budget_drops_whole_lines_least_important_first() -> None:
    ex = Extraction(messages=80)
    ex.set_goal("Tidy every module")
    for n in range(40):
        ex.add("done", f"edit(path=src/module_{n}.py) reformatted and tidied the imports", "tool")
    ex.add("constraint", "Never push to main: the cap is 3 deploys a day.", "user")
    ex.add("fact", "The owner of the release is Ada Lovelace.", "user")
    full = render(ex, max_tokens=10_000)
    assert len(bullets(full, "### Done")) == 30  # the newest 30 at most, even with room
    small = render(ex, max_tokens=250)
    assert count_text(small) <= 250 and validate_summary(small) == []
    assert bullets(small, CONSTRAINTS) == ["Never push to main: the cap is 3 deploys a day."]
    assert "The owner of the release is Ada Lovelace." in bullets(small, CONTEXT)
    done = bullets(small, "### Done")
    assert 0 < len(done) < 30
    assert all(line in bullets(full, "### Done") for line in done)  # whole lines, never cut
    assert done == bullets(full, "### Done")[-len(done) :]  # the newest kept, shown oldest first


def test_below_the_bare_skeleton_the_result_is_the_minimum() -> None:
    ex = sample()
    ex.set_goal("please refactor the auth module " * 100)
    floor = render(ex, max_tokens=0)
    assert validate_summary(floor) == []
    assert render(ex, max_tokens=5) == floor
    assert bullets(floor, CONSTRAINTS) == []  # nothing more can go
    assert count_text(floor) < count_text(render(ex, max_tokens=10_000))


def test_a_focus_is_kept_first_and_applies_once() -> None:
    text = render(sample(), max_tokens=4_000, focus="the copy step")
    assert "Focus requested: the copy step" in bullets(text, CONTEXT)
    assert "the copy step" not in " ".join(i.text for i in parse_summary(text).items)


# -- for every extraction -------------------------------------------------------------------------

PLACEHOLDERS = {"none", "- none", "n/a", "_none_", "(none)", "(none recorded)"}  # read as "empty section"
HEADING = re.compile(r"#{1,6}(?:\s|$)")  # a markdown heading line is structure, not an item


LIST_MARKER = re.compile(r"(?:[-*+]|\d+[.)])\s")  # "- x", "1. x": a list item's marker is structure too


def is_text(t: str) -> bool:
    line = " ".join(t.split())
    return (
        len(line.strip(" .;")) >= 2
        and line.lower() not in PLACEHOLDERS
        and not HEADING.match(line)
        and not LIST_MARKER.match(line)  # (a goal "- 0" reads back as the bullet "0")
    )


words = st.text(string.ascii_letters + string.digits + " .,:;$/#-()`'", min_size=1, max_size=70).filter(
    is_text
)
KINDS = ("constraint", "fact", "decision", "conclusion", "question", "blocked", "done")


@st.composite
def extractions(draw: st.DrawFn) -> Extraction:
    ex = Extraction(messages=draw(st.integers(0, 500)))
    goal = draw(words)
    ex.set_goal(goal)
    ex.requests += draw(st.lists(words, max_size=3))
    # At most 5 per kind, so no section's own limit (5 questions ... 30 done) applies; any interleaving.
    pairs = [(kind, text) for kind in KINDS for text in draw(st.lists(words, max_size=5))]
    for kind, text in draw(st.permutations(pairs)):
        sources = {"conclusion": ["assistant"], "fact": ["user", "assistant"]}.get(
            kind, ["user", "tool", "summary"]
        )
        ex.add(kind, text, draw(st.sampled_from(sources)))
    ex.in_progress += draw(st.lists(words, max_size=2))
    return ex


@settings(max_examples=80, deadline=None)
@given(extractions(), st.integers(0, 3_000))
def test_always_a_valid_skeleton_within_the_budget_or_at_its_minimum(ex: Extraction, budget: int) -> None:
    text = render(ex, max_tokens=budget)
    assert validate_summary(text) == []
    assert text.splitlines()[1].startswith(EXTRACTIVE_MARKER)
    assert count_text(text) <= max(budget, count_text(render(ex, max_tokens=0)))
    roomy = render(ex, max_tokens=100_000)
    for heading in (CONSTRAINTS, "### Done", "### Blocked", "## Key Decisions"):
        kept = bullets(text, heading)
        everything = bullets(roomy, heading)
        # whole lines only, chronological inside the section: a subsequence of what room for all shows
        rest = iter(everything)
        assert all(line in rest for line in kept), heading


def texts_of(ex: Extraction, kind: str) -> list[str]:
    return [i.text for i in ex.items if i.kind == kind and not i.superseded]


@settings(max_examples=80, deadline=None)
@given(extractions())
def test_a_rendered_summary_parses_back_item_for_item(ex: Extraction) -> None:
    text = render(ex, max_tokens=100_000)
    back = parse_summary(text)
    assert back.messages == ex.messages
    assert back.goal == ex.goal
    for kind in ("constraint", "decision", "conclusion", "question", "blocked", "done"):
        assert texts_of(back, kind) == texts_of(ex, kind), kind
    facts = texts_of(ex, "fact")
    assert sorted(texts_of(back, "fact")) == sorted(facts)  # user facts first, then the assistant's
    open_work = {" ".join(t.split()) for t in ex.in_progress}
    assert open_work <= set(back.in_progress)  # open work is kept across re-compactions


def test_a_line_starting_with_a_hash_is_text_and_only_a_heading_is_skipped() -> None:
    ex = Extraction()
    ex.set_goal("#4521: the export times out, fix it")
    ex.add("constraint", "#ops must approve every deploy.", "user")
    text = render(ex, max_tokens=2_000).replace(
        "## Next Steps",
        "#### Notes from the model\n\n## Next Steps",  # an LLM's own sub-heading
    )
    back = parse_summary(text)
    assert back.goal == "#4521: the export times out, fix it"
    assert texts_of(back, "constraint") == ["#ops must approve every deploy."]
    assert not any("Notes from the model" in i.text for i in back.items)
    assert "Notes from the model" not in " ".join(back.next_steps)


VALUES = [
    "$1,250,000",
    "2027-01-22",
    "db.internal:5432",
    "Postgres 15",
    "src/app/main.py",
    "30 s",
    "ZEP-7731",
]
filler = st.sampled_from(["because the migration is risky", "and slow", "so we wait", "for the quarter"])


@st.composite
def long_items(draw: st.DrawFn) -> Extraction:
    """Items long enough for their section's line limit (160-600 chars), values anywhere in them."""
    ex = Extraction()
    ex.set_goal("keep the values")
    for kind in draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=6)):
        words = draw(st.lists(filler | st.sampled_from(VALUES), min_size=10, max_size=60))
        source = "assistant" if kind == "conclusion" else draw(st.sampled_from(["user", "assistant", "tool"]))
        ex.add(kind, f"{kind} {len(ex.items)}: " + " ".join(words), source)
    return ex


@settings(max_examples=60, deadline=None)
@given(long_items())
def test_a_kept_line_keeps_every_value_of_its_item_however_long_the_item(ex: Extraction) -> None:
    text = render(ex, max_tokens=100_000)
    for item in ex.items:
        if f"{item.kind} {item.order - 1}: " in text:  # the item's line is kept
            assert all(v in text for v in item.values), item


def test_kept_lines_and_the_lists_parse_back_and_superseded_values_are_dropped() -> None:
    text = render(sample(), max_tokens=4_000) + f"- {KEPT}Always answer in English.\n"
    back = parse_summary(text)
    assert "Always answer in English." in texts_of(back, "constraint")
    assert (back.files, back.commands) == (["src/billing.py"], ["pytest -x"])
    assert not any("$500" in i.text for i in back.items)  # superseded: not carried into the next summary


# -- a verbatim request naming a path the user later renamed ------------------------------------------


def _summary_of(*texts: str) -> tuple[str, Extraction]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from sessionstore.summary.extractive import collect

    messages = []
    for text in texts:
        messages += [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart("OK.")])]
    ex = collect(messages)
    return render(ex, max_tokens=4000), ex


VERBATIM = ("## Goal", "### In Progress", "## Next Steps")


def verbatim_lines(summary: str) -> list[str]:
    return [line for h in VERBATIM for line in section_body(summary, h).splitlines() if line.strip()]


def quoting_lines(summary: str) -> list[str]:
    """Every line quoting the user (verbatim requests and items), not the Files lists."""
    lines = [line for line in summary.splitlines() if line.strip() and not line.startswith("#")]
    return [line for line in lines if not line.startswith(("- Files: ", f"- {SUPERSEDED}files "))]


def test_a_request_naming_a_renamed_path_says_where_it_is_now() -> None:
    summary, _ = _summary_of(
        "Please edit src/a.py to add the retry loop.",
        "a.py is now src/core/a.py.",  # the user's shorthand for the file named before
        "Then stop touching `src/legacy.py`, it is dead.",
    )
    lines = verbatim_lines(summary)
    assert "Please edit src/a.py (now src/core/a.py) to add the retry loop." in lines  # the Goal
    assert "- Please edit src/a.py (now src/core/a.py) to add the retry loop." in lines  # In Progress
    assert "- a.py is now src/core/a.py." in lines  # the rename itself says so: no note
    assert "Files: `src/core/a.py`" in summary
    summary, _ = _summary_of("Fix the parser in src/legacy.py and tests.", "Stop touching src/legacy.py.")
    assert "- Fix the parser in src/legacy.py (no longer current) and tests." in verbatim_lines(summary)


_NAMES = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta")
_DIRS = ("src", "lib", "pkg/core", "app/models")
_RENAMES = (
    "I renamed {a} to {b}.",
    "{a} was moved to {b}.",
    "{a} is now {b}.",
    "{a} -> {b}",
    "Use {b} instead of {a}.",
    "Rename {a} to {b} please.",
)


@st.composite
def rename_chains(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """(the chain of paths, oldest first, each renamed to the next; the user messages)."""
    names = draw(st.permutations(_NAMES))[: draw(st.integers(2, 5))]
    paths = [f"{draw(st.sampled_from(_DIRS))}/{name}.py" for name in names]
    texts: list[str] = []
    for old, new in itertools.pairwise(paths):
        if draw(st.booleans()):
            texts.append(f"Please edit {old} to add the retry loop and keep the tests green.")
        texts.append(draw(st.sampled_from(_RENAMES)).format(a=old, b=new))
    if draw(st.booleans()):
        texts.append("Now run the whole test suite and report what fails.")
    return paths, texts


@settings(max_examples=40, deadline=None)
@given(rename_chains())
def test_for_any_rename_chain_a_quoted_old_path_names_the_last_one(
    chain: tuple[list[str], list[str]],
) -> None:
    from sessionstore.summary.check import stale
    from sessionstore.summary.values import retired_paths

    paths, texts = chain
    summary, ex = _summary_of(*texts)
    final = paths[-1]
    for line in quoting_lines(summary):
        for old in paths[:-1]:
            for at in [m.end() for m in re.finditer(re.escape(old), line)]:
                if old in retired_paths(line):
                    continue  # the line renames it itself
                assert line[at:].startswith(f" (now {final})"), (old, line)
        assert f"{final} (now" not in line and "(no longer current)" not in line, line
    assert stale(summary, ex) == [], "the offline summary presents no old path as current"
