"""The phrase tables that survive in the summary package: one language per module, one registry.

A summary keeps the user's own words verbatim; phrase tables only help where words must be chosen
without a model: which sentences of a message cut for space are rules worth keeping as items
(extractor.py), which lines of a file the agent read are plainly instructions (file_rules.py), and
where a user message names a value as the old one of an explicit correction ("$700, not $500":
corrections.py). Each module of this package defines `LANGUAGE`, a `Language`; the registry loads
every module it finds here, so adding a language is one file (and its test), nothing else.

Every table is plain lowercase words and phrases, matched as whole words (in a language written
with spaces) by set lookups and substring search: no regular expression runs over the text, so the
cost is a few microseconds per sentence and linear in what the agent read. A `gated` word (one that
is also English or a name: "no", "solo", "mai") counts only in a text holding its language's `cue`,
so English text gains no rule from another language's table. The tables are built once, after every
module is registered, and rebuilt when `register` adds one.
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
    "has_correction_marker",
    "imperative_lines",
    "instruction_lines",
    "is_rule",
    "names_old",
    "register",
    "words",
]


@dataclass(frozen=True)
class Language:
    """One language's words (lowercase; phrases of several words allowed)."""

    code: str
    rules: tuple[str, ...]
    """Words that mark a standing rule or preference in what a user wrote (never, must, don't, ...)."""
    gated: tuple[str, ...] = ()
    """Rule words that are also English words or names: they count only with `cue` in the text."""
    cue: str = ""
    """A regular expression any text in this language matches (an accented letter, an article)."""
    instructions: tuple[str, ...] = ()
    """Words that make a line of a file plainly an instruction ("must", "never", "do not")."""
    imperatives: tuple[str, ...] = ()
    """Verbs that make a line of a document an instruction when it opens with one ("keep", "run")."""
    letters: str = ""
    """A character class some character of any text in this language matches (accents, a script):
    a file is searched for this language's `instructions` only when it has one. Empty: always."""
    old_before: tuple[str, ...] = ()
    """What stands right before a correction's old value: "not", "instead of", "不是", "а не"."""
    old_before_gated: tuple[str, ...] = ()
    """`old_before` words that are also English ("no", "non"): they count only with `cue`."""
    old_after: tuple[str, ...] = ()
    """What stands right after the old value when the new one follows: "500ではなく700"."""
    spaced: bool = True
    """Words are separated by spaces (whole-word matching); False for Chinese and Japanese."""


def words(text: str) -> tuple[str, ...]:
    """The comma-separated words or phrases of `text`, stripped: how a language module writes a table."""
    return tuple(w.strip() for w in text.split(",") if w.strip())


LANGUAGES: dict[str, Language] = {}
"""Every registered language by code, in registration order."""


def register(language: Language) -> Language:
    """Add `language` (replacing one with its code); the tables are rebuilt on next use."""
    LANGUAGES[language.code] = language
    _tables.cache_clear()
    _markers.cache_clear()
    _rule_words.cache_clear()
    return language


def _load() -> None:
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        register(importlib.import_module(f"{__name__}.{module}").LANGUAGE)


_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")


@dataclass(frozen=True)
class _Words:
    """A word list indexed for fast matching: each entry under its first word (spaced languages),
    so a sentence is checked by a set intersection and a few phrase searches; or a list of strings
    to find anywhere (Chinese, Japanese), skipped for a text with no character beyond ASCII."""

    first: dict[str, tuple[str, ...]]
    anywhere: tuple[str, ...]

    @classmethod
    def of(cls, entries: tuple[str, ...], spaced: bool) -> _Words:
        if not spaced:
            return cls({}, tuple(entries))
        first: dict[str, list[str]] = {}
        for entry in entries:
            head = _WORD.match(entry)
            if (head is not None and head.end() == len(entry)) or (
                head is not None and entry[head.end()] == " "
            ):
                first.setdefault(head.group(0), []).append(entry)
            else:
                first.setdefault("", []).append(entry)  # an odd entry ("l'"): searched as is
        return cls({k: tuple(v) for k, v in first.items()}, ())

    def found(self, low: str, words: set[str]) -> bool:
        """Whether lowercase `low` (its words: `words`) holds one of these entries, whole."""
        if self.anywhere and not low.isascii() and any(entry in low for entry in self.anywhere):
            return True
        for word in words & self.first.keys() | ({""} & self.first.keys()):
            for entry in self.first[word]:
                if entry == word or _whole(low, entry):
                    return True
        return False


