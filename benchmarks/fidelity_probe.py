"""Scoring for bench_fidelity.py: the held-out cases, whether a text keeps each one, and the two
contenders a summary is measured against at its own token count.

The rules (also in the header of fidelity_cases.json):
- kept: every `keep` phrase appears whole (case-insensitive, runs of whitespace collapsed, a phrase
  that starts or ends with a letter or digit only on a word boundary, so "$500" is not in "$5000");
- a correction is kept when, besides, its current value appears and the LAST line naming either
  value names the current one (a line naming both, "i meant 700 not 500", is current); a last line
  naming only the stale value is a stale-latest correction;
- a `not_superseded` phrase on a line, or under a heading, saying superseded / no longer current /
  outdated / stale / obsolete / replaced / struck through is a false supersession, and its case is
  not kept (the words are there, but no longer as a rule).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CASES = Path(__file__).resolve().with_name("fidelity_cases.json")
_MARK = re.compile(r"supersed|no longer current|outdated|\bstale\b|obsolete|\breplaced\b|~~", re.I)


@dataclass(frozen=True)
class Case:
    id: str
    type: str
    plant: str
    texts: tuple[str, ...]
    keep: tuple[str, ...]
    file: str | None = None
    stale: str | None = None
    current: str | None = None
    not_superseded: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    kept: bool
    stale_latest: bool = False
    false_supersessions: int = 0


def load_cases(path: Path = CASES) -> tuple[list[str], list[Case]]:
    """The types, in the file's order, and every case."""
    data = json.loads(path.read_text())
    cases = [
        Case(
            id=c["id"],
            type=c["type"],
            plant=c["plant"],
            texts=tuple(c["texts"]) if "texts" in c else (c["text"],),
            keep=tuple(c["keep"]),
            file=c.get("file"),
            stale=c.get("stale"),
            current=c.get("current"),
            not_superseded=tuple(c.get("not_superseded", ())),
        )
        for c in data["cases"]
    ]
    return list(data["types"]), cases


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).lower()


@cache
def _pattern(phrase: str) -> re.Pattern[str]:
    p = norm(phrase).strip()
    head = r"(?<![\w])" if p[:1].isalnum() else ""
    tail = r"(?![\w]|[.,]\d)" if p[-1:].isalnum() else ""
    return re.compile(head + re.escape(p) + tail)


def holds(text: str, phrase: str) -> bool:
    """`phrase` appears whole in `text` (see the module docstring)."""
    return _pattern(phrase).search(norm(text)) is not None


def verdict(case: Case, text: str) -> Verdict:
    """How `text` (a summary, or a contender's text in its place) treats `case`."""
    kept = all(holds(text, p) for p in case.keep)
    stale_latest = False
    if case.current is not None and case.stale is not None:
        last = None
        for line in text.splitlines():
            if holds(line, case.current):
                last = "current"
            elif holds(line, case.stale):
                last = "stale"
        stale_latest = last == "stale"
        kept = kept and last == "current"
    false = sum(superseded(text, p) for p in case.not_superseded)
    return Verdict(kept and not false, stale_latest, false)


def superseded(text: str, phrase: str) -> bool:
    """Whether `phrase` sits on a line, or under a heading, that marks it superseded."""
    heading = ""
    for line in text.splitlines():
        bare = line.lstrip("> \t")
        if bare.startswith("#"):
            heading = bare
        if holds(line, phrase) and (_MARK.search(line) or _MARK.search(heading)):
            return True
    return False


Count = Callable[[str], int]


def user_verbatim(user_texts: Sequence[str], budget: int, count: Count) -> str:
    """The baseline: every user message verbatim, newest first, each whole one that still fits in
    `budget` tokens, shown oldest first (so the latest statement reads last)."""
    chosen: list[str] = []
    used = 0
    for text in reversed(user_texts):
        need = count(text) + 2
        if used + need <= budget:
            chosen.append(text)
            used += need
    chosen.reverse()
    text = "\n\n".join(chosen)
    while chosen and count(text) > budget:  # the joins cost a little more than the parts' sum
        chosen.pop(0)
        text = "\n\n".join(chosen)
    return text


def newest_text(texts: Sequence[str], budget: int, count: Count) -> str:
    """Truncation: the newest text (every part: prompts, replies, tool calls and returns) that fits
    in `budget` tokens; the oldest part it reaches is cut to its newest characters."""
    kept: list[str] = []
    used = 0
    for text in reversed(texts):
        need = count(text) + 1
        if used + need > budget:
            lo, hi = 0, len(text)  # the longest suffix that fits
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if used + count(text[-mid:]) + 1 <= budget:
                    lo = mid
                else:
                    hi = mid - 1
            if lo:
                kept.append(text[-lo:])
            break
        kept.append(text)
        used += need
    return "\n".join(reversed(kept))
