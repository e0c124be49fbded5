"""The markers of a standing rule in languages other than English: a small table, no dependency.

extraction.py knows English rules by their words (must, never, always, only, don't, ...). A user who
writes "nunca borres la base de datos", "ne jamais pousser sur main", "niemals force-push",
"不要删除数据库", "絶対にmainにpushしない" or "всегда запускай тесты" states a rule just as much. `is_rule`
finds the common imperative and negation markers of Spanish, French, German, Portuguese, Italian,
Chinese, Japanese and Russian: never / always / only / must / must not / forbidden / make sure /
avoid / prefer, and each language's negation where it marks a prohibition.

What callers may rely on: a marker counts only as a whole word (not inside "sempre-fi" or "nonstop");
a word that is also English or a name ("no", "solo", "non", "Mai", "Evita") counts only in a sentence
with a cue of its language (an article, an accented letter, a common function word), so English text
gains no rule (tests/compaction/test_languages.py checks every sentence of the real transcripts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LANGUAGES", "Language", "is_rule"]


@dataclass(frozen=True)
class Language:
    """One language's rule markers (regular-expression fragments, matched case-insensitively)."""

    markers: tuple[str, ...]
    """Words and phrases that mark a rule wherever they stand."""
    gated: tuple[str, ...] = ()
    """Ones that are also English words or names: they count only with a `cue` in the sentence."""
    cue: str = ""
    """A sign that the sentence is in this language."""
    spaced: bool = True
    """Words are separated by spaces (markers match whole words); False for Chinese and Japanese."""


_ES_CUE = (
    r"[ñ¿¡áéíóú]|(?<![\w-])(?:el|los|las|del|una|que|para|esto|esta|este|nada|archivo|rama|cambios|pero|"
    r"porque|ahora|base de datos)(?![\w-])"
)
_IT_CUE = (
    r"[àèìòù]|(?<![\w-])(?:il|lo|gli|della|delle|dei|che|una|questo|questa|niente|codice|ramo|modifiche|"
    r"adesso|sul|sulla|nel|nella|sempre|soltanto)(?![\w-])"
)

LANGUAGES: dict[str, Language] = {
    "es": Language(
        markers=(
            r"nunca|jamás|siempre|no debes|no debe|debes|deben|tienes que|tiene que|hay que",
            r"(?:es |está )?obligatorio|(?:está )?prohibido|asegúrate|asegurate|evitar|sólo|solamente",
            r"únicamente|prefiero|prefiere|por favor,? no",
        ),
        gated=(r"no\s+(?:(?:lo|la|los|las|le|les|me|te|nos|se)\s+)?\w+(?:es|as)", r"evita|solo"),
        cue=_ES_CUE,
    ),
    "fr": Language(
        markers=(
            r"jamais|toujours|ne\s+(?:[\w'’-]+\s+){0,3}?(?:pas|jamais|plus|rien)|n['’]\w+\s+(?:pas|jamais|plus|rien)",
            r"il (?:ne )?faut|tu dois|vous devez|on doit|doit|doivent|interdite?|obligatoire",
            r"assure-toi|assurez-vous|évite|évitez|éviter|uniquement|seulement|je préfère|préfère|préférez",
        ),
    ),
    "de": Language(
        markers=(
            r"niemals|nie|immer|stets|nicht|kein|keine|keinen|keinem|keiner|keinesfalls|auf keinen fall",
            r"muss|musst|müssen|müsst|darf|darfst|dürfen|dürft|verboten|unbedingt|ausschließlich|nur",
            r"vermeide|vermeiden|stelle sicher|stell sicher|stellen sie sicher|achte darauf|bevorzuge",
        ),
    ),
    "pt": Language(
        markers=(
            r"nunca|sempre|jamais|não|deve|devem|tem que|tem de|têm que|precisa|precisam",
            r"(?:é )?obrigatório|proibido|certifique-se|evite|evitar|apenas|somente|só|prefiro|prefere",
        ),
    ),
    "it": Language(
        markers=(
            r"devi|deve|dovete|bisogna|(?:è )?obbligatorio|(?:è )?vietato|assicurati|assicuratevi",
            r"soltanto|solamente|preferisco|preferisce|per favore,? non",
        ),
        gated=(
            r"non\s+(?:(?:lo|la|li|le|ne|si|ci|mi|ti)\s+)?\w+(?:are|ere|ire)(?:lo|la|li|le|ne)?",
            r"mai|evita",
        ),
        cue=_IT_CUE,
    ),
    "zh": Language(
        markers=(
            r"不要|不能|不可以|不准|不许|不得|禁止|必须|必需|务必|務必|一定要|总是|總是|始终|始終|永远|永遠",
            r"绝不|絕不|绝对不|絕對不|切勿|请勿|請勿|只能|只用|只允许|仅限|应该|應該|避免|确保|確保|千万|更喜欢",
            r"(?:^|(?<=[\s，,。！!；;：:「“\"']))别(?![的人处])",
        ),
        spaced=False,
    ),
    "ja": Language(
        markers=(
            r"絶対|必ず|常に|いつも|決して|しないで|しないこと|ないでください|ないで下さい|てはいけない|ではいけない",
            r"てはならない|ちゃだめ|ちゃダメ|ちゃいけない|だめ|ダメ|禁止|べき|なければならない|なければいけない",
            r"ないといけない|必要がある|のみ|避けて",
        ),
        spaced=False,
    ),
    "ru": Language(
        markers=(
            r"всегда|никогда|не|нельзя|нужно|надо|должен|должна|должно|должны|обязательно|запрещено",
            r"запрещается|только|избегай|избегайте|убедись|убедитесь|предпочитаю|предпочитает",
            r"ни в коем случае",
        ),
    ),
}


def _compile(parts: tuple[str, ...], spaced: bool) -> re.Pattern[str] | None:
    if not parts:
        return None
    body = "|".join(f"(?:{p})" for p in parts)
    return re.compile(rf"(?<![\w-])(?:{body})(?![\w-])" if spaced else body, re.I)


_TABLE = [
    (_compile(lang.markers, lang.spaced), _compile(lang.gated, lang.spaced), re.compile(lang.cue, re.I))
    for lang in LANGUAGES.values()
]


def is_rule(sentence: str) -> bool:
    """Whether `sentence` holds a rule marker of one of `LANGUAGES` (a gated one only with its cue)."""
    for markers, gated, cue in _TABLE:
        if markers is not None and markers.search(sentence):
            return True
        if gated is not None and gated.search(sentence) and cue.search(sentence):
            return True
    return False
