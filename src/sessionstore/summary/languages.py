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
gains no rule (tests/summary/test_languages.py checks every sentence of the real transcripts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "COPULA",
    "CORRECTIONS",
    "LANGUAGES",
    "Correction",
    "Language",
    "binds",
    "is_function_word",
    "is_rule",
    "names_old",
    "refers_back",
]


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


@dataclass(frozen=True)
class Correction:
    """One language's ways of naming a correction's old value (regular-expression fragments, matched
    case-insensitively): "700, not 500" is "700，不是500" / "500ではなく700" / "700, no 500"."""

    before: str = ""
    """Right before the old value: not / instead of / no longer ("而不是", "au lieu de", "вместо")."""
    after: str = ""
    """Right after the old value, when another value follows: Japanese "500ではなく700", "500改为700"."""
    start: str = ""
    """Before the old value of a change "from X to Y" (de, von, 从, с); `to` then follows X."""
    to: str = ""
    """Between X and Y of a change "from X to Y" ("a", "auf", "改为", "до")."""
    change: str = ""
    """A change verb the sentence must hold for "from X to Y" to be a change, not a range ("de 9 a 17")."""
    gated: str = ""
    """`before` words that are also English ("no", "non", "plus"): they count only with the language's
    cue in the sentence (`Language.cue`)."""
    copula: str = ""
    """What binds a value to its name ("es", "est", "ist", "是", "は"): "Le serveur est db1.internal"
    names the server's value as "The server is db1.internal" does."""


_VALUE_NEXT = r"(?=\s*[$€£¥]?\d|\s*[\w./~-]+\.\w)"
"""What `to` and `after` need next: another value (a number, an amount, a host or a path)."""

CORRECTIONS: dict[str, Correction] = {
    "es": Correction(
        copula=r"es|son|está|están|será",
        before=r"en (?:lugar|vez) de|y no|ya no (?:es|son|está)",
        start=r"de(?:sde)?",
        to=r"a|hasta",
        change=r"cambi\w*|sub\w*|baj\w*|aument\w*|reduc\w*|pas[ae]\w*|muev\w*|mov\w*",
        gated=r"no",
    ),
    "fr": Correction(
        copula=r"est|sont|sera",
        before=r"pas|et non|au lieu d[e'’]|plutôt que|ne (?:[\w'’-]+ ){0,2}plus",
        start=r"de|d['’]",
        to=r"à",
        change=r"chang\w*|pass\w*|augment\w*|rédui\w*|baiss\w*|déplac\w*|modifi\w*",
        gated=r"non|plus",
    ),
    "de": Correction(
        copula=r"ist|sind|wird|lautet",
        before=r"nicht|statt|anstatt|anstelle von|nicht mehr|kein(?:e|en)?",
        start=r"von",
        to=r"auf|zu|nach",
        change=r"änder\w*|geändert|erhöh\w*|senk\w*|verschieb\w*|verschoben|setz\w*|stell\w*",
    ),
    "pt": Correction(
        copula=r"é|são|está|será",
        before=r"não|em vez de|ao invés de|no lugar de|não mais|e não",
        start=r"de",
        to=r"para",
        change=r"mud\w*|alter\w*|aument\w*|reduz\w*|pass\w*|mov\w*",
    ),
    "it": Correction(
        copula=r"è|sono|sarà",
        before=r"invece di|anziché|piuttosto che|non più|e non",
        start=r"da",
        to=r"a",
        change=r"cambi\w*|port\w*|aument\w*|riduc\w*|ridu\w*|spost\w*|modific\w*|pass\w*",
        gated=r"non",
    ),
    "zh": Correction(
        copula=r"是|为|為|改为|改為|改成",
        before=r"不是|而不是|而非|并非|並非|不再是|原来是|原來是|原先是|之前是|以前是|原为|原為",
        after=r"改为|改為|改成|变为|變為|变成|變成|调整为|調整為|换成|換成",
        start=r"从|從|由",
        to=r"改为|改為|改成|改到|变为|變為|变成|變成|调整为|調整為|调整到|调到|提高到|降低到|增加到|减少到|增至|降至",
    ),
    "ja": Correction(
        copula=r"は|が|を",
        after=r"ではなく|じゃなくて|じゃなく|でなく|ではなくて",
        start="",
        to=r"から",
        change=r"に(?:変更|変え|修正|増や|減ら|上げ|下げ|延長|短縮|移|延期)",
    ),
    "ru": Correction(
        copula=r"это|является|—|равен|равна|будет",
        before=r"а не|вместо|больше не|уже не|не",
        start=r"с|со|от",
        to=r"до|на",
        change=r"измен\w*|помен\w*|увелич\w*|уменьш\w*|перенес\w*|подн\w*|сниз\w*|сдвин\w*",
    ),
}
_CUES = {code: re.compile(lang.cue, re.I) for code, lang in LANGUAGES.items() if lang.cue}
_CUES["fr"] = re.compile(
    r"[àâçéèêëîïôûùüÿœ]|(?<![\w-])(?:le|la|les|des|du|et|pour|une|sur|avec|dans|c['’]est)(?![\w-])", re.I
)
_ARTICLES = r"(?:(?:the|el|la|los|las|le|les|l['’]|der|die|das|den|dem|o|a|os|as|il|lo|gli|i)\s*)*"


