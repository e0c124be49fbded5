"""Values and subjects: what a sentence binds, and to which name; slashed words are not paths."""

from __future__ import annotations

import pytest

from sessionstore.compaction.values import is_path, subject, values


@pytest.mark.parametrize(
    ("sentence", "expected", "name"),
    [
        ("Budget cap is $500 total.", ["$500"], "budget cap"),
        ("Only Python 3.11.", ["Python 3.11"], "python"),
        ("deadline 2027-03-25", ["2027-03-25"], "deadline"),
        ("Actually the deadline is 2027-01-22 and does not move.", ["2027-01-22"], "deadline"),
        ("The production database is Postgres 15.", ["Postgres 15"], "production database"),
        ("The on-call owner is Priya Raman.", ["Priya Raman"], "on-call owner"),
        ("Timeout is 30 s, ticket ZEPHYR-7731.", ["30 s", "ZEPHYR-7731"], "timeout"),
        ("The API is https://api.example.com/v2/x.", ["https://api.example.com/v2/x"], "api"),
        ("The cache host is db.internal:5432.", ["db.internal:5432"], "cache host"),
    ],
)
def test_values_and_subjects(sentence: str, expected: list[str], name: str) -> None:
    found = values(sentence)
    assert found == expected
    assert subject(sentence, found) == name


def test_slashed_words_are_not_paths() -> None:
    for word in ("Claude/Gemini", "CI/CD.", "Zone/X", "and/or"):
        assert not is_path(word) and word.rstrip(".") not in values(f"We use {word} daily.")
    for path in ("src/auth.py", "/etc/hosts", "../a/b", "~/x", ".../tasks/workflow.xml", "a/b/c"):
        assert is_path(path), path


def test_no_value_no_subject() -> None:
    assert values("Reply in bullet points only.") == [] and subject("Reply in bullet points only.") is None
