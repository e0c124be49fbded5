"""Context a harness injects as a user or developer message, named in a few words (formats/injected.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.formats.injected import TAGS, injected


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>",
         "AGENTS.md instructions for /repo"),
        ("# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>\n<environment_context>\n"
         "</environment_context>", "AGENTS.md instructions for /r"),
        ("<environment_context>\n  <cwd>/home/me/app</cwd>\n</environment_context>",
         "environment context (/home/me/app)"),
        ("<permissions instructions>\nsandbox\n</permissions instructions>",
         "permissions instructions (sandbox and approvals)"),
        ("<user_instructions>\nuse uv\n</user_instructions>", "AGENTS.md instructions"),
        ("<system-reminder>todo list is empty</system-reminder>\n\n<system-reminder>x</system-reminder>",
         "system reminder"),
        ("<skill>\n<name>pdf</name>\n</skill>", "skill instructions"),
    ],
)  # fmt: skip
def test_injected_context_is_named(text: str, name: str) -> None:
    assert injected(text) == name


@pytest.mark.parametrize(
    "text",
    [
        "fix the expired-token path",
        "<system-reminder>x</system-reminder>\nnow fix the flaky test",  # the person's words after it
        "<div>my html</div>",
        "see # AGENTS.md instructions for /repo",
        "",
    ],
)
def test_what_a_person_typed_is_not(text: str) -> None:
    assert injected(text) is None


@given(st.text(), st.sampled_from(sorted(TAGS)))
def test_words_after_an_injected_element_are_never_folded(words: str, tag: str) -> None:
    found = injected(f"<{tag}>\nrules\n</{tag}>\n{words}")
    if words.strip() and injected(words) is None:
        assert found is None  # a person's words follow it: the message is theirs, shown whole
    else:
        assert found is not None and found.startswith(TAGS[tag])
