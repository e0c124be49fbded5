"""Secrets never reach the shared MEMORY.md: credentials are replaced by `[redacted]` before any write.

Patterns are specific (vendor prefixes, JWT shape, PEM armour, `password=`-style assignments) so that
ordinary text such as commit ids and sha256 digests is left alone.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

# (name, pattern); a pattern with a group named `keep` keeps that prefix and redacts the rest.
REDACTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "pem-private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\sA-Za-z0-9+/=:-]*)",
            re.DOTALL,
        ),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack-token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    # A token has a digit somewhere; "Bearer Authorization" is prose.
    ("bearer-token", re.compile(r"(?P<keep>\b[Bb]earer\s+)(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{16,}")),
    (
        "secret-assignment",
        re.compile(
            r"(?P<keep>(?i:\b(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret|client_secret|token|access_token"
            r"|refresh_token|auth_token|api_key|apikey|api-key|private_key|aws_secret_access_key)\b)"
            r"[\"']?\s*[:=]\s*[\"']?)"
            # Values that are references rather than secrets stay: $VAR, <placeholder>, {template},
            # and code that reads the secret from elsewhere: a dotted name (env.API_KEY) or a call.
            r"(?![\[$<{])(?!(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?![\w.]))(?![A-Za-z_][\w.]*\()"
            r"[^\s\"'`,;)]{4,}"
        ),
    ),
)


def redact(text: str) -> str:
    """`text` with every credential-looking value replaced by `[redacted]`; idempotent."""
    for _name, pattern in REDACTION_PATTERNS:
        text = pattern.sub(_replacement, text)
    return text


def _replacement(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep")
    return (keep or "") + REDACTED


# Literal text each pattern's match must contain (found with str.find, which is fast), whether it is
# searched in the lower-cased text, and how far before it a match starts. A pattern is then tried with
# `match` at the few places a match can begin, so scanning a whole session (push) costs a few passes of
# str.find instead of one slow regex pass per pattern: the patterns begin with `\b`, which defeats the
# regex engine's own literal search.
_ANCHORS: dict[str, tuple[bool, tuple[str, ...], int]] = {
    "pem-private-key": (False, ("-----BEGIN ",), 0),
    "anthropic-key": (False, ("sk-ant-",), 0),
    "openai-key": (False, ("sk-",), 0),
    "aws-access-key-id": (False, ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"), 0),
    "github-token": (False, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), 0),
    "slack-token": (False, ("xox",), 0),
    "google-api-key": (False, ("AIza",), 0),
    "jwt": (False, ("eyJ",), 0),
    "bearer-token": (False, ("earer",), 1),
    "secret-assignment": (
        True,
        (
            "password",
            "passwd",
            "pwd",
            "passphrase",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "private_key",
            "aws_secret_access_key",
        ),
        0,
    ),
}
_ASSIGNED = re.compile(r"[\"']?\s*[:=]")
"""What follows a keyword being assigned (`token": "`, `api_key =`): most mentions of "token" are
not ("tokens", `"input_tokens": 12`), and the pattern needs this right after its keyword."""
_ASSIGNED_BYTES = re.compile(rb"[\"']?[\s\x80-\xff]*[:=]")
"""The same on UTF-8 bytes, letting any non-ASCII byte stand for Unicode whitespace (a superset)."""
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


def find_secret(text: str) -> str | None:
    """The name of the first pattern of `REDACTION_PATTERNS` that matches `text`, or None.

    Exactly when `redact(text)` would change something (a property test pins it), but fast on
    megabytes: a pattern is only tried where its literal part occurs, at the positions a match
    could start there (`match` at a position sees the text before it, so `\b` means what it says).
    """
    lowered: str | None = None
    for name, pattern in REDACTION_PATTERNS:
        lower, anchors, back = _ANCHORS[name]
        if lower and lowered is None:
            lowered = text.lower()
        hay = lowered if lower and lowered is not None else text
        for anchor in anchors:
            at = hay.find(anchor)
            while at != -1:
                if lower:
                    if _ASSIGNED.match(hay, at + len(anchor)) and _assignment_at(hay, text, at, pattern):
                        return name
                elif at >= back and pattern.match(text, at - back):
                    return name
                at = hay.find(anchor, at + 1)
    return None


def _assignment_at(lowered: str, text: str, at: int, pattern: re.Pattern[str]) -> bool:
    """Whether an assignment match starts in the name around `at`: at the name's start or just after
    one of its `_`/`-` separators (the pattern's `(?:[a-z0-9]+[_-])*` prefix)."""
    start = at
    while start > 0 and lowered[start - 1] in _NAME_CHARS:
        start -= 1
    for pos in range(start, at + 1):
        if (pos == start or lowered[pos - 1] in "_-") and pattern.match(text, pos):
            return True
    return False


_BYTE_ANCHORS = tuple((lower, tuple(a.encode() for a in anchors)) for lower, anchors, _ in _ANCHORS.values())


def find_secret_in(data: bytes) -> str | None:
    """`find_secret` of UTF-8 `data`, decoding it only when an anchor occurs in its bytes (for an
    assignment keyword: followed by what an assignment needs).

    Almost every blob of a session mentions "token" (usage fields) and few assign one, and
    `bytes.find` is several times faster than `str.find` on text with non-ASCII characters. (The byte
    test lower-cases ASCII only: a keyword spelled with a non-ASCII case variant, such as U+017F for
    "s", is not looked for.)
    """
    lowered: bytes | None = None
    for lower, anchors in _BYTE_ANCHORS:
        if not lower:
            if any(a in data for a in anchors):
                return find_secret(data.decode(errors="replace"))
            continue
        if lowered is None:
            lowered = data.lower()
        for anchor in anchors:
            at = lowered.find(anchor)
            while at != -1:
                if _ASSIGNED_BYTES.match(lowered, at + len(anchor)):
                    return find_secret(data.decode(errors="replace"))
                at = lowered.find(anchor, at + 1)
    return None