def _whole(low: str, phrase: str) -> bool:
    at = low.find(phrase)
    while at >= 0:
        if _bounded(low, at, at + len(phrase)):
            return True
        at = low.find(phrase, at + 1)
    return False


def _bounded(low: str, at: int, end: int) -> bool:
    before = low[at - 1] if at > 0 else " "
    after = low[end] if end < len(low) else " "
    return not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-")


@dataclass(frozen=True)
class _Table:
    rules: _Words
    gated: _Words
    cue: re.Pattern[str] | None
    instructions: tuple[str, ...]
    imperatives: frozenset[str]
    letters: re.Pattern[str] | None
    before: tuple[str, ...]
    before_gated: tuple[str, ...]
    after: tuple[str, ...]
    spaced: bool


@cache
def _tables() -> tuple[_Table, ...]:
    return tuple(
        _Table(
            rules=_Words.of(lang.rules, lang.spaced),
            gated=_Words.of(lang.gated, lang.spaced),
            cue=re.compile(lang.cue, re.I) if lang.cue else None,
            instructions=lang.instructions,
            imperatives=frozenset(lang.imperatives),
            letters=re.compile(lang.letters, re.I) if lang.letters else None,
            before=lang.old_before,
            before_gated=lang.old_before_gated,
            after=lang.old_after,
            spaced=lang.spaced,
        )
        for lang in LANGUAGES.values()
    )


def _lower(text: str) -> str:
    return text.lower().replace("’", "'")


_PUNCTUATION = ".,;:!?()[]{}\"'`*_<>/«»“”„¿¡…"


def _word_set(low: str) -> set[str]:
    """The words of lowercase `low`, punctuation around them taken off ("don't" and "off-limits" stay
    whole)."""
    return {w.strip(_PUNCTUATION) for w in low.split()}


def _cued(table: _Table, text: str) -> bool:
    return table.cue is not None and table.cue.search(text) is not None


@cache
def _rule_words() -> tuple[_Words, _Words, dict[str, tuple[_Table, ...]]]:
    """Every language's ungated rule words in one index; every gated word in another, with the
    tables (languages) whose cue it needs."""
    ungated = tuple(w for lang in LANGUAGES.values() if lang.spaced for w in lang.rules)
    anywhere = tuple(w for lang in LANGUAGES.values() if not lang.spaced for w in lang.rules)
    index = _Words(_Words.of(ungated, True).first, anywhere)
    owners: dict[str, list[_Table]] = {}
    for lang, table in zip(LANGUAGES.values(), _tables(), strict=True):
        for word in lang.gated:
            owners.setdefault(word, []).append(table)
    gated = _Words.of(tuple(owners), True)
    return index, gated, {w: tuple(t) for w, t in owners.items()}


def is_rule(text: str) -> bool:
    """Whether `text` (a sentence) holds a rule word of a registered language (a gated one only
    with its language's cue): a set intersection with every language's words at once."""
    low = _lower(text)
    words = _word_set(low)
    index, gated, owners = _rule_words()
    if index.found(low, words):
        return True
    for word in words & gated.first.keys():
        for entry in gated.first[word]:
            if (entry == word or _whole(low, entry)) and any(_cued(t, text) for t in owners[entry]):
                return True
    return False


def instruction_lines(text: str) -> list[str]:
    """The lines of `text` (as written) holding an instruction word of a registered language
    (`Language.instructions`, whole in a spaced language), in order: a lowercase copy and one
    substring search per word, linear in the text."""
    low = _lower(text)
    if len(low) != len(text):  # a letter whose lowercase is longer: check line by line
        return [line for line in text.split("\n") if line and instruction_lines(_lower(line))]
    starts: set[int] = set()
    for table in _tables():
        if not table.instructions or (table.letters is not None and table.letters.search(text) is None):
            continue
        for word in table.instructions:
            at = low.find(word)
            while at >= 0:
                if table.spaced and not _bounded(low, at, at + len(word)):
                    at = low.find(word, at + 1)
                    continue
                starts.add(low.rfind("\n", 0, at) + 1)
                end = low.find("\n", at)
                at = low.find(word, end) if end >= 0 else -1
    out = []
    for start in sorted(starts):
        end = text.find("\n", start)
        out.append(text[start : end if end >= 0 else len(text)])
    return out


