"""Chinese (languages/zh.py): a rule, a plain sentence, a file's instruction, an old value."""

from helpers.languages import assert_markers


def test_markers() -> None:
    assert_markers(
        "zh",
        rule="不要删除数据库",
        plain="代码准备好了",
        document="说明\n禁止 不要删除数据库",
        correction="预算是700，不是500",
        old="500",
    )
