"""Portuguese (languages/pt.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "pt",
        rule="nunca apague o banco",
        plain="O código está pronto",
        document="Configuração\nnunca nunca apague o banco",
        correction="O orçamento é 700, não 500",
        old="500",
    )
