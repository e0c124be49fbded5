"""`session search`: a regex over what sessions said, read straight from the blobs.

Blobs are JSONL of pydantic-ai messages, so a message is one line and `orjson` turns it into plain
dicts: no pydantic-ai import and no validation on this path. What is searched is each part's text as
`session.message_text.part_texts` gives it (prompts, answers, thinking, tool arguments and output).

Speed (issue 30): raw bytes first, parsing and verifying only what matches. Each blob is read once,
unverified; `raw_filter.RawFilter` finds the lines whose raw JSON holds a literal every match must
contain (one per alternative of `a|b`), and only those are parsed (a pattern with no such literal
parses every line). That is exact: the property test in tests/porcelain/history/test_raw_filter.py
compares it with parsing every line. On a parsed line, only the parts whose text holds a literal
reach the regex; a plain pattern is found with `str.find`, and RE2 runs on the UTF-8 bytes, the
context decoded from a window around the match.

What is verified: a blob with a hit is checked against its name (sha256, on the store's hashing
thread while its lines are parsed) before any hit from it is reported; a bad one raises
`CorruptObjectError` worded as `Blobs.read` words it. A blob without a hit is not hashed (the
search reads no text of it to report): `session fsck` checks every blob. A missing blob raises.
The next session's blobs are read on a thread while this one's are searched.

Each hit names the commit that first stored the message (`NAME@SEQ`), so `session show NAME@SEQ`
shows it in context. By default only the current state of each session is searched (what its next
request would build on); `all_history` searches every blob any commit of the log reached, each once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.objects import hash_aside
from sessionstore.porcelain.history.raw_filter import RawFilter
from sessionstore.porcelain.history.user_regex import compile_user_regex
from sessionstore.porcelain.session.log_blobs import blob_origins
from sessionstore.porcelain.session.message_text import ROLES, PartText, part_texts

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

_META = frozenset(".^$*+?{}[]()|\\")
CONTEXT_CHARS = 40
"""Characters of context shown either side of a match."""


@dataclass(frozen=True)
class Hit:
    """One match: where it is (`session@seq`, message index in its blob) and a snippet around it."""

    session: str
    seq: int
    commit: str
    role: str
    kind: str
    tool: str | None
    before: str
    match: str
    after: str

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "seq": self.seq,
            "rev": f"{self.session}@{self.seq}",
            "commit": self.commit,
            "role": self.role,
            "kind": self.kind,
            "tool": self.tool,
            "before": self.before,
            "match": self.match,
            "after": self.after,
        }


_WINDOW = 4 * CONTEXT_CHARS + 40
"""Bytes of UTF-8 either side of a match decoded for its context: at least CONTEXT_CHARS characters
whole, since a character takes at most 4 bytes."""
_FLAT = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


class Found(NamedTuple):
    """A part's first match and its context, as a `Hit` shows them (newlines and tabs as spaces)."""

    part: PartText
    before: str
    match: str
    after: str


@dataclass(frozen=True)
class Query:
    """What to look for: a compiled regex and the filters of `session search`."""

    pattern: Any
    """The compiled regex (`user_regex.compile_user_regex`): RE2's, or `re`'s when `backtracking`."""
    role: str | None = None
    tool: str | None = None
    raw: RawFilter | None = None
    """Which lines of a blob may match, judged on their raw bytes (None: every line is parsed)."""
    ignore_case: bool = False
    backtracking: bool = False
    """The pattern runs on Python's `re` (`--pcre`): search under `user_regex.time_limit`."""
    plain: str | None = None
    """The pattern's text when it has no regex syntax (and no `-i`): found with `str.find`."""

    @classmethod
    def compile(
        cls,
        pattern: str,
        *,
        role: str | None = None,
        tool: str | None = None,
        ignore_case: bool = False,
        backtracking: bool = False,
    ) -> Query:
        """Refuses, with one line naming the problem, a pattern that is not a valid regex and (unless
        `backtracking`) one needing what the linear-time engine lacks (`user_regex`)."""
        compiled = compile_user_regex(pattern, ignore_case=ignore_case, backtracking=backtracking)
        backtracking = isinstance(compiled, re.Pattern)
        if role is not None and role not in ROLES:
            raise SessionStoreError(f"unknown role {role!r}: use one of {', '.join(ROLES)}")
        raw = RawFilter.for_pattern(pattern, ignore_case=ignore_case, tool=tool)
        plain = pattern if pattern and not ignore_case and not set(pattern) & _META else None
        return cls(compiled, role, tool, raw if raw.active else None, ignore_case, backtracking, plain)

    def wants(self, part: PartText) -> bool:
        if self.role is not None and part.role != self.role:
            return False
        return self.tool is None or part.tool == self.tool

    def first(self, text: str) -> tuple[str, str, str] | None:
        """(before, match, after) of the first match in `text` (None if none), as `Hit` shows them."""
        if self.plain is not None:
            start = text.find(self.plain)
            return None if start == -1 else _snippet(text, start, start + len(self.plain))
        if self.backtracking:
            m = self.pattern.search(text)
            return None if m is None else _snippet(text, *m.span())
        data = text.encode()  # RE2 matches UTF-8; its str wrapper would also map every offset back
        m = self.pattern.search(data)
        return None if m is None else _snippet_of_bytes(data, *m.span())


