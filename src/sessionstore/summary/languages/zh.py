"""Chinese: "不要删除数据库", "预算是700，不是500" (no spaces: words match anywhere)."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="zh",
    rules=words(
        "不要, 不能, 不可以, 不准, 不许, 不得, 禁止, 必须, 必需, 务必, 務必, 一定要, 总是, 總是, "
        "始终, 始終, 永远, 永遠, 绝不, 絕不, 绝对不, 絕對不, 切勿, 请勿, 請勿, 只能, 只用, 只允许, "
        "仅限, 应该, 應該, 避免, 确保, 確保, 千万, 更喜欢, 别"
    ),
    instructions=words(
        "不要, 不能, 不得, 禁止, 必须, 务必, 務必, 一定要, 总是, 始终, 永远, 绝不, 切勿, 请勿, "
        "只能, 应该, 避免, 确保"
    ),
    letters=r"[\u4e00-\u9fff]",
    old_before=words(
        "不是, 而不是, 而非, 并非, 並非, 不再是, 原来是, 原來是, 原先是, 之前是, 以前是, 原为, 原為"
    ),
    old_after=words("改为, 改為, 改成, 变为, 變為, 变成, 變成, 调整为, 調整為, 换成, 換成"),
    spaced=False,
)
