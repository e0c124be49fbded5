"""Finding credentials in text in time linear in its length: the one detector behind MEMORY.md's
redaction (`memory.redact`) and `session push`'s refusal (`porcelain.sharing.secret_scan`).

What counts as a credential is `memory.secret_patterns` (detect-secrets' regex plugins compiled for
RE2, and the formats they lack) plus detect-secrets' two entropy plugins: a quoted string of base64
characters whose Shannon entropy exceeds 4.5 bits, or of hex digits exceeding 3.0, computed by the
plugins themselves, minus what their heuristic filters call a sequence, a UUID or an id.

Linear, whatever the text: one RE2 pass over all rules at once says whether any matches (most texts:
none), then each rule's matches come from one RE2 pass (RE2 never backtracks), and every per-match step is
bounded: an entropy candidate longer than `QUOTED_MAX` is not a credential and is not measured, the
id heuristic looks back at most `LOOK_BACK` bytes, a finding's end extends over the rest of its
token at most `EXTEND_MAX` bytes, and a private key block spans at most `BLOCK_MAX` bytes. The text
is UTF-8 bytes, so RE2's offsets are used as they are (no re-encoding per call).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import re2
from detect_secrets.filters.heuristic import is_likely_id_string, is_potential_uuid, is_sequential_string
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

from .secret_patterns import Rule, all_rules

QUOTED_MAX = 200
"""Longest quoted string measured for entropy: longer runs are data (images, signatures), not keys."""
LOOK_BACK = 40
"""Bytes before a quoted string the id and digest heuristics see (`"user_id": "..."` is an id)."""
EXTEND_MAX = 256
"""How far a finding's end extends over the rest of its token (`sk_live_` keys outgrew their rule)."""
BLOCK_MAX = 65_536
"""Longest private key block redacted whole (a 4096-bit armoured PGP key is ~7 KB)."""

PRIVATE_KEY = "Private Key"


@dataclass(frozen=True)
class Finding:
    """A credential-looking span of a UTF-8 text: its kind and byte offsets."""

    kind: str
    start: int
    end: int

    def line(self, data: bytes) -> int:
        """The 1-based line of `data` the finding starts on."""
        return data.count(b"\n", 0, self.start) + 1


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_QUOTED_HEX = re2.compile(rb"\"([0-9a-fA-F]{9,})\"|'([0-9a-fA-F]{9,})'", _OPTIONS)
_QUOTED_BASE64 = re2.compile(rb"\"([A-Za-z0-9+/=_\\-]{23,})\"|'([A-Za-z0-9+/=_\\-]{23,})'", _OPTIONS)
"""Quoted runs of each entropy plugin's charset, at least as long as the shortest string its limit can
pass: entropy is at most log2 of the distinct characters, 2^3.0 = 8 and 2^4.5 < 23."""
_BLOCK_END = re2.compile(rb"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", _OPTIONS)
_ARMOUR = re2.compile(rb"[-A-Za-z0-9 +/=:\r\n\t]*", _OPTIONS)
_TOKEN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=")
_EDGE = frozenset(b" \t\r\n\"'`:=,;()[]{}<>\x00")
"""Bytes a whole-match rule may have matched at its edges (`(?:\\s|"|^)AKC...`): not the secret."""


@cache
def _compiled() -> tuple[list[tuple[Rule, object]], object, object]:
    """Every rule compiled; an RE2 set of them (one pass says which match anywhere); and one regex of
    them all, consulted only when the set says none: a set whose automaton outgrows its memory
    answers "no match", while a regex falls back to RE2's slower automaton and still answers right."""
    rules = [(rule, rule.compiled()) for rule in all_rules()]
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    which = re2.Set.SearchSet(options)
    for rule, _ in rules:
        which.Add(rule.pattern)
    which.Compile()
    anywhere = re2.compile(b"|".join(b"(?:" + rule.pattern + b")" for rule, _ in rules), options)
    return rules, which, anywhere


@cache
def _entropy_plugins() -> tuple[Base64HighEntropyString, HexHighEntropyString]:
    return Base64HighEntropyString(), HexHighEntropyString()


def _matching_rules(data: bytes) -> list[tuple[Rule, object]]:
    """The rules that match somewhere in `data` (all of them when the set could not tell)."""
    rules, which, anywhere = _compiled()
    hits = which.Match(data)  # type: ignore[attr-defined]
    if hits:
        return [rules[i] for i in sorted(hits)]
    return rules if anywhere.search(data) else []  # type: ignore[attr-defined]


def _findings(data: bytes) -> Iterator[Finding]:
    """Every finding, rule by rule, then the entropy rules: lazily, so a caller may stop at one."""
    for rule, regex in _matching_rules(data):
        if rule.kind == PRIVATE_KEY:
            yield from _key_blocks(data, regex)
            continue
        reach = 0  # a match inside this rule's last finding adds nothing (and is not extended again)
        for match in regex.finditer(data):  # type: ignore[attr-defined]
            start, end = match.span(rule.group)
            if start < reach or (rule.check is not None and not rule.check(data[start:end])):
                continue
            if rule.group == 0:
                start, end = _trimmed(data, start, end)
                end = _extended(data, end)
            if end > start:
                reach = end
                yield Finding(rule.kind, start, end)
    yield from _high_entropy(data)


