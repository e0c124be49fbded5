"""What a credential looks like: Yelp's detect-secrets plugins, compiled for RE2, plus what they lack.

The regex plugins of `detect-secrets` (its `RegexBasedDetector` subclasses, a maintained list) give
most rules: their `denylist` patterns are compiled with RE2, which matches in time linear in the
text, never backtracking. A few use what RE2 lacks and are rewritten mechanically (`_for_re2`): the
lookbehind `(?<=\\W)|(?<=^)` that starts a keyword assignment becomes `(?:^|\\W)`, the lookahead
`(?!\\w)` or `(?![a-f0-9])` that ends a token becomes `(?:\\W|$)` or `(?:[^a-f0-9]|$)` (the character
after a token joins the match, never the secret: the rules' groups say what the secret is), and a
repeat past RE2's 1000 is capped.
`IPPublicDetector` is left out: a public IP address is not a credential, and sessions are full of them.

Its `KeywordDetector` matches the closing quote with a backreference, so the keyword assignment rule
(`Secret Keyword`) is ours, over its keyword list (`DENYLIST`) and a few more, with its value checked in
Python (`not_a_reference`). Its entropy plugins are applied by `memory.secrets` (quoted strings, their
limits and their entropy function). `EXTRA_RULES` add the formats it lacks (checked in
tests/memory/test_secret_formats.py): a Hugging Face or npm token, Anthropic and OpenAI keys, Google
API keys, a bare AWS secret key, Stripe keys of today's length, a bearer token, fine-grained GitHub tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.keyword import DENYLIST

MAX_REPEAT = 1000
"""RE2's largest counted repeat."""


@dataclass(frozen=True)
class Rule:
    """One kind of credential: an RE2 pattern over UTF-8 bytes, the group that is the secret itself,
    and an optional check of that secret (a rule matches only where the check passes)."""

    kind: str
    pattern: bytes
    group: int = 0
    check: Callable[[bytes], bool] | None = None

    def compiled(self) -> Any:  # an RE2 regex
        return re2.compile(self.pattern, _OPTIONS)


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


def _for_re2(pattern: re.Pattern[str]) -> bytes:
    """A detect-secrets pattern rewritten for RE2 (see the module's note), as UTF-8 bytes."""
    text = pattern.pattern.replace(r"(?:(?<=\W)|(?<=^))", r"(?:^|\W)").replace(r"(?!\w)", r"(?:\W|$)")
    text = re.sub(r"\(\?!\[([^\]^]+)\]\)", r"(?:[^\1]|$)", text)  # (?![a-f0-9]) -> (?:[^a-f0-9]|$)
    text = re.sub(r"\{(\d+),(\d+)\}", lambda m: f"{{{m[1]},{min(int(m[2]), MAX_REPEAT)}}}", text)
    if pattern.flags & re.IGNORECASE:
        text = "(?i)" + text
    return text.encode()


_LEFT_OUT = frozenset({"IPPublicDetector"})


def plugin_rules() -> list[Rule]:
    """A rule per pattern of every detect-secrets regex plugin (but `_LEFT_OUT`), named by its
    `secret_type`; the secret is the pattern's first group when it has one."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    rules = []
    for kind, plugin in sorted(get_mapping_from_secret_type_to_class().items()):
        if not issubclass(plugin, RegexBasedDetector) or plugin.__name__ in _LEFT_OUT:
            continue
        for pattern in plugin.denylist:  # type: ignore[attr-defined]
            rules.append(Rule(kind, _for_re2(pattern), _secret_group(pattern)))
    return rules


def _secret_group(pattern: re.Pattern[str]) -> int:
    """1 when the pattern's first group holds the secret (`key = "(...)"`, `://user:(...)@`); 0, the
    whole match, when it has none or the group is the token's prefix (`(ghp|gho|...)_...`)."""
    first = re.search(r"\((?!\?)", pattern.pattern)
    if not pattern.groups or first is None or first.start() == 0:
        return 0
    optional = re.compile(r"\((?!\?)[^()]*\)\?").match(pattern.pattern, first.start())
    return 0 if optional else 1  # `glcbt-([0-9a-f]{2}_)?...`: an optional piece, not the secret


