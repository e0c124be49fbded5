"""The secret scan of `session push`: nothing leaves for a remote that looks like a credential.

What a push would send is every git object reachable from the tips it sends and from none of the
remote's tips this clone has (`git rev-list --objects`); each such `line` (a log line) and
`objects/<id>` (a blob: JSONL, one message a line) is read through one `git cat-file --batch` and its
JSON string escapes decoded (`json_text`), so the detector MEMORY.md's redaction uses
(`memory.secrets`, linear in the text) sees the text a message holds. `refuse_secrets` is what push
calls: one scan of all sessions together (skipping the blobs the export scanned as it wrote them), and
only when that finds something, one scan per session to name the session, the commit, the message
and the kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set

from sessionstore.errors import SessionStoreError
from sessionstore.memory.redact import find_secret_in
from sessionstore.plumbing.commits import Commit, parse_line
from sessionstore.plumbing.git import Git

_ESCAPES = (
    (b"\\n", b"\n"),
    (b"\\t", b"\t"),
    (b"\\r", b"\r"),
    (b"\\/", b"/"),
    (b"\\b", b"\b"),
    (b"\\f", b"\f"),
)
_CONTROL = re.compile(rb"\x01|\\u([0-9a-fA-F]{4})")


def json_text(data: bytes) -> bytes:
    """`data` (JSON) with its string escapes decoded: the text its strings hold, its structure kept.

    The quotes of the JSON itself become NUL (which JSON never holds raw), so a quote in the text is
    one a message wrote: the entropy rules look only inside those, not at every id and signature
    the JSON quotes, while the keyword rule takes NUL for a quote (`{"password": "..."}` as a tool's
    arguments). `bytes.replace` per escape (a push-sized scan cannot afford a regex callback per
    `\n`); an escaped backslash is parked on \x01 first, so `\\n` stays a backslash and an n.
    """
    data = data.replace(b"\\\\", b"\x01").replace(b'\\"', b"\x02").replace(b'"', b"\x00")
    data = data.replace(b"\x02", b'"')
    if b"\\" in data:
        for escaped, plain in _ESCAPES:
            data = data.replace(escaped, plain)
        if b"\\u" in data:  # orjson escapes only control characters this way; in the same pass the
            return _CONTROL.sub(_unescaped, data)  # parked backslashes return (a \u0001 is no backslash)
    return data.replace(b"\x01", b"\\")


def _unescaped(match: re.Match[bytes]) -> bytes:
    if match[1] is None:
        return b"\\"
    return chr(int(match[1], 16)).encode("utf-8", "surrogatepass")


def secret_in(data: bytes) -> str | None:
    """The kind of the first credential-looking text in a blob or log line (JSON), or None.

    The rules are made for text, as MEMORY.md holds it, so they are tried on the text the JSON
    encodes: in a blob, a message's `{"password": "..."}` is `{\\"password\\": \\"...\\"}` and a line
    starting `ghp_...` follows `\\n`, which neither the assignment rule nor a word boundary matches.
    """
    return find_secret_in(json_text(data))


def _message_of(data: bytes) -> int | None:
    """The 1-based message (JSONL line) of blob `data` that holds the first secret, or None."""
    for number, line in enumerate(data.split(b"\n"), 1):
        if line and secret_in(line):
            return number
    return None


def scan_outgoing(git: Git, name: str, tip: str, exclude: Sequence[str]) -> tuple[str, str] | None:
    """(where: commit and message, kind) of the first credential-looking text in what a push of `tip`
    would send (every object reachable from it and from none of `exclude`), or None when clean."""
    paths = _outgoing(git, [tip], exclude)
    shas = list(paths)
    owner: dict[str, Commit] = {}  # store blob id -> first outgoing commit naming it
    blobs: list[tuple[str, bytes]] = []
    for sha, data in zip(shas, git.cat(shas), strict=True):
        if data is None:
            continue
        if paths[sha] == "line":
            commit = parse_line(data.rstrip(b"\n"), name, 0)
            if commit is not None:
                for oid in commit.named_blobs:
                    if oid not in owner or owner[oid].seq > commit.seq:
                        owner[oid] = commit
            blobs.append(("line", data))
        else:
            blobs.append((paths[sha][len("objects/") :], data))
    for key, data in blobs:
        kind = secret_in(data)
        if kind:
            commit = parse_line(data.rstrip(b"\n"), name, 0) if key == "line" else owner.get(key)
            where = f"commit {commit.id[:7]} ({name}@{commit.seq})" if commit else f"blob {key[:12]}"
            message = _message_of(data) if key != "line" else None
            return where + (f", message {message}" if message else ", its log line"), kind
    return None


def _outgoing(git: Git, tips: Sequence[str], exclude: Sequence[str]) -> dict[str, str]:
    """{git blob: its path (`line` or `objects/<id>`)} of what a push of `tips` would send."""
    listing = git.run("rev-list", "--objects", *tips, "--not", *exclude, "--").decode().splitlines()
    paths: dict[str, str] = {}
    for row in listing:
        sha, _, path = row.partition(" ")
        if path == "line" or path.startswith("objects/"):
            paths.setdefault(sha, path)
    return paths


def any_secret_outgoing(
    git: Git, tips: Sequence[str], exclude: Sequence[str], scanned: Set[str] = frozenset()
) -> bool:
    """Whether anything a push of all `tips` would send looks like a credential: one `rev-list` and
    one `cat-file` for every session (a push of 100 sessions spent 1.4 s in per-session scans), so
    only a push that holds one pays for `scan_outgoing` per session to name it. `scanned`: git blob
    ids already found clean (those the export wrote, scanned while it had their bytes): not read."""
    shas = [sha for sha in _outgoing(git, tips, exclude) if sha not in scanned]
    return bool(shas) and any(data is not None and secret_in(data) for data in git.cat(shas))


def refuse_secrets(
    git: Git, tips: Mapping[str, str], exclude: Sequence[str], scanned: Set[str] = frozenset()
) -> None:
    """Raise `SessionStoreError` naming session, commit, message and kind when anything a push of `tips`
    ({session: git tip}) would send, past the remote's commits `exclude`, looks like a credential;
    return quietly when it is all clean (then nothing was read twice). `scanned`: git blob ids known
    clean (`any_secret_outgoing`); every other outgoing blob is read and scanned."""
    if not tips or not any_secret_outgoing(git, list(tips.values()), exclude, scanned):
        return
    for name, tip in tips.items():
        found = scan_outgoing(git, name, tip, exclude)
        if found:
            raise SessionStoreError(
                f"session {name!r}: {found[0]} holds what looks like a secret ({found[1]}); nothing "
                "was pushed: remove it (check out or fork from before it) or pass --allow-secrets"
            )
