"""Items from user words a summary had no room to quote whole: the rules and bound values in them.

Only what is cut out of a long message or dropped with an old one goes through here (user_words.py),
so the cost is that text's, never the history's. Each sentence (sentences.py: never split inside a
value) is kept verbatim or not at all, ranked by what it carries:

- 4: an explicit correction ("$700, not $500"; corrections.py), so the latest value is never lost;
- 3: a rule (a marker of a registered language: never, always, must, don't, nunca, 不要, ...);
- 2: a value (values.py: amounts, dates, paths, ids, hosts, versions, numbers with units);
- 1: any other statement of six words or more (goals and rules phrased with no marker at all);
- short chatter ("ok", "thanks, go on") is not an item.

A rule that also binds a value ranks with the rules; a sentence longer than `MAX_ITEM_CHARS` keeps its
head and tail, cut between words and never inside a value (text.cut_chars).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.corrections import in_sentence
from sessionstore.summary.languages import has_correction_marker, is_rule
from sessionstore.summary.sentences import split_sentences
from sessionstore.summary.text import cut_chars
from sessionstore.summary.values import has_value

__all__ = ["MAX_ITEM_CHARS", "Item", "extract", "rank"]

MAX_ITEM_CHARS = 400
_STATEMENT_WORDS = 6
_MIN_WORDS = 3


@dataclass(frozen=True)
class Item:
    """One sentence worth keeping, as the user wrote it, and its rank (see the module docstring)."""

    text: str
    rank: int

    @classmethod
    def of(cls, text: str, ranked: int | None = None) -> Item:
        """The item of `text`, ranked here unless `ranked` is given."""
        return cls(text, rank(text) if ranked is None else ranked)

    @cached_property
    def cost(self) -> int:
        """What it costs as a line of a summary (tokens), counted when first asked."""
        return count_text(self.text) + 2


def rank(sentence: str, *, corrects: bool = True) -> int:
    """The rank of one sentence (see the module docstring); 0: not an item. `corrects=False` (the
    message is known to correct nothing) skips the search for a correction."""
    valued = has_value(sentence)
    if corrects and valued and has_correction_marker(sentence) and in_sentence(sentence):
        return 4
    words = len(sentence.split())
    if is_rule(sentence) and (words >= _MIN_WORDS or valued):
        return 3
    if valued and (words >= 2 or len(sentence) >= 8):
        return 2
    return 1 if words >= _STATEMENT_WORDS else 0


def extract(text: str, *, corrects: bool = True) -> list[Item]:
    """The items of `text` (user words), in order; a sentence that ranks 0 is left out.
    `corrects=False`: `text` is known to hold no correction (see `rank`)."""
    out: list[Item] = []
    for sentence in split_sentences(text):
        sentence = sentence.lstrip("-*•> ").strip()
        ranked = rank(sentence, corrects=corrects) if sentence else 0
        if ranked:
            out.append(Item.of(cut_chars(sentence, MAX_ITEM_CHARS), ranked))
    return out
