"""Values: what a cut must never split and what a dropped message's items must keep whole.

Money ($500, $1.5M), dates (2027-01-22, March 3, 2027), versions (3.11, Postgres 15, 1.2.3-rc.1),
numbers with units (30 s, 8 min, 20%, 16 GB), URLs, emails, hosts (db.internal:5432, 10.0.0.1:5432),
file paths, ticket ids (ZEPHYR-7731) and identifiers mixing letters and digits (mia_li_3668, H9ZU1C),
also when written next to CJK text with no space. Paths need a path's shape: a leading /, ./, ../ or
~/, a file extension, or two slashes between lowercase segments; so "Claude/Gemini" and "CI/CD." are
words, not paths.
"""

from __future__ import annotations

import re

__all__ = ["PATH", "has_value", "is_path", "quoted_spans", "values"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_W = rf"[^\W{_CJK}]"
"""A word character that is not CJK: Chinese and Japanese write values with no space around them."""
_B = rf"(?:(?<!{_W})(?={_W})|(?<={_W})(?!{_W}))"
"""A word boundary at which CJK text counts as a non-word ("截止日期是2027-01-22" holds a date)."""
_UNIT = (
    r"(?i:ms|milliseconds?|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
    r"[kmgt]i?b|bytes?|[kmg]bps|tokens?|requests?|rps|qps|px|em|rem|cm|mm|km|m|kg|g|lbs?|lines?|chars?|"
    r"characters?|words?|items?|users?|retries|attempts?|times|steps?|files?|calls?|v?cpus?|cores?|gpus?|"
    r"percent|%|x|usd|eur|gbp|dollars?|euros?|credits?|points?|°[cf]|degrees?|€|£|¥)"
)
_URL_CHAR = "[^\\s<>()\"'`\u3000-\u303f\uff0c\uff1a\uff1b\uff01\uff1f]"
_URL_END = "[^\\s<>()\"'`.,;:!?\u3000-\u303f\uff0c\uff1a\uff1b\uff01\uff1f]"
_URL = rf"{_B}https?://(?:{_URL_CHAR}|\({_URL_CHAR}*\))*(?:{_URL_END}|\({_URL_CHAR}*\))"
_EMAIL = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
_MONEY = rf"[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?i:k|mm|m|bn|b|million|billion|thousand))?{_B}"
_ZONE = r"(?:Z|[+-]\d{2}:?\d{2}|\s?(?:UTC|GMT))"
_DATE = rf"{_B}\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}})?{_ZONE}?)?{_B}"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_MONTH_DATE = rf"\b{_MONTH}\.?\s{_DAY}(?:,?\s\d{{4}})?\b|\b{_DAY}\s{_MONTH}\.?(?:,?\s\d{{4}})?\b"
_TIME = rf"{_B}\d{{1,2}}:\d{{2}}(?:\s?[ap]\.?m\.?)?(?:\s?(?:UTC|GMT|[A-Z]{{2,4}}T))?{_B}"
_IP = rf"{_B}\d{{1,3}}(?:\.\d{{1,3}}){{3}}(?::\d{{2,5}}|/\d{{1,2}})?{_B}"
_TLD = r"(?:com|org|net|io|dev|app|internal|local|lan|cloud|ai|co|corp|prod|svc)"
_HOST = rf"{_B}[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.{_TLD}(?::\d+)?{_B}"
_HOSTPORT = rf"\b[a-z][\w-]*(?:\.[\w-]+)*:\d{{2,5}}{_B}"
_TICKET = rf"{_B}[A-Z][A-Z0-9]+-\d+{_B}"
_PRE = r"(?:-(?i:rc|alpha|beta|dev|pre|post|preview|snapshot|nightly|canary|a|b)(?:\.?\d+)*)?"
_NAMED_VERSION = rf"\b[A-Z][\w+#]*\s(?:v?\d+(?:\.\d+)*){_PRE}{_B}(?![-:/.]\d|,\d|\s?{_UNIT}(?!{_W}))"
"""'Postgres 15', 'Python 3.11': never the capitalised word before a date, a count or an address."""
_VERSION = rf"{_B}v?\d+(?:\.\d+)+{_PRE}{_B}"
_QUANTITY = rf"(?<!{_W})(?<!\.)\d[\d,]*(?:\.\d+)?\s?{_UNIT}(?!{_W})"
_ID = (
    rf"(?<!{_W})(?<![-.])(?=[A-Za-z0-9_-]{{4}})(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])"
    rf"(?!\d+(?:st|nd|rd|th)\b)[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*(?!{_W}|[-.]\w)"
)
"""Identifiers mixing letters and digits: user ids (mia_li_3668), booking codes (H9ZU1C), flights."""
_NUMBER = rf"(?<!{_W})(?<![.$€£¥-])\d[\d,]*(?:\.\d+)?(?!(?:{_W}|\.){_W})"
PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]+"
    r"|(?<![\w/.:-])(?:[\w.@+-]+/)+[\w@+-]+\.[A-Za-z0-9]{1,8}\b"
    r"|(?<![\w/.:-])[a-z0-9_.@+-]+(?:/[a-z0-9_.@+-]+){2,}/?"
    r"|\b[\w-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|md|toml|json|jsonl|ya?ml|rs|go|java|kt|c|h|cpp|hpp|sh|txt|"
    r"cfg|ini|sql|html|css|lock|xml|csv|vtt|env)\b"
)
"""File paths: rooted (/, ./, ../, ~/), with a file extension, or three lowercase segments."""

_VALUE = re.compile(
    "|".join(
        f"(?:{p})"
        for p in (
            _URL,
            _EMAIL,
            _MONEY,
            _DATE,
            _MONTH_DATE,
            _IP,
            _TIME,
            _HOST,
            PATH.pattern,
            _HOSTPORT,
            _TICKET,
            _VERSION,
            _QUANTITY,
            _NAMED_VERSION,
            _ID,
            _NUMBER,
        )
    )
)


def is_path(text: str) -> bool:
    """Whether `text` as a whole has a file path's shape (see the module docstring)."""
    return PATH.fullmatch(text.strip("`'\"()[],;:")) is not None


def values(text: str) -> list[str]:
    """The values in `text`, in order of appearance, each whole and once ('3.11', '$500', 'a/b.xml')."""
    found: list[str] = []
    for match in _VALUE.finditer(text):
        token = match.group(0).rstrip(".,;:")
        if token and token not in found:
            found.append(token)
    return found


_QUOTED = re.compile(r"`[^`\n]{1,200}`|\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”")
_DIGIT = re.compile(r"\d")
_DOT_WORD = re.compile(r"\.[a-z]{2}")


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every quoted string of `text` (backticks, double quotes, on one line): a
    quoted value is kept whole or left out whole by a cut."""
    return [(m.start(), m.end()) for m in _QUOTED.finditer(text)]


def has_value(text: str) -> bool:
    """Whether `text` may hold a value: a digit, a path or address character, a host's dot. A cheap
    test (no value is found without one of these); `values` finds them."""
    if _DIGIT.search(text) or "/" in text or "@" in text or "$" in text or "€" in text or "£" in text:
        return True
    return _DOT_WORD.search(text) is not None
