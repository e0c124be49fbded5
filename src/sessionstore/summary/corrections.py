"""Corrections the user made explicitly: a sentence that names both the new value and the old one.

Chronology carries every correction to any reader: a summary keeps the user's words in order, so "no
wait, the api listens on 8443" is read after "the api is on 8080". A value is marked superseded only
where a user sentence names both values with explicit correction syntax: "Actually it is $700, not
$500", "use 8443 instead of 8080", "预算是700，不是500", "予算は500ではなく700" (the markers of each
language: languages/). Nothing else is ever marked: not a value the user merely restated, and never a
rule ("Never exceed without explicit approval" stays a rule whatever its budget became).
"""

from __future__ import annotations

from dataclasses import dataclass

from sessionstore.summary.languages import has_correction_marker, names_old
from sessionstore.summary.sentences import split_sentences
from sessionstore.summary.values import has_value, values

__all__ = ["Correction", "corrections", "in_sentence"]


@dataclass(frozen=True)
class Correction:
    """`old` is superseded by `new`: both named in one user sentence, `old` with correction syntax."""

    old: str
    new: str


def _kind(value: str) -> bool:
    return any(c.isdigit() for c in value)


def in_sentence(sentence: str) -> list[Correction]:
    """The explicit corrections of one sentence: each value named as the old one, paired with the
    nearest other value of its kind (both with digits, or neither) before it, else after it."""
    found = values(sentence)
    if len(found) < 2:
        return []
    olds: list[str] = []
    for value in found:
        at = sentence.find(value)
        if names_old(sentence, sentence[:at], sentence[at + len(value) :]):
            olds.append(value)
    out: list[Correction] = []
    for old in olds:
        at = sentence.find(old)
        others = [v for v in found if v not in olds and _kind(v) == _kind(old)]
        before = [v for v in others if sentence.find(v) < at]
        after = [v for v in others if sentence.find(v) > at]
        new = before[-1] if before else (after[0] if after else None)
        if new is not None:
            out.append(Correction(old, new))
    return out


def corrections(text: str) -> list[Correction]:
    """The explicit corrections of every sentence of `text` (a user message), in order."""
    if not has_value(text) or not has_correction_marker(text):
        return []  # no value, or no word that names an old one: most messages
    return [c for sentence in split_sentences(text) for c in in_sentence(sentence)]
