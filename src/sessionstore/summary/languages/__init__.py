"""The phrase tables that survive in the summary package: one language per module, one registry.

A summary keeps the user's own words verbatim; phrase tables only help where words must be chosen
without a model: which sentences of a message cut for space are rules worth keeping as items
(extractor.py), which lines of a file the agent read are plainly instructions (file_rules.py), and
where a user message names a value as the old one of an explicit correction ("$700, not $500":
corrections.py). Each module of this package defines `LANGUAGE`, a `Language`; the registry loads
every module it finds here, so adding a language is one file (and its test), nothing else.

What callers may rely on: a marker counts only as a whole word in a spaced language (not inside
"sempre-fi" or "nonstop"); a `gated` marker (a word that is also English or a name: "no", "solo",
"Mai") counts only in a text holding its language's `cue`, so English text gains no rule from another
language's table. The tables are compiled once, after every module is registered.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from functools import cache

__all__ = [
    "LANGUAGES",
    "Language",
    "imperative_lines",
    "instruction_lines",
    "is_rule",
    "names_old",
    "register",
]


@dataclass(frozen=True)
class Language:
    """One language's markers: regular-expression fragments, matched case-insensitively."""

    code: str
    rules: tuple[str, ...]
    """Words and phrases that mark a standing rule or instruction (never, always, must, don't, ...)."""
    gated: tuple[str, ...] = ()
    """Rule markers that are also English words or names: they count only with `cue` in the text."""
    cue: str = ""
    """A sign that a text is in this language (an accented letter, an article, a script)."""
    old_before: str = ""
    """What stands right before a correction's old value: "not", "instead of", "不是", "а не"."""
    old_before_gated: str = ""
    """`old_before` words that are also English ("no", "non"): they count only with `cue`."""
    old_after: str = ""
    """What stands right after the old value when the new one follows: "500ではなく700", "500改为700"."""
    instructions: tuple[str, ...] = ()
    """Lowercase words that make a line of a file plainly an instruction ("must", "never", "do not"),
    found by plain substring search: fast enough to read everything an agent read."""
    imperatives: tuple[str, ...] = ()
    """Lowercase verbs that make a line of a document plainly an instruction when it starts with one
    (after a list or comment marker): "keep", "run", "use", "update"."""
    letters: str = ""
    """A character class some character of any text in this language matches (accents, a script):
    `instructions` are searched only in a text that has one. Empty: always searched (English)."""
    spaced: bool = True
    """Words are separated by spaces (markers match whole words); False for Chinese and Japanese."""


LANGUAGES: dict[str, Language] = {}
"""Every registered language by code, in registration order."""


def register(language: Language) -> Language:
    """Add `language` (replacing one with its code); the compiled tables are rebuilt on next use."""
    LANGUAGES[language.code] = language
    _compiled.cache_clear()
    _instruction_table.cache_clear()
    _imperative_table.cache_clear()
    return language


def _load() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        register(importlib.import_module(f"{__name__}.{module}").LANGUAGE)


def _words(parts: tuple[str, ...] | str, spaced: bool) -> re.Pattern[str] | None:
    parts = (parts,) if isinstance(parts, str) else parts
    body = "|".join(f"(?:{p})" for p in parts if p)
    if not body:
        return None
    return re.compile(rf"(?<![\w-])(?:{body})(?![\w-])" if spaced else body, re.I)


_ARTICLES = r"(?:(?:the|an?|old|previous|el|la|los|las|le|les|l['’]|der|die|das|den|dem|o|os|il|lo|gli)\s+)*"


def _ending(fragment: str, spaced: bool) -> re.Pattern[str] | None:
    if not fragment:
        return None
    lead = r"(?<![\w-])" if spaced else ""
    return re.compile(rf"{lead}(?:{fragment})\s*{_ARTICLES if spaced else ''}$", re.I)


_VALUE_NEXT = r"(?=\s*[$€£¥]?\d|\s*[\w./~-]+\.\w)"
"""What must follow an `old_after` marker: another value (a number, an amount, a host or a path)."""


@dataclass(frozen=True)
class _Compiled:
    rules: re.Pattern[str] | None
    gated: re.Pattern[str] | None
    cue: re.Pattern[str] | None
    before: re.Pattern[str] | None
    before_gated: re.Pattern[str] | None
    after: re.Pattern[str] | None


