"""German (languages/de.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "de",
        rule="niemals force-push",
        plain="Das ist gut so",
        document="Übersicht\nniemals niemals force-push",
        correction="Das Budget ist 700 €, nicht 500 €",
        old="500 €",
    )