def _end(fragment: str, spaced: bool) -> re.Pattern[str] | None:
    if not fragment:
        return None
    lead = r"(?<![\w-])" if spaced else ""
    return re.compile(rf"{lead}(?:{fragment})\s*{_ARTICLES if spaced else ''}$", re.I)


def _begin(fragment: str, spaced: bool) -> re.Pattern[str] | None:
    if not fragment:
        return None
    gap = r"(?=\s)" if spaced else ""
    return re.compile(rf"^\s*(?:{fragment}){gap}{_VALUE_NEXT}", re.I)


_RULES = [
    (
        _end(c.before, LANGUAGES[code].spaced),
        _end(c.gated, True),
        _CUES.get(code),
        _begin(c.after, LANGUAGES[code].spaced),
        _end(c.start, LANGUAGES[code].spaced) if c.start else None,
        _begin(c.to, LANGUAGES[code].spaced),
        re.compile(c.change, re.I) if c.change else None,
    )
    for code, c in CORRECTIONS.items()
]


_REACH = 80
"""How far (characters) around a value `names_old` looks: further than any marker, article or value."""


def names_old(sentence: str, before: str, after: str) -> bool:
    """Whether the value between `before` and `after` (both parts of `sentence`) is the old one of a
    correction written in one of `CORRECTIONS`' languages: after a "not" / "instead of" ("不是500",
    "au lieu de db1.internal"; a gated word only with its language's cue), before a Japanese "ではなく"
    or a Chinese "改为" followed by another value, or the X of a change "from X to Y" in a sentence
    with a change verb ("Ändere das Budget von 500 € auf 700 €", "从500改为700", "500から700に変更"; a
    range, "de 9:00 à 17:00", "10:00から12:00まで", is no change)."""
    before, after = before[-_REACH:], after[:_REACH]  # every marker is short: bounded work per value
    for prior, gated, cue, post, start, to, change in _RULES:
        if prior is not None and prior.search(before):
            return True
        if gated is not None and cue is not None and gated.search(before) and cue.search(sentence):
            return True
        if post is not None and post.match(after):
            return True
        changes = to is not None and to.match(after) and (start is None or start.search(before))
        if changes and (change is None or change.search(sentence)):
            return True
    return False


_CUES["de"] = re.compile(r"[äöüß]|(?<![\w-])(?:der|das|und|nicht|ein|eine|mit|für|auf|zu)(?![\w-])", re.I)
_CUES["pt"] = re.compile(r"[ãõçáéíóúâêô]|(?<![\w-])(?:os|um|uma|não|para|com|do|dos|das)(?![\w-])", re.I)
_CUES["ru"] = re.compile(r"[а-яё]", re.I)
_COPULAS = [
    (
        re.compile(
            rf"(?<![\w-])(?:{c.copula})(?![\w-])" if LANGUAGES[code].spaced else f"(?:{c.copula})", re.I
        ),
        _CUES.get(code) if LANGUAGES[code].spaced else None,
    )
    for code, c in CORRECTIONS.items()
    if c.copula
]
COPULA = re.compile("|".join(f"(?:{pattern.pattern})" for pattern, _ in _COPULAS), re.I)
"""Any language's copula (`Correction.copula`), whatever the sentence's language: for stripping one
off a name already known to be foreign (values.py); `binds` is the test for a sentence."""


