"""Japanese: "絶対にmainにpushしない", "予算は500ではなく700" (no spaces: words match anywhere)."""

from sessionstore.summary.languages import Language, words

LANGUAGE = Language(
    code="ja",
    rules=words(
        "絶対, 必ず, 常に, いつも, 決して, しないで, しないこと, ないでください, ないで下さい, "
        "てはいけない, ではいけない, てはならない, ちゃだめ, ちゃダメ, ちゃいけない, だめ, ダメ, "
        "禁止, べき, なければならない, なければいけない, ないといけない, 必要がある, のみ, 避けて"
    ),
    instructions=words(
        "絶対, 必ず, 常に, 決して, しないで, てはいけない, てはならない, 禁止, べき, なければならない"
    ),
    letters=r"[\u3040-\u30ff]",
    old_after=words("ではなく, じゃなくて, じゃなく, でなく, ではなくて"),
    spaced=False,
)
