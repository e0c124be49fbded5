"""A session's derived title: the first real user request in its first commits, and the `title` field
that records it on the commit line where it is first known.

The rule (what `session list` shows for a session without a set title): look through the log's first
`TITLE_COMMITS` lines in order; each line's blobs are its `blob` when it has one, else its `blobs`
(a reset point's state), at most the first two; in each blob's first `FIRST_BLOB_BYTES` the first
user-prompt part that is the person talking (`request_text`) is the title, shortened
(`shorten_title`). None there: ''.

A line may carry the answer for itself: `title`, what its blobs give under that rule when no earlier
line gave one ('' when they hold no request). `title_field` makes it for each new line, from the
bytes the writer has in hand, on every line of the first `TITLE_COMMITS` until a line records a
request; a line without the field (a log written before it existed) has its blobs read instead
(`naming.title_from_start`). The commit id hashes the field with the rest (DESIGN §2), so a reader
that verifies the line may trust it as it would trust the blobs.

Blob lines are read with orjson as plain dicts, never pydantic-ai: `session list` runs this.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from sessionstore.errors import SessionStoreError

if TYPE_CHECKING:
    from sessionstore.plumbing.commits import Commit

__all__ = [
    "FIELD",
    "FIRST_BLOB_BYTES",
    "TITLE_CHARS",
    "TITLE_COMMITS",
    "Blobs",
    "first_request",
    "request_text",
    "shorten_title",
    "title_blobs",
    "title_field",
]

FIELD = "title"
"""The commit-line field recording the title its blobs give (see the module docstring)."""
TITLE_CHARS = 60
"""Longest derived title; a longer request is cut at a word and marked with `…`."""
TITLE_COMMITS = 8
"""Log lines the title is looked for in."""
FIRST_BLOB_BYTES = 1 << 16
"""How much of each blob is looked through: the first request is near its start."""
_NOT_A_REQUEST = re.compile(
    r"^\s*(<(command-|local-command|system-reminder|user-prompt-submit-hook|environment_context)"
    r"|<user_instructions>|Caveat:|# Conversation summary|\[Request interrupted)"
)
"""User-prompt text that is the harness talking, not the person (Claude Code and Codex wrappers)."""
_SLASH = re.compile(r"<command-name>(?P<name>[^<]*)</command-name>")
_ARGS = re.compile(r"<command-args>(?P<args>[^<]*)</command-args>")
_HOUSEKEEPING = frozenset({"/clear", "/compact", "/model", "/exit", "/help", "/login", "/logout", "/resume"})
_CODEX_REQUEST = "## My request for Codex:"
_USER_PROMPT = b'"user-prompt"'
"""On every blob line that holds a user prompt (the part's `part_kind`, as JSON writes it)."""


def shorten_title(text: str, limit: int = TITLE_CHARS) -> str:
    """One line of at most `limit` characters, cut at a word boundary with `…`."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,.;:") + "…"


def request_text(text: str) -> str | None:
    """What the person asked in one user prompt, or None when it is the harness talking.

    Claude Code wraps slash commands (`<command-name>/fix</command-name>`: the command is the request,
    unless it is a housekeeping one like /clear) and local output; Codex prefixes attached files and
    puts the request after `## My request for Codex:`."""
    if (m := _SLASH.search(text)) is not None:
        command = m["name"].strip()
        args = _ARGS.search(text)
        if command in _HOUSEKEEPING:
            return None
        return f"{command} {args['args'].strip()}".strip() if args else command
    if (cut := text.find(_CODEX_REQUEST)) >= 0:
        text = text[cut + len(_CODEX_REQUEST) :]
    from sessionstore.formats.injected import injected  # lazily: a cached `session list` derives nothing

    if not text.strip() or _NOT_A_REQUEST.match(text) or injected(text) is not None:
        return None  # the harness talking, or the context it injected (an AGENTS.md, the sandbox)
    return text


def first_request(data: bytes) -> str:
    """The shortened first real request in a blob's first `FIRST_BLOB_BYTES` (`data`: its bytes,
    verified by the caller, or at least that many of its first ones), '' when there is none there.

    Only lines holding a user prompt are parsed, and a part whose content is a string is taken as
    `message_text.part_texts` gives it."""
    if len(data) > FIRST_BLOB_BYTES:
        data = data[:FIRST_BLOB_BYTES]
    if _USER_PROMPT not in data and b"\\u" not in data:
        return ""
    for line in data.split(b"\n"):
        if _USER_PROMPT not in line and b"\\u" not in line:
            continue  # no user prompt on it: not parsed (a JSON escape might spell one: parsed)
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # the cut last line of a large blob, or an empty one
        if (text := _request_in(message)) is not None:
            return shorten_title(text)
    return ""


def _request_in(message: object) -> str | None:
    """The first real request among one stored message's user-prompt parts, or None."""
    if not isinstance(message, dict):
        return None
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict) or part.get("part_kind", "") != "user-prompt":
            continue
        content = part.get("content")
        if content is None:
            continue
        if not isinstance(content, str):  # a list of texts and media: as search renders it
            from sessionstore.porcelain.session.message_text import part_texts

            content = next(part_texts({"parts": [part]})).text
        if text := request_text(content):
            return text
    return None


def title_blobs(fields: dict[str, Any]) -> list[Any]:
    """The blobs a line's title comes from, given its fields as a dict: its `blob` when it has one,
    else its `blobs` (a reset point), at most two. Raises `AttributeError` or `TypeError` for fields
    that are no commit's."""
    blob = fields.get("blob")
    return [blob] if blob else list(fields.get("blobs") or [])[:2]


class Blobs(Protocol):
    """Where `title_field` reads a blob it was not handed: the store's `ObjectStore`."""

    def read(self, oid: str) -> bytes: ...


def title_field(
    parent: Commit | None, blob: str | None, extra: dict[str, Any], objects: Blobs, data: bytes | None
) -> dict[str, str]:
    """`{"title": ...}` for the line about to follow `parent` with `blob` and `extra`, or {} when the
    line is not to carry one: a title was recorded already, the line is past the first
    `TITLE_COMMITS`, or `parent` carries none (a log begun before the field: readers read the blobs
    of its lines from there). `data`: the bytes of `blob` when the caller has them (a turn's blob
    still landing is never read back); other blobs are read (and verified) from `objects`, and one
    that cannot be read now gives no field either (never a guess)."""
    if parent is not None and (parent.extra.get(FIELD) != "" or parent.seq >= TITLE_COMMITS):
        return {}
    found = ""
    for oid in title_blobs({"blob": blob, "blobs": extra.get("blobs")}):
        held = data if oid == blob and data is not None else _read(objects, oid)
        if held is None:
            return {}
        if found := first_request(held):
            break
    return {FIELD: found}


def _read(objects: Blobs, oid: object) -> bytes | None:
    """Blob `oid`'s bytes, verified; None when it cannot be read now (or `oid` is no id)."""
    if not isinstance(oid, str):
        return None
    try:
        return objects.read(oid)
    except (OSError, SessionStoreError):
        return None