def binds(sentence: str, head: str | None = None) -> bool:
    """Whether `sentence` binds with a copula of `CORRECTIONS`' languages ("预算是500", "Le budget est de
    500 €", "Бюджет — 500"): a spaced language's copula counts only with its cue in the sentence (the
    "EST" of "08:30 PM EST" is no French "est"). With `head` (the text before a value), the copula
    must end it: "El presupuesto es 500" binds 500."""
    for pattern, cue in _COPULAS:
        if cue is not None and not cue.search(sentence):
            continue
        if head is None and pattern.search(sentence):
            return True
        if head is not None and any(not head[m.end() :].strip(" *_`:") for m in pattern.finditer(head)):
            return True
    return False


_ARTICLES_OF = {
    "es": r"el|los|las|una|uno|del|nuestro|nuestra",
    "fr": r"les|des|une|du|notre",
    "de": r"der|die|das|den|dem|des|ein|eine|einen|unser|unsere",
    "pt": r"os|as|um|uma|do|da|nosso|nossa",
    "it": r"il|lo|gli|una|uno|del|della|nostro|nostra",
    "ru": r"наш|наша|наше|нет|это",
}
_FUNCTIONS = [
    (
        re.compile(
            "|".join(
                f"(?:{p})" for p in (c.copula, c.start, c.to, c.change, _ARTICLES_OF.get(code, "")) if p
            ),
            re.I,
        ),
        _CUES[code],
    )
    for code, c in CORRECTIONS.items()
    if code in _CUES
]


def is_function_word(word: str, sentence: str) -> bool:
    """Whether `word` is, in a language of `CORRECTIONS` whose cue `sentence` has, an article, a copula,
    a "from"/"to" of a change or a change verb ("das", "ist", "von", "cambia", "ändere"): never part of
    a subject's name, so "Das Budget ist 500 €" and "Ändere das Budget von 500 € auf 700 €" both name
    "budget". English text has no cue, so its words are never dropped here."""
    return any(cue.search(sentence) and pattern.fullmatch(word) for pattern, cue in _FUNCTIONS)


_CHANGE_BACK = {
    "es": r"no\s+(?:(?:lo|la|los|las|le|les)\s+)\w+(?:es|as)|(?:nunca|jamás)\s+(?:lo|la|los|las|le)\s+\w+",
    "fr": r"ne\s+(?:jamais\s+|pas\s+)?(?:le|la|les|l['’])\s*\w+(?:\s+(?:pas|jamais|plus))?",
    "de": r"(?:ändere|ändert|überschreite|verändere|erhöhe|senke|verschiebe)\s+(?:es|das|ihn|sie|dies)\s+"
    r"(?:nicht|nie|niemals)|(?:nicht|nie|niemals)\s+(?:ändern|überschreiten|erhöhen|senken|verschieben)",
    "pt": r"(?:não|nunca)\s+(?:(?:o|a|os|as)\s+\w+|\w+\s+(?:isso|isto))",
    "it": r"non\s+(?:(?:lo|la|li|le)\s+\w+|\w+(?:ar|er|ir)(?:lo|la|li|le))",
    "zh": r"(?:不要|不能|不可以|不准|不许|不得|禁止|绝不|絕不|切勿|请勿|請勿|千万不要|别)\s*"
    r"(?:改|更改|修改|改变|改變|变更|變更|超过|超過|超出|动|動|调整|調整|提高|降低)",
    "ja": r"(?:変更し|変え|超え|超過し|動かさ|いじら|上げ|下げ)"
    r"(?:ないで|てはいけない|ちゃだめ|ないこと|ません)",
    "ru": r"не\s+(?:меняй|изменяй|трогай|превышай|повышай|понижай|двигай|переноси)\w*"
    r"|нельзя\s+(?:менять|изменять|превышать|трогать|переносить)",
}
_BACK = re.compile(
    "|".join(
        rf"(?<![\w-])(?:{p})(?![\w-])" if LANGUAGES[code].spaced else f"(?:{p})"
        for code, p in _CHANGE_BACK.items()
    ),
    re.I,
)


def refers_back(sentence: str) -> bool:
    """Whether `sentence` is a rule, in one of `LANGUAGES`, about something said before it: a negated
    change or excess with an object pronoun or none ("No lo cambies", "Ne le change pas", "Ändere das
    nicht", "Não o altere", "Non cambiarlo", "不要改它", "変更しないで", "Не меняй это"), as "Never
    change it" is in English: extraction.py joins it to the previous sentence's value."""
    return _BACK.search(sentence) is not None
