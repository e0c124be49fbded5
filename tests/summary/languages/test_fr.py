"""French (languages/fr.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "fr",
        rule="ne jamais pousser sur main",
        plain="Le code est prêt",
        document="Réglages\njamais ne jamais pousser sur main",
        correction="Le budget est 700 €, pas 500 €",
        old="500 €",
    )
