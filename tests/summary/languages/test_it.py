"""Italian (languages/it.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "it",
        rule="devi sempre eseguire i test",
        plain="Il codice è pronto",
        document="Perché\nvietato devi sempre eseguire i test",
        correction="Il budget è 700, invece di 500",
        old="500",
    )
