"""The checks every language module's test makes (tests/summary/languages/test_<code>.py)."""

from __future__ import annotations

from sessionstore.summary.languages import LANGUAGES, instruction_lines, is_rule, names_old


def assert_markers(code: str, *, rule: str, plain: str, document: str, correction: str, old: str) -> None:
    """`rule` is a rule and `plain` is not; the second line of `document` (a file whose first line
    carries the language's letters) is an instruction; `old` is the old value in `correction`."""
    assert code in LANGUAGES
    assert is_rule(rule), rule
    assert not is_rule(plain), plain
    assert instruction_lines(document) == [document.split("\n")[1]]
    at = correction.rindex(old)
    assert names_old(correction, correction[:at], correction[at + len(old) :]), correction
