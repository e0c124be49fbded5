"""Japanese: "絶対にmainにpushしない", "予算は500ではなく700" (no spaces: markers match anywhere)."""

from sessionstore.summary.languages import Language

LANGUAGE = Language(
    code="ja",
    rules=(
        r"絶対|必ず|常に|いつも|決して|しないで|しないこと|ないでください|ないで下さい|てはいけない|ではいけない",
        r"てはならない|ちゃだめ|ちゃダメ|ちゃいけない|だめ|ダメ|禁止|べき|なければならない|なければいけない",
        r"ないといけない|必要がある|のみ|避けて",
    ),
    old_after=r"ではなく|じゃなくて|じゃなく|でなく|ではなくて",
    instructions=(
        "絶対",
        "必ず",
        "常に",
        "決して",
        "しないで",
        "てはいけない",
        "てはならない",
        "禁止",
        "べき",
        "なければならない",
    ),
    letters=r"[\u3040-\u30ff]",
    spaced=False,
)