# -- the keyword assignment: `password = "..."`, `API_KEY: ...`, `{"client_secret": "..."}` ----------

_KEYWORDS = "|".join(
    [k.replace("_?", "[_-]?") for k in DENYLIST]
    + ["token", "access[_-]?token", "refresh[_-]?token", "auth[_-]?token", "client[_-]?secret", "passphrase"]
)
_QUOTE = "[\"'`\x00]?"  # \x00: a quote of the JSON around a session's text (`sharing.secret_scan`)
KEYWORD_ASSIGNMENT = (
    rf"(?i)(?:^|[^a-z0-9])(?:[a-z0-9]+[_-])*(?:{_KEYWORDS})(?:[_-][a-z0-9]+)*{_QUOTE}\]?[ \t]*"
    rf"(?::=|=>|==?|:)[ \t]*{_QUOTE}([^\s\"'`,;)\x00]+)"
)
"""A keyword, optionally inside a longer name (`DB_PASSWORD`, `x-api-key`), assigned a value: the value
(group 1) is the secret. Every repeat is over a class its neighbours cannot share or is bounded by one,
and RE2 runs it in one pass either way."""

_REFERENCE = re.compile(r"[$<{\[%]|(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*$|[A-Za-z_][\w.]*\(")


_NAMED_FOR_IT = re.compile(rf"(?i)[a-z_]*(?:{_KEYWORDS})[a-z_]*")
"""A bare name that itself names a credential (`csrfToken`, `apiKey`, `db_password`): code passing a
variable (`params: {{ _csrf_token: csrfToken }}` in a real Phoenix app.js), not a literal secret."""


def not_a_reference(value: bytes) -> bool:
    """A value that names where the secret lives rather than holding it stays: `$VAR`, `<yours>`,
    `{template}`, `%(x)s`, a dotted name (`env.API_KEY`), a call (`getpass()`), a variable named for
    the credential it holds (`csrfToken`: letters and underscores only); and so does a value too short
    to be one (under 4 characters)."""
    if len(value) < 4:
        return False
    text = value.decode("utf-8", "replace")
    return _REFERENCE.match(text) is None and _NAMED_FOR_IT.fullmatch(text) is None


def _entropic(value: bytes) -> bool:
    """A bare 40-character AWS secret key: mixed case and digits (a hex digest or a word is not)."""
    value = value.decode()  # type: ignore[assignment]
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


EXTRA_RULES = [
    Rule("Secret Keyword", KEYWORD_ASSIGNMENT.encode(), 1, not_a_reference),
    Rule("Hugging Face Token", rb"(?:^|[^A-Za-z0-9_])(hf_[A-Za-z0-9]{30,})"),
    Rule("NPM tokens", rb"(?:^|[^A-Za-z0-9_])(npm_[A-Za-z0-9]{36})"),
    Rule("Anthropic API Key", rb"(?:^|[^A-Za-z0-9_-])(sk-ant-[A-Za-z0-9_-]{16,})"),
    Rule("OpenAI Token", rb"(?:^|[^A-Za-z0-9_-])(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
    Rule("Google API Key", rb"(AIza[0-9A-Za-z_-]{35})"),
    Rule("GitHub Token", rb"(github_pat_[A-Za-z0-9_]{22,})"),
    Rule("Stripe Access Key", rb"((?:r|s|p)k_live_[0-9a-zA-Z]{24,})"),
    Rule(
        "Bearer Token",
        rb"[Bb]earer[ \t]+([A-Za-z0-9._~+/=-]{16,})",
        1,
        lambda v: any(48 <= c <= 57 for c in v),
    ),
    Rule(
        "AWS Secret Access Key",
        rb"(?:^|[^A-Za-z0-9/+=_-])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=_-]|$)",
        1,
        _entropic,
    ),
]
"""Rules for formats detect-secrets lacks (or, for Stripe, catches only the first 24 characters of)."""


def all_rules() -> list[Rule]:
    return plugin_rules() + EXTRA_RULES
