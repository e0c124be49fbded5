"""The language registry: every module here registered, tables built after all of them (the old
table was built before three languages' cues were added), a new language works at once, and no
real English sentence gains a rule from another language's table."""

from __future__ import annotations

import pkgutil
from pathlib import Path

from pydantic_ai.messages import UserPromptPart

import sessionstore.summary.languages as languages
from sessionstore.formats.transcripts import read_transcript
from sessionstore.summary.languages import LANGUAGES, Language, is_rule, register
from sessionstore.summary.sentences import split_sentences
from sessionstore.summary.text import user_text


def test_every_module_is_registered() -> None:
    modules = {m.name for m in pkgutil.iter_modules(languages.__path__)}
    assert set(LANGUAGES) == modules >= {"en", "es", "fr", "de", "pt", "it", "zh", "ja", "ru"}


def test_every_gated_word_fires_with_its_cue() -> None:
    """The bug this package replaced: cues added after the table was built never fired."""
    assert is_rule("solo usa el archivo nuevo")  # es: "solo" with a Spanish cue
    assert is_rule("non toccare il ramo main")  # it: "non" with an Italian cue
    assert is_rule("ne le pousse pas sur la branche")  # fr: "pas" with a French cue
    assert not is_rule("solo mode is fun") and not is_rule("Mai Tanaka joined")


def test_a_registered_language_works_at_once() -> None:
    assert not is_rule("zorblax the database")
    try:
        register(Language(code="xx", rules=("zorblax",)))
        assert is_rule("zorblax the database")
    finally:
        del LANGUAGES["xx"]
        register(LANGUAGES["en"])  # rebuild the tables without it
    assert not is_rule("zorblax the database")


def test_real_english_sentences_gain_no_rule_from_other_tables(realdata: Path) -> None:
    english = LANGUAGES["en"]
    others = [lang for code, lang in LANGUAGES.items() if code != "en"]
    sentences = set()
    for name in ("claude_code/codemie_session-3fe1b6bc.jsonl", "claude_code/spotter_tool_heavy.jsonl"):
        for step in read_transcript(realdata / name).steps:
            for m in step.messages:
                for p in m.parts:
                    if isinstance(p, UserPromptPart):
                        sentences.update(split_sentences(user_text(p)))
    try:
        for lang in others:
            del LANGUAGES[lang.code]
        register(english)
        alone = {s for s in sentences if is_rule(s)}
    finally:
        for lang in others:
            register(lang)
    assert {s for s in sentences if is_rule(s)} == alone
