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
            # Values that are references rather than secrets ($VAR, <placeholder>, {template}) stay.
            r"(?![\[$<{])[^\s\"'`,;)]{4,}"
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
