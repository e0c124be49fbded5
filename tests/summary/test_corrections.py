"""Explicit corrections only: a sentence naming the new value and, with correction syntax, the old one."""

from __future__ import annotations

import pytest

from sessionstore.summary.corrections import Correction, corrections


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("Actually it is $700, not $500.", "$500", "$700"),
        ("use 8443 instead of the 8080", "8080", "8443"),
        ("the deadline moved to 2027-02-05 not 2027-01-22", "2027-01-22", "2027-02-05"),
        ("预算是700，不是500", "500", "700"),
        ("予算は500ではなく700", "500", "700"),
        ("El presupuesto es 700, no 500.", "500", "700"),
        ("Бюджет 700, а не 500.", "500", "700"),
    ],
)
def test_explicit_syntax_names_old_and_new(text: str, old: str, new: str) -> None:
    assert corrections(text) == [Correction(old, new)]


@pytest.mark.parametrize(
    "text",
    [
        "Budget cap is $500 total. Never exceed without explicit approval.",  # a rule, no correction
        "no wait, the api listens on 8443",  # a correction by order: chronology carries it
        "do not exceed $500, the cap is $700",  # "not" before a verb, not before a value
        "It is not 500 errors, it is timeouts",  # one value only
        "I do not want 2 bags",
        "no 500 errors today",  # "no" is Spanish only in Spanish text
    ],
)
def test_nothing_else_is_a_correction(text: str) -> None:
    assert corrections(text) == []
