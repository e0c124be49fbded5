"""Values: found whole (for corrections), and the cheap tests cuts and ranks use."""

from __future__ import annotations

from sessionstore.summary.values import has_value, is_path, quoted_spans, values


def test_values_are_found_whole() -> None:
    text = (
        "Actually it is $700, not $500. Use src/a.py on db.internal:5432 by 2027-01-22 (30 s), id mia_li_3668"
    )
    assert values(text) == [
        "$700",
        "$500",
        "src/a.py",
        "db.internal:5432",
        "2027-01-22",
        "30 s",
        "mia_li_3668",
    ]
    assert is_path("src/a.py") and not is_path("Claude/Gemini")


def test_has_value_is_a_superset_test() -> None:
    for text in ("port 8443", "see docs/x", "mail a@b.io", "host example.com", "$5"):
        assert has_value(text)
    assert not has_value("never push to main on fridays.")


def test_quoted_spans() -> None:
    text = 'run `make test` then "the x flag" ok'
    assert [text[a:b] for a, b in quoted_spans(text)] == ["`make test`", '"the x flag"']
