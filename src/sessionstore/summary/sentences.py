"""Sentence splitting that keeps values whole: never inside a number, version, path, URL or abbreviation.

The extraction layer keeps or drops whole sentences, so a split inside "Only Python 3.11." or
".../tasks/workflow.xml" loses the value the sentence exists to carry. The rule is deliberately narrow:
a sentence ends at `.`, `!` or `?` (with any closing quotes or brackets) only when whitespace or the end
of the text follows, and the word before a `.` is not a known abbreviation ("e.g.", "etc.", "Dr.") or a
single initial. An abbreviation that can also close a sentence ("etc.", or a unit after a number: "5
min.", "540 ms.") does when a capital follows, so two facts never merge into one. A line break always
ends a sentence (chat text is rarely hard-wrapped, and a list item is a unit of its own), and so does a
CJK full stop, "。", "！" or "？", with or without a space after it. So a dot followed by a non-space
(3.11, workflow.xml, example.com/a) never splits, whatever surrounds it.
Callers may rely on: every returned sentence is a whitespace-trimmed, non-empty substring of one line
of the input, in order, and together they cover every non-space character of the input.
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "CAN_END", "split_sentences"]

ABBREVIATIONS = frozenset(
    {
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "approx",
        "al",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "nos",
        "fig",
        "inc",
        "ltd",
        "co",
        "corp",
        "jr",
        "sr",
        "a.m",
        "p.m",
        "u.s",
        "u.k",
        "min",
        "max",
        "est",
        "dept",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    }
)
"""Words (lowercase, without the final dot) after which a dot and a space do not end a sentence."""

CAN_END = frozenset({"etc", "al", "min", "max", "est", "inc", "ltd", "co", "corp", "a.m", "p.m", "u.s"})
"""Abbreviations that also close a sentence when a capital follows ("5 min. Note ...", "etc. Then");
the others (titles, "e.g.", "approx.", "No.") are always followed by more of the same sentence."""

_END = re.compile(r"[.!?]+[\"')\]*_`]*(?=\s|$)|[。！？]+[」』）】\"')\]]*")
"""A sentence end: `.!?` before whitespace or the end; `。！？` wherever they stand (CJK text puts no
space after them, and no value holds one)."""
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_WINDOW = 40  # longer than any abbreviation
_WORD_CHARS = re.compile(r"[\w.]")
_AFTER_NUMBER = re.compile(r"\d\s?$")  # "540 ms.", "5 min.": the abbreviation is a unit
_NEXT = re.compile(r"\s*(\S)")


def _is_abbreviation(line: str, dot: int) -> bool:
    """Whether the `.` at `dot` closes an abbreviation or an initial rather than a sentence.

    It reads a bounded window around the dot (never the whole line before it), so splitting a line
    stays linear in its length however many dots it has."""
    start = max(0, dot - _WINDOW)
    match = _WORD_BEFORE.search(line, start, dot)
    if not match or (match.start(1) == start and start > 0 and _WORD_CHARS.match(line, start - 1)):
        return False  # no word, or one longer than the window: no abbreviation is that long
    word = match.group(1).lower().strip(".")
    if word in ABBREVIATIONS:
        unit = _AFTER_NUMBER.search(line, max(0, match.start(1) - 2), match.start(1)) is not None
        following = _NEXT.match(line, dot + 1)
        capital = following is not None and following.group(1).isupper()
        return not ((word in CAN_END or unit) and capital)  # "540 ms. The", "etc. Then": an end
    return len(word) == 1 and word.isalpha() and line[match.start(1)].isupper()  # "J. Smith"


def _split_line(line: str) -> list[str]:
    if "." not in line and "!" not in line and "?" not in line and line.isascii():
        return [line.strip()]  # no sentence end at all: the line is one sentence
    out: list[str] = []
    start = 0
    for match in _END.finditer(line):
        single_dot = match.group(0)[0] == "." and len(match.group(0).rstrip("\"')]*_`")) == 1
        if single_dot and _is_abbreviation(line, match.start()):
            continue
        piece = line[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    rest = line[start:].strip()
    if rest:
        out.append(rest)
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, in order, each trimmed; values (3.11, a/b.xml, $500, URLs) stay whole."""
    sentences: list[str] = []
    for line in text.splitlines():
        if line.strip():
            sentences.extend(_split_line(line))
    return sentences