@cache
def _compiled() -> tuple[_Compiled, ...]:
    return tuple(
        _Compiled(
            rules=_words(lang.rules, lang.spaced),
            gated=_words(lang.gated, lang.spaced),
            cue=re.compile(lang.cue, re.I) if lang.cue else None,
            before=_ending(lang.old_before, lang.spaced),
            before_gated=_ending(lang.old_before_gated, lang.spaced),
            after=re.compile(rf"^\s*(?:{lang.old_after}){_VALUE_NEXT}", re.I) if lang.old_after else None,
        )
        for lang in LANGUAGES.values()
    )


@cache
def _instruction_table() -> tuple[tuple[re.Pattern[str] | None, tuple[str, ...], bool], ...]:
    return tuple(
        (re.compile(lang.letters) if lang.letters else None, lang.instructions, lang.spaced)
        for lang in LANGUAGES.values()
        if lang.instructions
    )


def _whole(low: str, at: int, end: int) -> bool:
    before = low[at - 1] if at > 0 else " "
    after = low[end] if end < len(low) else " "
    return not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-")


def instruction_lines(text: str) -> list[str]:
    """The lines of `text` (as written) holding an instruction word of a registered language
    (`Language.instructions`: a whole word in a spaced language), in order. Linear and cheap: a
    lowercase copy and one substring search per word, no regular expression over the text."""
    low = text.lower()
    if len(low) != len(text):  # a letter whose lowercase is longer: check line by line
        return [line for line in text.split("\n") if instruction_lines(line.lower()) and line]
    starts: set[int] = set()
    for letters, words, spaced in _instruction_table():
        if letters is not None and letters.search(text) is None:
            continue
        for word in words:
            at = low.find(word)
            while at >= 0:
                if not spaced or _whole(low, at, at + len(word)):
                    starts.add(low.rfind("\n", 0, at) + 1)
                    nl = low.find("\n", at)
                    if nl < 0:
                        break
                    at = low.find(word, nl)
                else:
                    at = low.find(word, at + 1)
    out = []
    for start in sorted(starts):
        end = text.find("\n", start)
        out.append(text[start : end if end >= 0 else len(text)])
    return out


@cache
def _imperative_table() -> tuple[tuple[re.Pattern[str] | None, frozenset[str]], ...]:
    return tuple(
        (re.compile(lang.letters) if lang.letters else None, frozenset(lang.imperatives))
        for lang in LANGUAGES.values()
        if lang.imperatives
    )


_LEAD = " \t-*+•#/>0123456789.)→"
"""What may stand before a line's first word: indentation, list and comment markers, a line number."""


def imperative_lines(text: str) -> list[str]:
    """The lines of `text` whose first word (after `_LEAD`) is an imperative verb of a registered
    language ("- Keep pull requests small.", "# Run make lint first"), in order."""
    verbs: set[str] = set()
    for letters, words in _imperative_table():
        if letters is None or letters.search(text) is not None:
            verbs |= words
    if not verbs:
        return []
    out = []
    for line in text.split("\n"):
        first = line.lstrip(_LEAD)[:16].split(" ", 1)
        if len(first) == 2 and first[0].lower() in verbs:
            out.append(line)
    return out


def _has_cue(table: _Compiled, text: str) -> bool:
    return table.cue is not None and table.cue.search(text) is not None


def is_rule(text: str) -> bool:
    """Whether `text` holds a rule marker of a registered language (a gated one only with its cue)."""
    for table in _compiled():
        if table.rules is not None and table.rules.search(text):
            return True
        if table.gated is not None and table.gated.search(text) and _has_cue(table, text):
            return True
    return False


_REACH = 60
"""How far (characters) around a value `names_old` looks: further than any marker and its articles."""


def names_old(sentence: str, before: str, after: str) -> bool:
    """Whether the value between `before` and `after` (parts of `sentence`) is named as the old one
    of an explicit correction: right after a "not" / "instead of" / "不是" (a gated word only with its
    language's cue), or right before a "ではなく" / "改为" that another value follows."""
    before, after = before[-_REACH:], after[:_REACH]
    for table in _compiled():
        if table.before is not None and table.before.search(before):
            return True
        if table.before_gated is not None and table.before_gated.search(before) and _has_cue(table, sentence):
            return True
        if table.after is not None and table.after.match(after):
            return True
    return False


_load()
