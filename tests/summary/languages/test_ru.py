"""Russian (languages/ru.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "ru",
        rule="всегда запускай тесты",
        plain="Код готов",
        document="Правила\nзапрещено всегда запускай тесты",
        correction="Бюджет 700, а не 500",
        old="500",
    )
