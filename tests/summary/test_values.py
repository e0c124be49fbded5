"""Values and subjects: what a sentence binds, and to which name; slashed words are not paths."""

from __future__ import annotations

import pytest

from sessionstore.summary.values import is_path, moves, retired_paths, subject, values


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


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # a capitalised word before a date or a count is not a named version that swallows its start
        ("Deadline 2027-03-25.", ["2027-03-25"]),
        ("Deadline 2027-01-22 14:00 UTC.", ["2027-01-22 14:00 UTC"]),
        ("Use 4 GPUs.", ["4 GPUs"]),
        # units and money multipliers in capitals
        ("The VM has 16 GB RAM.", ["16 GB"]),
        ("Use 512MB max.", ["512MB"]),
        ("Budget is $1.5M.", ["$1.5M"]),
        ("Budget is $500K total.", ["$500K"]),
        ("The budget is 500 EUR.", ["500 EUR"]),
        # an IPv4 address with its port (or prefix) is one value
        ("The db is at 10.0.0.1:5432.", ["10.0.0.1:5432"]),
        ("Allow 10.0.0.0/16 only.", ["10.0.0.0/16"]),
        # a pre-release version keeps its suffix
        ("We pin 1.2.3-rc.1 for now.", ["1.2.3-rc.1"]),
        # a date with a month name is one value
        ("The deadline is March 3, 2027.", ["March 3, 2027"]),
        ("The deadline is 3 March 2027.", ["3 March 2027"]),
        # a URL keeps its balanced parentheses; a markdown link's closing one is not the URL's
        ("See https://en.wikipedia.org/wiki/Foo_(bar) now.", ["https://en.wikipedia.org/wiki/Foo_(bar)"]),
        ("See [docs](https://a.example.com/x/y).", ["https://a.example.com/x/y"]),
        # values written next to CJK text (no spaces there) are still values
        ("截止日期是2027-01-22。", ["2027-01-22"]),
        ("预算是$500。", ["$500"]),
        ("版本是3.11。", ["3.11"]),
        # unicode digits are digits
        ("budget is $٥٠٠", ["$٥٠٠"]),
        ("budget is ５００ dollars", ["５００ dollars"]),
    ],
)
def test_a_value_is_found_whole(sentence: str, expected: list[str]) -> None:
    assert values(sentence) == expected


@pytest.mark.parametrize(
    ("sentence", "name"),
    [
        ("Move the deadline to 2027-04-01.", "deadline"),
        ("Change the budget to $900.", "budget"),
        ("Raise the budget from $500 to $700.", "budget"),
        ("Please bump the timeout to 60 s.", "timeout"),
    ],
)
def test_a_change_verb_is_not_part_of_the_subject(sentence: str, name: str) -> None:
    assert subject(sentence) == name


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Sure, my user ID is mia_li_3668.", ["mia_li_3668"]),
        ("My user ID is mia_kim_4397, and the reservation ID is H9ZU1C.", ["mia_kim_4397", "H9ZU1C"]),
        ("Sure, my reservation ID is 1N99U6.", ["1N99U6"]),
        ("My flight HAT039 from ATL to SEA has been delayed.", ["HAT039"]),
        ("Order #W2378156 never arrived.", ["W2378156"]),
        ("Use gpt-4o for this.", ["gpt-4o"]),
    ],
)
def test_identifiers_mixing_letters_and_digits_are_values(sentence: str, expected: list[str]) -> None:
    """tau-bench users give their ids in exactly these shapes; without them the sentence is lost."""
    assert values(sentence) == expected


@pytest.mark.parametrize(
    "sentence", ["It is the 3rd time.", "Use utf and ascii.", "Plan B is fine.", "ok 42"]
)
def test_ordinals_and_plain_words_are_not_identifiers(sentence: str) -> None:
    assert all(not (any(c.isalpha() for c in v) and any(c.isdigit() for c in v)) for v in values(sentence))


def test_retired_paths_are_the_ones_a_sentence_is_done_with() -> None:
    cases = {
        "Stop touching `src/legacy.py`, edit src/parser.py instead.": ["src/legacy.py"],
        "Don't edit src/legacy.py anymore.": ["src/legacy.py"],
        "I renamed src/utils.py to src/helpers.py.": ["src/utils.py"],
        "src/utils.py was moved to lib/utils.py.": ["src/utils.py"],
        "src/a.py -> src/b.py": ["src/a.py"],
        "Use docs/guide.md instead of docs/old_guide.md.": ["docs/old_guide.md"],
        "The entry point is now src/main2.py, not src/main.py.": ["src/main.py"],
        "Switch the config from a/x.toml to a/y.toml.": ["a/x.toml"],
        "Move the file from src/a.py to src/b.py": ["src/a.py"],
        "config/old.toml is gone.": ["config/old.toml"],
        # a rule about a file, a part moved out of one, a copy, a plain mention: nothing retired
        "Never touch src/vendor.py.": [],
        "Move the helper from src/a.py to src/b.py.": [],
        "Copy src/a.py to src/b.py.": [],
        "Read src/a.py and stop worrying about tests.": [],
        "Go back to src/a.py and finish the fix.": [],
        "The budget is $500, not $700.": [],
    }
    for sentence, want in cases.items():
        assert retired_paths(sentence) == want, sentence


def test_moves_pair_each_renamed_or_replaced_path_with_the_path_now_in_its_place() -> None:
    cases = {
        "I renamed src/utils.py to src/helpers.py.": {"src/utils.py": "src/helpers.py"},
        "src/utils.py was moved to lib/utils.py.": {"src/utils.py": "lib/utils.py"},
        "a.py is now src/core/a.py.": {"a.py": "src/core/a.py"},
        "src/a.py -> src/b.py": {"src/a.py": "src/b.py"},
        "Use docs/guide.md instead of docs/old_guide.md.": {"docs/old_guide.md": "docs/guide.md"},
        "Switch the config from a/x.toml to a/y.toml.": {"a/x.toml": "a/y.toml"},
        # retired with nothing named in its place, or not retired at all: no pair
        "Stop touching `src/legacy.py`, edit src/parser.py instead.": {},
        "src/utils.py was moved to lib/.": {},
        "Copy src/a.py to src/b.py.": {},
        "Never touch src/vendor.py.": {},
    }
    for sentence, want in cases.items():
        assert moves(sentence) == want, sentence