_LEAD = " \t-*+•#/>0123456789.)→"
"""What may stand before a line's first word: indentation, list and comment markers, a line number."""


def imperative_lines(text: str) -> list[str]:
    """The lines of `text` whose first word (after `_LEAD`) is an imperative verb of a registered
    language ("- Keep pull requests small.", "# Run make lint first"), in order."""
    verbs: set[str] = set()
    for table in _tables():
        if table.imperatives and (table.letters is None or table.letters.search(text) is not None):
            verbs |= table.imperatives
    if not verbs:
        return []
    out = []
    for line in text.split("\n"):
        first = line.lstrip(_LEAD)[:16].split(" ", 1)
        if len(first) == 2 and first[0].lower() in verbs:
            out.append(line)
    return out


_ARTICLES = frozenset(
    words(
        "the, a, an, old, previous, earlier, el, la, los, las, le, les, l', der, die, das, den, "
        "dem, o, os, il, lo, gli"
    )
)
_VALUE_NEXT = re.compile(r"\s*(?:[$€£¥]?\d|[\w./~-]+\.\w)")
"""What must follow an `old_after` marker: another value (a number, an amount, a host or a path)."""


def _ends_with(before: str, phrases: tuple[str, ...], spaced: bool) -> bool:
    for phrase in phrases:
        if before.endswith(phrase) and (
            not spaced or _bounded(before, len(before) - len(phrase), len(before))
        ):
            return True
    return False


def names_old(sentence: str, before: str, after: str) -> bool:
    """Whether the value between `before` and `after` (parts of `sentence`) is named as the old one
    of an explicit correction: right after a "not" / "instead of" / "不是" (articles between allowed;
    a gated word only with its language's cue), or right before a "ではなく" / "改为" that another
    value follows."""
    low = _lower(before[-60:]).rstrip(" \t,:*_`\"'(")
    words = low.split(" ")
    while words and words[-1] in _ARTICLES:
        words.pop()
    spaced_low = " ".join(words).rstrip()
    for table in _tables():
        tail = spaced_low if table.spaced else low
        if _ends_with(tail, table.before, table.spaced):
            return True
        if (
            table.before_gated
            and _ends_with(tail, table.before_gated, table.spaced)
            and _cued(table, sentence)
        ):
            return True
        rest = after[:60].lstrip()
        for marker in table.after:
            if rest.startswith(marker) and _VALUE_NEXT.match(rest, len(marker)):
                return True
    return False


@cache
def _markers() -> tuple[_Words, tuple[str, ...]]:
    spaced = tuple(dict.fromkeys(w for t in _tables() if t.spaced for w in (*t.before, *t.before_gated)))
    unspaced = tuple(dict.fromkeys(w for t in _tables() for w in (*t.after, *(() if t.spaced else t.before))))
    return _Words.of(spaced, True), unspaced


_VALUE_TOKEN = re.compile(r"\s*(?:(?:the|an?|old|previous|earlier)\s+)?\S*[\d/@$€£¥]")
"""A value-like word (a digit, a path, an address, an amount) right after a marker."""


def has_correction_marker(text: str) -> bool:
    """Whether `text` may name a correction's old value: a marker word ("not", "instead of", ...)
    with a value-like word right after it, or a marker of a language written without spaces. A
    cheap test before looking for values (most messages have none)."""
    low = _lower(text)
    spaced, unspaced = _markers()
    if not low.isascii() and any(marker in low for marker in unspaced):
        return True
    for word in _word_set(low) & spaced.first.keys():
        for marker in spaced.first[word]:
            at = low.find(marker)
            while at >= 0:
                end = at + len(marker)
                if _bounded(low, at, end) and _VALUE_TOKEN.match(low, end):
                    return True
                at = low.find(marker, end)
    return False


_load()
