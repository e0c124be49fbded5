"""Spanish (languages/es.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "es",
        rule="nunca borres la base de datos",
        plain="Deja de lado el archivo",
        document="Configuración\nnunca nunca borres la base de datos",
        correction="El presupuesto es 700, no 500",
        old="500",
    )
