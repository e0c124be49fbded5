"""Japanese (languages/ja.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "ja",
        rule="絶対にmainにpushしないで",
        plain="コードの準備ができた",
        document="せつめい\n禁止 絶対にmainにpushしないで",
        correction="予算は500ではなく700",
        old="500",
    )
