"""Sentence splitting never cuts inside a value: numbers, versions, paths, URLs, money, dates, e.g."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sessionstore.summary.sentences import split_sentences


def test_the_issue_examples_stay_whole() -> None:
    assert split_sentences("Only Python 3.11. Use it.") == ["Only Python 3.11.", "Use it."]
    assert split_sentences("Load .../tasks/workflow.xml now. Then stop!") == [
        "Load .../tasks/workflow.xml now.",
        "Then stop!",
    ]
    assert split_sentences("Budget cap is $500 total. Never exceed without explicit approval.") == [
        "Budget cap is $500 total.",
        "Never exceed without explicit approval.",
    ]
    assert split_sentences("Ship by 2027-01-22, e.g. before the freeze. Ok?") == [
        "Ship by 2027-01-22, e.g. before the freeze.",
        "Ok?",
    ]
    assert split_sentences("See https://example.com/a.b?c=1. Done") == [
        "See https://example.com/a.b?c=1.",
        "Done",
    ]
    assert split_sentences("Ask J. Smith. He knows.") == ["Ask J. Smith.", "He knows."]


def test_an_abbreviation_that_can_close_a_sentence_does_before_a_capital() -> None:
    """A unit closes a sentence ("2081 min. Note that ..." is two facts, each correctable); a title, "e.g."
    or "approx." before a capital is not an end."""
    assert split_sentences("The timeout is 2081 min. Note that the deadline is 2027-04-23.") == [
        "The timeout is 2081 min.",
        "Note that the deadline is 2027-04-23.",
    ]
    assert split_sentences("It takes 540 ms. Ms. Lee agrees.") == ["It takes 540 ms.", "Ms. Lee agrees."]
    assert split_sentences("Retry 5 max. Never on 4xx. Meet at 10 a.m. Then ship, etc. Done.") == [
        "Retry 5 max.",
        "Never on 4xx.",
        "Meet at 10 a.m.",
        "Then ship, etc.",
        "Done.",
    ]
    for whole in (
        "Ask Dr. Smith now.",
        "Use a tool, e.g. Python here.",
        "It is approx. 5 GB.",
        "wait 5 min. then go.",
    ):
        assert split_sentences(whole) == [whole]


def test_lines_are_units_and_blank_text_is_nothing() -> None:
    assert split_sentences("- first item\n- second item\n\n") == ["- first item", "- second item"]
    assert split_sentences("  \n \n") == []


_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
VALUES = st.one_of(
    st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(0, 99), st.integers(0, 99), st.integers(0, 999)),
    st.builds(lambda a, b: f"Python {a}.{b}", st.integers(2, 4), st.integers(0, 20)),
    st.builds(lambda n, c: f"${n:,}.{c:02d}", st.integers(0, 10**7), st.integers(0, 99)),
    st.builds(
        lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}",
        st.integers(1990, 2099),
        st.integers(1, 12),
        st.integers(1, 28),
    ),
    st.builds(
        lambda parts, ext: "/".join(parts) + "." + ext, st.lists(_segment, min_size=1, max_size=4), _segment
    ),
    st.builds(lambda parts: ".../" + "/".join(parts) + ".xml", st.lists(_segment, min_size=1, max_size=3)),
    st.builds(lambda host, path: f"https://{host}.example.com/{path}.html?q=1.5", _segment, _segment),
    st.sampled_from(["e.g.", "i.e.", "etc.", "vs.", "Dr.", "approx."]),
)
WORDS = st.lists(
    st.sampled_from(["use", "the", "Budget", "never", "only", "at", "deploy", "and"]), max_size=4
)


@hsettings(max_examples=200, deadline=None)
@given(WORDS, VALUES, WORDS, st.sampled_from([".", "!", "?", ""]), WORDS)
def test_a_value_is_never_split(
    before: list[str], value: str, after: list[str], end: str, tail: list[str]
) -> None:
    sentence = " ".join([*before, value, *after]) + end
    text = sentence + (" " + " ".join(tail) if tail else "")
    pieces = split_sentences(text)
    assert any(value in piece for piece in pieces), (value, pieces)


@hsettings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300))
def test_nothing_is_lost_and_order_is_kept(text: str) -> None:
    pieces = split_sentences(text)
    assert all(p and p == p.strip() for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(text.split())


def test_a_long_line_splits_in_time_linear_in_its_length() -> None:
    """Each dot looks back a bounded window for its abbreviation, not the whole line before it: a
    370 KB one-line message (a pasted minified log) splits as it should, where a scan of the prefix per
    dot would take many minutes."""
    line = "Use v1. Then go, etc. Ask Dr. Smith. " * 10_000
    pieces = split_sentences(line)
    assert len(pieces) == 3 * 10_000 and pieces[:3] == ["Use v1.", "Then go, etc.", "Ask Dr. Smith."]
    long_word = "x" * 100 + "e.g. Next"  # a word longer than the window is not an abbreviation's tail
    assert split_sentences(long_word) == ["x" * 100 + "e.g.", "Next"]


def test_a_cjk_full_stop_ends_a_sentence_with_no_space_after_it() -> None:
    """Chinese and Japanese write no space after 。！？: each still ends its sentence, and the values
    on either side stay whole (no value holds one of these marks)."""
    text = "不要删除数据库db.internal:5432。永远使用Python 3.11！预算是500美元？"
    text += "絶対にmainにpushしない。締め切りは2027-01-22です。"
    assert split_sentences(text) == [
        "不要删除数据库db.internal:5432。",
        "永远使用Python 3.11！",
        "预算是500美元？",
        "絶対にmainにpushしない。",
        "締め切りは2027-01-22です。",
    ]
    assert split_sentences("「不要推送到main。」然后运行测试。") == ["「不要推送到main。」", "然后运行测试。"]
