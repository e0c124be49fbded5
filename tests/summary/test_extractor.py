"""Items from cut or dropped user words: whole sentences, ranked correction > rule > value > statement."""

from __future__ import annotations

from sessionstore.summary.extractor import MAX_ITEM_CHARS, extract, rank


def test_ranks() -> None:
    assert rank("Actually it is $700, not $500.") == 4
    assert rank("Never exceed without explicit approval.") == 3
    assert rank("nunca borres la base de datos") == 3  # another language's rule word
    assert rank("The replica lives at db.internal:5432.") == 2
    assert rank("the whole point is replacing the nightly cron with event triggers") == 1
    assert rank("ok thanks") == 0 and rank("sure") == 0
    assert rank("Actually it is $700, not $500.", corrects=False) == 3  # "not": a rule word


def test_items_are_whole_sentences_in_order_and_chatter_is_left_out() -> None:
    text = "Hi! Budget cap is $500 total. Never exceed without explicit approval. ok\n- use port 8443"
    assert [(i.text, i.rank) for i in extract(text)] == [
        ("Budget cap is $500 total.", 2),
        ("Never exceed without explicit approval.", 3),
        ("use port 8443", 2),
    ]


def test_a_long_sentence_keeps_its_head_and_tail_and_never_splits_a_value() -> None:
    sentence = (
        "Never touch db.internal:5432 " + "because of reasons " * 60 + "or the ticket ZEPHYR-7731 reopens."
    )
    (item,) = extract(sentence)
    assert len(item.text) <= MAX_ITEM_CHARS + 10 and " [...] " in item.text
    assert "db.internal:5432" in item.text and item.text.endswith("ZEPHYR-7731 reopens.")
    assert item.cost > 0