def scan(data: bytes) -> list[Finding]:
    """Every credential-looking span of UTF-8 `data`, ordered by start (spans may overlap)."""
    return sorted(_findings(data), key=lambda f: (f.start, -f.end))


def _trimmed(data: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and data[start] in _EDGE:
        start += 1
    while end > start and data[end - 1] in _EDGE:
        end -= 1
    return start, end


def _extended(data: bytes, end: int) -> int:
    """`end` moved over the rest of its token, at most `EXTEND_MAX` bytes."""
    limit = min(len(data), end + EXTEND_MAX)
    while end < limit and data[end] in _TOKEN:
        end += 1
    return end


def _key_blocks(data: bytes, header: object) -> Iterator[Finding]:
    """Each private key block whole: from its `-----BEGIN` line to its `-----END` line, or (cut off)
    over the armour that follows, at most `BLOCK_MAX` bytes; one pass finds every END line, and a
    header inside a block already found is skipped, so no byte is scanned twice."""
    ends = [m.end() for m in _BLOCK_END.finditer(data)]
    covered = 0
    for match in header.finditer(data):  # type: ignore[attr-defined]
        start = match.start()
        if start < covered:
            continue
        dashes = data.rfind(b"-----", max(0, start - 5), start)
        start = dashes if dashes != -1 else start
        after = bisect.bisect_right(ends, match.end())
        if after < len(ends) and ends[after] - start <= BLOCK_MAX:
            end = ends[after]
        else:
            armour = _ARMOUR.match(data, match.end(), min(len(data), start + BLOCK_MAX))
            end = armour.end() if armour else match.end()
            while end > match.end() and data[end - 1] in b"\r\n\t ":
                end -= 1
        yield Finding(PRIVATE_KEY, start, end)
        covered = end


def _high_entropy(data: bytes) -> Iterator[Finding]:
    """Quoted strings the entropy plugins flag (their limits, their entropy), minus what the
    plugins' heuristic filters call a sequence, a UUID or an id; longer than `QUOTED_MAX`, skipped."""
    base64, hexadecimal = _entropy_plugins()
    for plugin, quoted in ((hexadecimal, _QUOTED_HEX), (base64, _QUOTED_BASE64)):
        # a quoted string of hex digits is also one of base64 characters: judged once, as hex
        for match in quoted.finditer(data):
            group = 1 if match.start(1) >= 0 else 2
            start, end = match.span(group)
            if end - start > QUOTED_MAX:
                continue
            secret = data[start:end].decode("ascii")
            distinct = set(secret)
            if plugin is base64 and distinct <= _HEX:
                continue
            if len(distinct) < (9 if plugin is hexadecimal else 23):  # log2(distinct) bounds entropy
                continue
            if _entropy(secret, plugin) <= plugin.entropy_limit:
                continue
            before = data[max(0, start - LOOK_BACK) : end]
            line = before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")
            if is_sequential_string(secret) or ("-" in secret and is_potential_uuid(secret)):
                continue  # (a UUID has dashes; hex has none)
            if is_likely_id_string(secret, line):
                continue
            if plugin is hexadecimal and _DIGEST_NAMED.search(line, 0, len(line) - len(secret)):
                continue
            yield Finding(plugin.secret_type, start, end)


_HEX = frozenset("0123456789abcdefABCDEF")


def _entropy(secret: str, plugin: Base64HighEntropyString | HexHighEntropyString) -> float:
    """The plugin's Shannon entropy of `secret`, counted in one pass (the plugin counts each of its
    charset's 64 characters in turn; a test checks both agree). An all-digit hex string goes to the
    plugin itself, which lowers its entropy (digits alone are rarely secrets)."""
    if secret.isdigit() and isinstance(plugin, HexHighEntropyString):
        return plugin.calculate_shannon_entropy(secret)
    size = len(secret)
    return -sum(n / size * math.log2(n / size) for n in Counter(secret).values())


_DIGEST_NAMED = re.compile(
    r"(?i)(?:\bid|hash|sha\d*|md5|commit|digest|checksum|etag|oid|rev|revision|parent|tree|blob|object)\W{0,4}\Z"
)
"""A hex string named a digest right before it (`"commit_hash": "0aa0..."`, `sha256 = '...'`): git and
content hashes fill sessions; detect-secrets' own id heuristic (`_id`) misses these names."""


def first_secret(data: bytes) -> Finding | None:
    """A finding of `scan(data)` (the first rule's first), or None: what a refusal names. Stops at
    the first one, so a refused push does not pay for every finding of a big text."""
    return next(_findings(data), None)
