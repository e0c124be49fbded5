"""Values a sentence binds to a name, and the name (subject) it binds them to.

A value is what a summary must never lose or split: money ($500, $1.5M), dates (2027-01-22, March 3,
2027), versions (3.11, Postgres 15, 1.2.3-rc.1), numbers with units (30 s, 8 min, 20%, 16 GB), URLs,
emails, hosts (db.internal:5432, 10.0.0.1:5432), file paths, ticket ids (ZEPHYR-7731) and identifiers
mixing letters and digits (mia_li_3668, H9ZU1C), also when written next to CJK text with no space.
`values` finds them; `subject` names what they are the value of ("budget cap", "deadline",
"production database"; never a change verb: "Move the deadline to ..." names "deadline"), so a later
sentence with the same subject and another value is a correction; `stated` leaves out the value a
correction names as the old one ("$700, not $500"). Paths need a path's shape: a leading /, ./, ../
or ~/, a file extension, or two slashes between lowercase segments; so "Claude/Gemini", "CI/CD." and
"Zone/X" are words, not paths.
"""

from __future__ import annotations

import re

from sessionstore.summary.languages import COPULA, is_function_word, names_old
from sessionstore.summary.languages import binds as copula_binds

__all__ = [
    "PATH",
    "is_generic",
    "is_path",
    "key_words",
    "moves",
    "normalize",
    "retired_paths",
    "stated",
    "stems",
    "subject",
    "values",
    "withdrawn",
]

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
_PERSON = re.compile(
    r"\b(?:owner|owned by|on-call|oncall|maintainer|lead|contact|reviewer|manager|assignee|approver|"
    r"responsible|point of contact|poc|ask|ping|escalate to|cc)\b[^.?!]{0,40}?"
    r"\b((?:[A-Z][a-z]+|[A-Z]\.)(?:\s(?:[A-Z][a-z]+|[A-Z]\.|[a-z]{2,3}\s[A-Z][a-z]+)){0,2})\b"
)
_PERSON_FIRST = re.compile(
    r"\b([A-Z][a-z]+ [A-Z][a-z]+) (?:owns|maintains|leads|manages|approves|runs|is responsible|is on call|"
    r"signs off|reviews)\b"
)
_BIND = re.compile(
    r"\s(?:is|are|was|were|=|:|->|→|equals|becomes|become|will be|should be|must be|has to be|set to|"
    r"changed to|moved to|now|lives at|lives in|runs on|runs|uses|at|of|to|from)\s",
    re.I,
)
_STOP_WORDS = (
    "a an the our my your their its this that these those we i you it is are was were be been to of in on "
    "for at by with and or but so now actually correction update updated new old current please note "
    "also just still then there here all any some no not never always only must should will would can "
    "could may might do does did don't has have had set changed moved from"
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(rf"[^\W\d_{_CJK}](?:[^\W{_CJK}]|[+#-])*")
"""A word of any spaced script ("budget", "änderung", "бюджет"); CJK text has no words to split."""
_CHANGE_WORDS = "move change raise lower bump increase decrease reduce extend push update make switch reset"
_CHANGE = frozenset(f"{_CHANGE_WORDS} cut shift adjust double halve".split())
"""Verbs that say a value changes ("Move the deadline to ..."): never part of the value's name."""
_FROM = re.compile(r"\bfrom\s+$", re.I)
_TO = re.compile(r"\s+to\b", re.I)
_OLD_VALUE = re.compile(
    r"(?:\b(?:not|instead of|rather than|no longer|formerly|previously|replacing|replaces)"
    r"\s+(?:(?:the|an?|old|previous|earlier)\s+)*)$",
    re.I,
)


def is_path(text: str) -> bool:
    """Whether `text` as a whole has a file path's shape (see the module docstring)."""
    match = PATH.fullmatch(text.strip("`'\"()[],;:"))
    return match is not None


def values(sentence: str) -> list[str]:
    """The values in `sentence`, in order of appearance, each whole ('3.11', '$500', 'a/b.xml')."""
    found: list[str] = []
    for match in _VALUE.finditer(sentence):
        token = match.group(0).rstrip(".,;:")
        if token and token not in found:
            found.append(token)
    for match in [*_PERSON.finditer(sentence), *_PERSON_FIRST.finditer(sentence)]:
        name = match.group(1)
        if name not in found and name.split()[0].lower() not in _STOP:
            found.append(name)
    return found


def normalize(text: str) -> str:
    """Lowercase, whitespace collapsed, markdown emphasis and backticks dropped: for containment checks."""
    return " ".join(re.sub(r"[`*_]", "", text).lower().split())


def key_words(text: str) -> list[str]:
    """The content words of `text` (lowercase, no stop words, 3+ letters): what a paraphrase must keep."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP]


def stems(text: str) -> set[str]:
    """The 5-letter stems of `key_words(text)`: "caps" and "capped" share "cap", "budgets" "budge"."""
    return {w[:5] for w in key_words(text)}


_BARE = re.compile(r"[\d,.]+")
_BOUND_BEFORE = re.compile(r"(?:\b(?:is|are|was|were|now|to|at|be|of|=)|[:=]|不是|从|從|由)\s*[*_`]*$", re.I)
_SCALAR = re.compile(
    "|".join(
        f"(?:{p})" for p in (_MONEY, _DATE, _MONTH_DATE, _TIME, _VERSION, _QUANTITY, _NAMED_VERSION, _NUMBER)
    )
)
_GENERIC = re.compile(
    "|".join(f"(?:{p})" for p in (_MONEY, _TIME, _VERSION, _QUANTITY, _NAMED_VERSION, _NUMBER))
)


def is_generic(value: str) -> bool:
    """Whether `value` is an amount, number, quantity, time or version: common enough that only the
    words around it say what it is the value of ("$500" may be a budget or a bill; "2027-03-25",
    "db.internal:5432" or "src/a.py" name one thing wherever they appear)."""
    return _GENERIC.fullmatch(value.strip()) is not None


_NAME_BIND = re.compile(
    r"\b(?:is|are|was|were|equals|becomes?|be|lives|runs on)\b|'s\b|[:=]"
    r"|\b(?:set|change|move|switch|update|point|reset|rename)\b[^.?!]{0,80}?\bto\b",
    re.I,
)
"""What binds a name-like value (path, URL, id, host, person) to a name. Without it the value is what a
rule acts on ("Never touch src/a.py"): two such rules are two rules, not a correction."""


def _names_a_value(sentence: str, value: str) -> bool:
    """Whether `value` can be corrected later: anything but a bare number, which only counts when a
    binding word puts it there ("the team size is 12"), not as an enumerator ("request 0: ...")."""
    if not _BARE.fullmatch(value):
        return True
    at = sentence.find(value)
    return at > 0 and (bool(_BOUND_BEFORE.search(sentence[:at])) or copula_binds(sentence, sentence[:at]))


def subject(sentence: str, found: list[str] | None = None) -> str | None:
    """What the sentence's first correctable value is the value of: up to three content words before
    the binding.

    "Actually the deadline is 2027-01-22" and "deadline 2027-03-25" both give "deadline"; None when no
    value, only enumerators ("request 0:"), no content word precedes it, or the value is a path, URL,
    id or name no binding word ("is", ":", "change ... to") ties to a name ("Never touch src/a.py").
    """
    found = values(sentence) if found is None else found
    first = next((v for v in found if _names_a_value(sentence, v)), None)
    if first is None:
        return None
    found = [first, *found]
    head = sentence[: sentence.find(first)] if first in sentence else sentence
    clause = re.split(r"[:;,(—]\s", head)[-1]
    if key_words(clause):
        head = clause  # "Ship it: the deadline 2027-03-25": the name is in the last clause
    if not _SCALAR.fullmatch(first) and not _NAME_BIND.search(head) and not copula_binds(sentence, head):
        return None  # an object, not a bound value: "Never touch src/a.py"
    binds = list(_BIND.finditer(head + " "))
    bind = binds[-1] if binds else None
    if bind is not None and key_words(head[: bind.start()]):
        head = head[: bind.start()]
    named = [w for w in key_words(head) if not is_function_word(w, sentence)]  # "das", "ist": languages.py
    words = [w for w in named if w not in _CHANGE] or named
    if not words and re.fullmatch(_NAMED_VERSION, found[0]):
        words = key_words(found[0].split()[0])  # "Only Python 3.11": the value names its subject
    return " ".join(words[-3:]) if words else _foreign_subject(head)


_COPULA_END = re.compile(rf"(?:{COPULA.pattern}|从|從|由|[:：=\s])+$", re.I)
_CJK_TAIL = re.compile(rf"[{_CJK}]+$")
_CJK_PARTICLE = re.compile(r"[的之把将將のをはがもでに]")
_LETTERS = re.compile(r"[^\W\d_]{3,}")


def _foreign_subject(head: str) -> str | None:
    """The subject where no English content word precedes the value: the CJK word before its
    copula ("预算是500", "予算は700に変更", "截止日期从..." give 预算, 予算, 截止日期; the part after a
    particle: "我们的预算" is 预算; one character, "不是500", is none), else up to three words of another
    script ("Бюджет 500" gives бюджет)."""
    bare = _COPULA_END.sub("", head)
    tail = _CJK_TAIL.search(bare)
    if tail:
        word = _CJK_PARTICLE.split(tail.group(0))[-1]
        return word if len(word) >= 2 else None
    words = [w.lower() for w in _LETTERS.findall(bare) if not w.isascii()]
    return " ".join(words[-3:]) if words else None


def stated(sentence: str, found: list[str] | None = None) -> list[str]:
    """The values `sentence` states as current: all of them but those it names as the old one
    ("the budget is $700, not $500", "raise it from $500 to $700" both state only $700) or takes
    back ("ignore the $500 limit": `withdrawn`)."""
    found = values(sentence) if found is None else found
    gone = withdrawn(sentence)
    out: list[str] = []
    for value in found:
        at = sentence.find(value)
        before, after = sentence[:at], sentence[at + len(value) :]
        old = at >= 0 and (
            _OLD_VALUE.search(before) is not None
            or (_FROM.search(before) is not None and _TO.match(after) is not None)
            or any(value in clause for clause in gone)
            or names_old(sentence, before, after)  # "不是500", "500ではなく", "au lieu de": languages.py
        )
        if not old:
            out.append(value)
    return out


_RETIRE = re.compile(
    r"\b(?:(?:stop|quit)\s+\w+ing|no longer|any ?more|forget(?: about)?|"
    r"(?:is|are|was|were|has been|have been|got)\s+(?:now\s+)?"
    r"(?:deprecated|obsolete|dead|gone|deleted|removed))\b",
    re.I,
)
"""A clause saying its paths are done with: "stop touching X", "don't edit X anymore", "X is gone"."""
_CLAUSE = re.compile(r"[,;:]\s|\s(?:and|but|then)\s|\s[-–—]\s", re.I)
_MOVE_VERB = re.compile(
    r"\b(?:renamed?|renaming|moved?|moving|relocated?|relocating|mv)\s+"
    r"(?:(?:the|a|file|module|folder|directory|dir)\s+)*[`'\"]?$",
    re.I,
)
_MOVE_TO = re.compile(r"^[`'\"]?\s+(?:to|into|as|->|→)\s", re.I)
_MOVED = re.compile(
    r"^[`'\"]?\s+(?:(?:is|was|has been|got|were|are)\s+)?(?:now\s+)?"
    r"(?:renamed|moved|relocated)\s+(?:to|into|as)\s"
    r"|^[`'\"]?\s+(?:is now|->|→)\s+[`'\"]?(?=[\w./~])",
    re.I,
)


_PART_FROM = re.compile(
    r"\b(?:move|moved|moving|copy|copied|copying|extract|extracted|port|ported|split|pull|pulled)\s+"
    r"(?![^.?!]*\b(?:files?|modules?|folders?|directory|directories|config)\b)[\w`'()-]+"
    r"(?:\s+[\w`'()-]+){0,3}\s+from\s+$",
    re.I,
)
"""Part of a file moved out of it ("move the helper from a.py to b.py"): a.py stays."""


def _retirements(sentence: str, found: list[str]) -> list[tuple[str, str | None]]:
    """(path, the path now in its place or None) for each path `retired_paths` gives."""
    paths = [v for v in found if is_path(v)]
    if not paths:
        return []
    current = set(stated(sentence, found))
    out: list[tuple[str, str | None]] = []
    for path in paths:
        at = sentence.find(path)
        before, after = sentence[:at], sentence[at + len(path) :]
        clause = _CLAUSE.split(before)[-1] + path + _CLAUSE.split(after)[0]
        replaced = path not in current and not _PART_FROM.search(before)
        moved = bool(_MOVE_VERB.search(before) and _MOVE_TO.match(after)) or bool(_MOVED.match(after))
        if not (replaced or moved or _RETIRE.search(clause)):
            continue
        others = [p for p in paths if p != path and p in current]
        later = [p for p in others if sentence.find(p) > at]
        new = None  # a move names its target after the path; "use b.py instead of a.py", before it
        if moved and later:
            new = later[0]
        elif replaced and len(others) == 1:
            new = others[0]
        out.append((path, new))
    return out


def retired_paths(sentence: str, found: list[str] | None = None) -> list[str]:
    """The paths `sentence` says are no longer current: named as the old value ("use b.py instead of
    a.py", "not a.py", `stated`), renamed or moved away from ("I renamed a.py to b.py", "a.py was moved
    to lib/"), or in a clause that retires them ("stop touching a.py", "don't edit a.py anymore",
    "a.py is gone"). A rule about a path ("Never touch a.py") does not retire it: the file is still
    there, and what to do with it is the rule's business."""
    return [path for path, _ in _retirements(sentence, values(sentence) if found is None else found)]


def moves(sentence: str, found: list[str] | None = None) -> dict[str, str]:
    """{old path: the path now in its place} for each retired path the sentence names a successor
    for: the target of a rename or move ("I renamed a.py to b.py", "a.py is now src/a.py", "a.py ->
    b.py") or the one current path of a replacement ("use b.py instead of a.py", "from a.toml to
    b.toml"). A path retired with nothing in its place ("stop touching a.py", "moved to lib/") has
    none: a caller can say it is gone, not where it went."""
    found = values(sentence) if found is None else found
    return {old: new for old, new in _retirements(sentence, found) if new is not None}


_WITHDRAW = re.compile(
    r"\b(?:no longer (?:applies|apply|holds|hold|matters|needed|required|relevant|stands|"
    r"in (?:effect|place|force))|"
    r"(?:rule|limit|cap|constraint|requirement|restriction|deadline|budget|freeze|policy|window)s? "
    r"(?:is|are|has been|have been) (?:now )?"
    r"(?:lifted|removed|cancell?ed|dropped|void|withdrawn|scrapped|off)|"
    r"(?:forget|disregard|never mind)(?: about)? (?:the|my|that|this|our)|ignore (?:the|my|that|this|our)|"
    r"there (?:is|'s) no longer)\b",
    re.I,
)
"""A clause taking back an earlier rule or value: "forget the budget cap", "X no longer applies", "the
freeze is lifted"; never a literal action ("cancel the reservation", "remove the checked bag")."""


def withdrawn(sentence: str) -> list[str]:
    """The clauses of `sentence` that take something back ("Forget the budget cap, spend what it
    takes" gives ["Forget the budget cap"]): what an earlier item must share words or a value with
    for this sentence to withdraw it."""
    return [clause for clause in _CLAUSE.split(sentence) if _WITHDRAW.search(clause)]
