"""The skeleton and its validator: table tests over valid and broken summaries."""

from __future__ import annotations

import pytest

from sessionstore.summary.skeleton import ADDED, HEADINGS, SKELETON, section_body, validate_summary


def filled(**bodies: str) -> str:
    """The skeleton with every section filled ('x'), overridden by heading name without '#'."""
    out = []
    for heading in HEADINGS:
        name = heading.lstrip("# ")
        out.append(f"{heading}\n{bodies.get(name, '- x')}")
    return "\n\n".join(out) + "\n"


VALID = filled(Goal="Fix the login bug in src/auth.py.")


def test_headings_match_design() -> None:
    assert HEADINGS == (
        "# Conversation summary",
        "## Goal",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    )
    assert all(h in SKELETON for h in HEADINGS)
    assert ADDED == ("## Work so far", "## Rules found in files", "## What the user said")
    assert not any(h in SKELETON for h in ADDED)  # never asked of a model: the program adds them


def test_added_sections_may_follow_the_skeleton_but_not_precede_it() -> None:
    after = VALID + "\n## Rules found in files\n- none\n\n## What the user said\n> hi\n"
    assert validate_summary(after) == [] and section_body(after, "## What the user said") == "> hi"
    before = "## What the user said\n> hi\n\n" + VALID
    assert any("out of order" in p for p in validate_summary(before))


def test_bare_skeleton_is_invalid_only_for_its_empty_goal() -> None:
    assert validate_summary(SKELETON) == [
        "the '## Goal' section is empty; state the user's goal in one or two sentences"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VALID, []),
        (VALID.replace("## Goal\n", "## Goal   \n"), []),  # trailing spaces are tolerated
        ("", ["the summary is empty"]),
        (VALID.replace("## Key Decisions\n", ""), ["missing heading '## Key Decisions'"]),
        (VALID.replace("### Blocked", "## Blocked"), ["missing heading '### Blocked'"]),
        (
            filled(Goal="   "),
            ["the '## Goal' section is empty; state the user's goal in one or two sentences"],
        ),
        (VALID + "\n## Next Steps\n- again\n", ["heading '## Next Steps' appears 2 times; use it once"]),
    ],
)
def test_validate_table(text: str, expected: list[str]) -> None:
    assert validate_summary(text) == expected


def test_out_of_order_is_reported() -> None:
    swapped = VALID.replace("## Next Steps", "@@").replace("## Key Decisions", "## Next Steps")
    swapped = swapped.replace("@@", "## Key Decisions")
    problems = validate_summary(swapped)
    assert len(problems) == 1 and problems[0].startswith("headings are out of order")


def test_every_missing_heading_is_named() -> None:
    problems = validate_summary("just prose, no headings")
    assert [p for p in problems if p.startswith("missing")] == [f"missing heading '{h}'" for h in HEADINGS]


def test_heading_inside_a_line_is_not_a_heading() -> None:
    text = VALID.replace("## Goal\n", "see ## Goal\n")
    assert "missing heading '## Goal'" in validate_summary(text)


def test_section_body() -> None:
    assert section_body(VALID, "## Goal") == "Fix the login bug in src/auth.py."
    assert section_body(VALID, "## Critical Context") == "- x"
    assert section_body("no headings", "## Goal") == ""
