"""Secrets never reach the shared MEMORY.md: credentials are replaced by `[redacted]` before any write.

What is a credential is `memory.secrets` (detect-secrets' plugins, run in linear time), the same
detector `session push` refuses with, so a file that passes one passes the other. A keyword
assignment keeps its keyword (`password=[redacted]`); a private key block goes whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from .secrets import Finding, first_secret, scan

REDACTED = "[redacted]"
_MARK = REDACTED.encode()


@dataclass(frozen=True)
class Redaction:
    """One credential taken out of a text: its kind and the line it was on (1-based)."""

    kind: str
    line: int

    def describe(self) -> str:
        return f"redacted a secret ({self.kind}) on line {self.line}"


def redactions(text: str) -> tuple[str, list[Redaction]]:
    """`text` with every credential replaced by `[redacted]`, and what was replaced where."""
    data = text.encode("utf-8", "surrogatepass")
    found = scan(data)
    if not found:
        return text, []
    pieces: list[bytes] = []
    done: list[Redaction] = []
    at = 0
    for finding in _merged(found):
        if finding.start < at:
            continue
        pieces += [data[at : finding.start], _MARK]
        done.append(Redaction(finding.kind, finding.line(data)))
        at = finding.end
    pieces.append(data[at:])
    return b"".join(pieces).decode("utf-8", "surrogatepass"), done


def _merged(found: list[Finding]) -> list[Finding]:
    """Overlapping findings as one span (the first one's kind), in order."""
    out: list[Finding] = []
    for finding in found:
        if out and finding.start < out[-1].end:
            last = out[-1]
            out[-1] = Finding(last.kind, last.start, max(last.end, finding.end))
        else:
            out.append(finding)
    return out


def redact(text: str) -> str:
    """`text` with every credential-looking value replaced by `[redacted]`; idempotent."""
    return redactions(text)[0]


def find_secret(text: str) -> str | None:
    """The kind of the first credential in `text`, or None: exactly when `redact` would change it."""
    return find_secret_in(text.encode("utf-8", "surrogatepass"))


def find_secret_in(data: bytes) -> str | None:
    """`find_secret` of UTF-8 `data`."""
    finding = first_secret(data)
    return finding.kind if finding else None