def _snippet(text: str, start: int, end: int) -> tuple[str, str, str]:
    before = text[max(0, start - CONTEXT_CHARS) : start]
    after = text[end : end + CONTEXT_CHARS]
    lead = "…" if start > CONTEXT_CHARS else ""
    tail = "…" if end + CONTEXT_CHARS < len(text) else ""
    return lead + before.translate(_FLAT), text[start:end].translate(_FLAT), after.translate(_FLAT) + tail


def _snippet_of_bytes(data: bytes, start: int, end: int) -> tuple[str, str, str]:
    """`_snippet` of `data.decode()` for a match at byte offsets `start`, `end` (on character
    boundaries), decoding only a window either side (a cut character at its edge is dropped)."""
    before = data[max(0, start - _WINDOW) : start].decode("utf-8", "ignore")
    after = data[end : end + _WINDOW].decode("utf-8", "ignore")
    lead = "…" if start > _WINDOW or len(before) > CONTEXT_CHARS else ""
    tail = "…" if end + _WINDOW < len(data) or len(after) > CONTEXT_CHARS else ""
    match = data[start:end].decode()
    return (
        lead + before[len(before) - min(len(before), CONTEXT_CHARS) :].translate(_FLAT),
        match.translate(_FLAT),
        after[:CONTEXT_CHARS].translate(_FLAT) + tail,
    )


def search_lines(lines: Iterable[bytes], query: Query) -> Iterator[Found]:
    """Every part's first match in these JSONL lines of messages, in order (unverified bytes)."""
    # Every match contains one of the literals, so a part whose text lacks them cannot match: `in`
    # skips the regex call for the other parts of a candidate line (a plain pattern is that call).
    skip = query.raw is None or query.ignore_case or query.plain is not None
    needed = () if skip else tuple(b.decode() for b in query.raw.literals)  # type: ignore[union-attr]
    for line in lines:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # not ours to judge here: `session fsck` names a damaged blob
        if not isinstance(message, dict):
            continue
        for part in part_texts(message):
            if needed and not any(literal in part.text for literal in needed):
                continue
            if query.wants(part) and (shown := query.first(part.text)) is not None:
                yield Found(part, *shown)


def search_blob(data: bytes, query: Query) -> list[Found]:
    """Every part's first match in one blob's messages, in order; only the lines the raw-byte
    filter keeps are parsed. The bytes are not verified here (`search` does, for a blob with a hit)."""
    lines = query.raw.lines(data) if query.raw is not None else [line for line in data.split(b"\n") if line]
    return list(search_lines(lines, query)) if lines else []


def _verified(store: SessionStore, blob: str, data: bytes, query: Query) -> list[Found]:
    """`search_blob` of `data`, the bytes read for `blob`, once they are found to hash to its name.

    Only a blob with a hit is verified: sha256 runs on a worker thread while its lines are parsed.
    A bad blob raises `CorruptObjectError` (as `Blobs.read` words it) rather than report its text."""
    lines = query.raw.lines(data) if query.raw is not None else [line for line in data.split(b"\n") if line]
    if not lines:
        return []
    digest = hash_aside(data)
    found = list(search_lines(lines, query))
    if not found:
        digest.cancel()
        return found
    if digest.result() == blob:
        return found
    return search_blob(store.objects.read(blob), query)  # raises, unless the blob was repaired meanwhile


def _sessions_read(
    store: SessionStore, names: Iterable[str], all_history: bool
) -> Iterator[tuple[str, list[tuple[str, Any]], list[bytes]]]:
    """(name, `blob_origins`, the blobs' bytes unverified) for each session with blobs, in order.

    The next session's blobs are read on a thread while the caller searches this one's (a read
    releases the GIL). Its log is read ahead too; an error from it is raised in its turn, so a
    caller that stops before then never sees it."""
    from concurrent.futures import Future, ThreadPoolExecutor

    def read(name: str) -> tuple[str, list[tuple[str, Any]], Future[list[bytes]]] | None:
        try:
            origins = blob_origins(store, name, all_history=all_history)
        except Exception as err:  # raised in its turn, below
            failed: Future[list[bytes]] = Future()
            failed.set_exception(err)
            return name, [], failed
        if not origins:
            return None
        return name, origins, pool.submit(store.objects.read_unverified_many, [blob for blob, _ in origins])

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionstore-search") as pool:
        ahead = None
        for name in names:
            reading = read(name)
            if reading is None:
                continue
            if ahead is not None:
                yield ahead[0], ahead[1], ahead[2].result()
            ahead = reading
        if ahead is not None:
            yield ahead[0], ahead[1], ahead[2].result()


def search(
    store: SessionStore, query: Query, names: Iterable[str] | None = None, *, all_history: bool = False
) -> Iterator[Hit]:
    """Hits in sessions `names` (default: every session), session by session, oldest message first.

    A blob whose bytes no longer hash to its name raises `CorruptObjectError` if it has a hit; one
    without a hit is skipped unverified (`session fsck` checks every blob). A missing blob raises."""
    sessions = names if names is not None else store.sessions()
    for name, origins, blobs in _sessions_read(store, sessions, all_history):
        for (blob, commit), data in zip(origins, blobs, strict=True):
            for found in _verified(store, blob, data, query):
                part = found.part
                yield Hit(
                    name, commit.seq, commit.id, part.role, part.kind, part.tool, found.before, found.match,
                    found.after,
                )  # fmt: skip
