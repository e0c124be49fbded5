"""Rules written in other languages (summary/languages.py) are constraints, English text is unchanged.

What callers (extraction.py) rely on: `is_rule` finds the common imperative and negation markers of
Spanish, French, German, Portuguese, Italian, Chinese, Japanese and Russian; it finds none in English
text (nor in the real transcripts of ../shared/realdata, all English); the values inside such a rule
stay whole in its item.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from sessionstore.summary.extraction import Extraction, extract
from sessionstore.summary.languages import LANGUAGES, is_rule, refers_back
from sessionstore.summary.sentences import split_sentences

RULES = {
    "es": [
        "nunca borres la base de datos",
        "Siempre ejecuta los tests antes de hacer push.",
        "No toques el archivo de configuración.",
        "Tienes que usar Python 3.11.",
    ],
    "fr": [
        "ne jamais pousser sur main",
        "Ne supprime pas la branche de production.",
        "Il faut toujours lancer les tests.",
        "Vous devez utiliser uniquement pnpm.",
    ],
    "de": [
        "niemals force-push",
        "Lösche bitte keine Dateien im Ordner data.",
        "Du musst immer die Tests laufen lassen.",
        "Das darf nicht auf main landen.",
    ],
    "pt": [
        "Nunca apague o banco de dados.",
        "Não faça push direto na main.",
        "Você deve usar apenas o pnpm.",
        "Sempre rode os testes antes do deploy.",
    ],
    "it": [
        "Non cancellare mai il database.",
        "Devi sempre eseguire i test.",
        "È vietato fare push su main.",
        "Usa soltanto pnpm per questo progetto.",
    ],
    "zh": ["不要删除数据库", "永远不要强制推送到main。", "必须先运行测试。", "只能使用Python 3.11。"],
    "ja": ["絶対にmainにpushしない", "必ずテストを実行してください。", "本番DBを削除しないでください。"],
    "ru": [
        "всегда запускай тесты",
        "Никогда не удаляй базу данных.",
        "Нельзя пушить в main.",
        "Нужно обновить зависимости.",
    ],
}

ENGLISH = [
    "No changes were made to the files.",
    "No matches, no classes, no types found.",
    "Use a non-empty list and a non blocking call.",
    "I need a nonstop flight on May 21.",
    "It was a solo project by Mai Tanaka.",
    "The Evita musical runs at 8 pm.",
    "The sempre-fi module is immer-ready.",  # words inside other words
    "Deploy the stable version to the nightly channel.",
    "Run the suite and report the failures.",
    "The Tokyo office handles it.",
    "Add the nie_ze_mna flag to the parser.",
]


def user_items(text: str) -> Extraction:
    return extract([ModelRequest(parts=[UserPromptPart(text)])])


@pytest.mark.parametrize("lang", sorted(RULES))
def test_rules_in_other_languages_are_constraints(lang: str) -> None:
    assert lang in LANGUAGES
    for rule in RULES[lang]:
        assert is_rule(rule), rule
        ex = user_items(rule)
        assert [i.kind for i in ex.items] == ["constraint"], (rule, ex.items)


def test_english_text_has_no_marker_of_another_language() -> None:
    for sentence in ENGLISH:
        assert not is_rule(sentence), sentence


def test_values_inside_a_foreign_rule_stay_whole() -> None:
    cases = {
        "Nunca gastes más de $500 en db.internal:5432.": ("$500", "db.internal:5432"),
        "Ne jamais dépasser 30 s sur https://api.example.com/v2.": ("30 s", "https://api.example.com/v2"),
        "Niemals Python 3.11 durch 3.12 ersetzen.": ("Python 3.11", "3.12"),
        "不要删除数据库db.internal:5432。": ("db.internal:5432",),
        "締め切りの2027-01-22は絶対に変えないで。": ("2027-01-22",),
        "Никогда не трогай src/app/main.py до 2027-03-01.": ("src/app/main.py", "2027-03-01"),
    }
    for rule, wanted in cases.items():
        [item] = user_items(rule).items
        assert item.kind == "constraint" and set(wanted) <= set(item.values), (rule, item)


def test_a_cjk_rule_and_a_fact_in_one_paragraph_are_two_items() -> None:
    ex = user_items("不要删除数据库。截止日期是2027-01-22。")
    assert [(i.kind, i.text) for i in ex.items] == [
        ("constraint", "不要删除数据库。"),
        ("fact", "截止日期是2027-01-22。"),
    ]


def _real_sentences(root: Path) -> list[str]:
    from sessionstore.formats.transcripts import read_transcript
    from sessionstore.summary.text import as_text

    out: list[str] = []
    for path in sorted([*(root / "claude_code").glob("*.jsonl"), *(root / "codex").glob("*.jsonl")]):
        for step in read_transcript(path).steps:
            for msg in step.messages:
                for part in msg.parts:
                    content = getattr(part, "content", None)
                    if isinstance(content, str):
                        out += split_sentences(content)
                    elif content is not None:
                        out += split_sentences(as_text(content))
    for path in sorted([*(root / "memory").glob("*.md"), *(root / "trajectories").glob("*.json")]):
        out += split_sentences(path.read_text(encoding="utf-8"))
    return out


def test_no_sentence_of_the_real_transcripts_is_a_foreign_rule(realdata: Path) -> None:
    """The real data is English: the table adds no rule there (measured before/after: docs/summaries.md)."""
    sentences = _real_sentences(realdata)
    assert len(sentences) > 10_000
    assert [s for s in set(sentences) if is_rule(s) or refers_back(s)] == []


CORRECTIONS = {
    # (the earlier statement, its correction, the current value, the old one)
    "zh-not": ("预算是500。", "不是500，是700。", "700", "500"),
    "zh-change": ("预算是500。", "预算改为700。", "700", "500"),
    "zh-from": ("截止日期是2027-01-22。", "截止日期从2027-01-22改成2027-02-05。", "2027-02-05", "2027-01-22"),
    "zh-rather": ("预算是500美元。", "预算是700美元，而不是500美元。", "700", "500"),
    "ja-not": ("予算は500です。", "500ではなく700です。", "700", "500"),
    "ja-change": ("予算は500です。", "予算は700に変更。", "700", "500"),
    "ja-from": (
        "締め切りは2027-01-22です。",
        "締め切りを2027-01-22から2027-02-05に変更。",
        "2027-02-05",
        "2027-01-22",
    ),
    "es": ("El presupuesto es $500.", "El presupuesto es $700, no $500.", "$700", "$500"),
    "es-from": ("El presupuesto es $500.", "Cambia el presupuesto de $500 a $700.", "$700", "$500"),
    "fr": ("Le budget est de 500 €.", "Le budget est de 700 €, pas 500 €.", "700 €", "500 €"),
    "fr-instead": (
        "Le serveur est db1.internal:5432.",
        "Le serveur est db2.internal:5432 au lieu de db1.internal:5432.",
        "db2.internal:5432",
        "db1.internal:5432",
    ),
    "de": ("Das Budget ist 500 €.", "Das Budget ist 700 €, nicht 500 €.", "700 €", "500 €"),
    "de-from": ("Das Budget ist 500 €.", "Ändere das Budget von 500 € auf 700 €.", "700 €", "500 €"),
    "pt": ("O orçamento é $500.", "O orçamento é $700, não $500.", "$700", "$500"),
    "it": ("Il budget è $500.", "Il budget è $700, non $500.", "$700", "$500"),
    "it-instead": ("Il budget è $500.", "Il budget è $700 invece di $500.", "$700", "$500"),
    "ru": ("Бюджет — 500 долларов.", "Нет, бюджет — 700 долларов, а не 500.", "700", "500"),
    "ru-not": ("Дедлайн — 2027-01-22.", "Не 2027-01-22, а 2027-02-05.", "2027-02-05", "2027-01-22"),
}


@pytest.mark.parametrize("case", sorted(CORRECTIONS))
def test_a_correction_in_another_language_supersedes_the_old_value(case: str) -> None:
    from sessionstore.summary.extraction import resolve
    from sessionstore.summary.values import stated

    earlier, correction, new, old = CORRECTIONS[case]
    ex = resolve(
        extract(
            [ModelRequest(parts=[UserPromptPart(earlier)]), ModelRequest(parts=[UserPromptPart(correction)])]
        )
    )
    [first, second] = ex.items
    assert first.superseded and first.replaced_by is second and not second.superseded, ex.items
    assert old in first.values and stated(second.text, list(second.values)) == [new], second


NOT_CORRECTIONS = [
    # English text, and other languages' words that only look like a correction's
    "There were no 500 errors and no 404 pages.",
    "We got plus 500 users, non 200 responses.",
    "Le bureau est ouvert de 9:00 à 17:00.",  # a range, not a change
    "会议从10:00到12:00。",
    "会议は10:00から12:00まで。",
]


def test_sentences_that_only_look_like_corrections_name_no_old_value() -> None:
    from sessionstore.summary.values import stated, values

    for sentence in NOT_CORRECTIONS:
        assert stated(sentence) == values(sentence), sentence


def test_no_sentence_of_the_real_transcripts_names_an_old_value_in_another_language(realdata: Path) -> None:
    """The correction table adds nothing on the real data (all English): measured before/after in
    docs/summaries.md, with every correction the extraction finds there."""
    from sessionstore.summary.languages import names_old
    from sessionstore.summary.values import values

    hits = []
    for sentence in set(_real_sentences(realdata)):
        for value in values(sentence):
            at = sentence.find(value)
            if names_old(sentence, sentence[:at], sentence[at + len(value) :]):
                hits.append((sentence, value))
    assert hits == []


BACK = {
    "es": ["No lo cambies.", "Nunca lo superes."],
    "fr": ["Ne le change pas.", "Ne jamais le dépasser."],
    "de": ["Ändere das nicht.", "Niemals überschreiten."],
    "pt": ["Não o altere.", "Nunca ultrapasse isso."],
    "it": ["Non cambiarlo.", "Non lo superare mai."],
    "zh": ["不要改它。", "不能超过。"],
    "ja": ["変更しないで。", "絶対に超えないでください。"],
    "ru": ["Не меняй это.", "Никогда не превышай."],
}


@pytest.mark.parametrize("lang", sorted(BACK))
def test_a_value_less_rule_in_another_language_joins_the_value_before_it(lang: str) -> None:
    for rule in BACK[lang]:
        ex = user_items(f"The budget is $700. {rule}")
        assert [(i.kind, i.text, i.values) for i in ex.items] == [
            ("constraint", f"The budget is $700. {rule}", ("$700",))
        ], rule


def test_a_foreign_sentence_that_refers_to_nothing_joins_nothing() -> None:
    for text in ("The budget is $700. No lo sé.", "The budget is $700. Merci beaucoup.", "预算是700。谢谢。"):
        ex = user_items(text)
        assert all(i.text != text for i in ex.items), text
