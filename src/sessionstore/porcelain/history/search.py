"""`session search`: a regex over what sessions said, read straight from the blobs.

Blobs are JSONL of pydantic-ai messages, so a message is one line and `orjson` turns it into plain
dicts: no pydantic-ai import and no validation on this path (it measured well above the 50 MB/s goal
of issue 15; see benchmarks/bench_search.py). What is searched, per message part:

- user prompts, assistant text, thinking and system prompts (`content`),
- tool calls: the tool's arguments as JSON text (`args`),
- tool returns and retries: their output (`content`, as JSON text when it is not a string).

Speed: before parsing a line, a literal every match must contain (`required_literal`) is looked for
in its raw bytes; a line without it cannot match and is skipped unparsed. That is exact because
blobs are written by `codec.encode` (orjson, or the stdlib with `ensure_ascii=False`), which escape
only `"`, `\\` and control characters: a literal free of those appears in the raw JSON exactly as in
the text. A pattern with no such literal (an alternation, a lone class) parses every line.

Each hit names the commit that first stored the message (`NAME@SEQ`), so `session show NAME@SEQ`
shows it in context. By default only the current state of each session is searched (what its next
request would build on); `all_history` searches every blob any commit of the log reached, each once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.history.user_regex import compile_user_regex

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

ROLES = ("user", "assistant", "tool", "system", "summary")
CONTEXT_CHARS = 40
"""Characters of context shown either side of a match."""

_ROLE_OF_KIND = {
    "user-prompt": "user",
    "system-prompt": "system",
    "text": "assistant",
    "thinking": "assistant",
    "tool-call": "assistant",
    "builtin-tool-call": "assistant",
    "tool-return": "tool",
    "builtin-tool-return": "tool",
    "retry-prompt": "tool",
    "retry-feedback": "system",
    "compaction": "summary",
}


@dataclass(frozen=True)
class PartText:
    """One searchable piece of a message: who said it, the tool it concerns (if any), the text."""

    role: str
    kind: str
    tool: str | None
    text: str


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


def _as_text(value: Any) -> str:
    """Searchable text of a content or argument value: strings as they are (never JSON-escaped, so a
    quote or a newline matches itself), mappings as `key: value` lines, media as `[kind: url]`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("kind"), str) and "url" in value:
            return f"[{value['kind']}: {value['url']}]"  # media: its kind and where, never its bytes
        return "\n".join(f"{k}: {_as_text(v)}" for k, v in value.items())
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def part_texts(message: dict[str, Any]) -> Iterator[PartText]:
    """The searchable parts of one message as stored (a dict from the blob's JSON line).

    Part kinds are told apart by their `part_kind` string, so a kind a later pydantic-ai adds is
    searched by its content rather than failing.
    """
    instructions = message.get("instructions")
    if isinstance(instructions, str) and instructions:
        yield PartText("system", "instructions", None, instructions)
    for part in message.get("parts") or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("part_kind", "")
        role = _ROLE_OF_KIND.get(kind) or ("assistant" if message.get("kind") == "response" else "user")
        tool = part.get("tool_name") if isinstance(part.get("tool_name"), str) else None
        if kind in ("tool-call", "builtin-tool-call"):
            args = part.get("args")
            yield PartText(role, kind, tool, args if isinstance(args, str) else _as_text(args or {}))
        else:
            content = part.get("content")
            if content is not None:
                yield PartText(role, kind, tool, _as_text(content))


_META = frozenset(".^$*+?{}[]()|\\")
_OPTIONAL = frozenset("*?{")
_REPEAT = re.compile(r"\{\d*(?:,\d*)?\}")
_UNSAFE = frozenset('"\\') | {chr(c) for c in range(32)}
"""Characters JSON writes escaped: a literal holding one is not searched for in the raw bytes."""


def required_literal(pattern: str) -> str:
    """The longest run of plain characters that every match of `pattern` contains ('' if none).

    Conservative: only top-level literal characters count (not those under a quantifier that allows
    zero, not anything inside a group or class), and a pattern with `|` or an inline flag has none.
    """
    if "|" in pattern or "(?" in pattern:
        return ""
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i = 0

    def cut() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    def keep(char: str, following: str) -> None:
        run.append(char)
        if following == "+":  # `a+` requires one `a`, but what follows need not be next to it
            cut()

    while i < len(pattern):
        ch = pattern[i]
        nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
        if ch == "\\":
            literal = nxt if nxt and not nxt.isalnum() else None  # `\(` is a literal; `\w`, `\1` are not
            i += 2
            after = pattern[i] if i < len(pattern) else ""
            if literal is None or depth or after in _OPTIONAL:
                cut()
            else:
                keep(literal, after)
            continue
        if ch == "{" and (repeat := _REPEAT.match(pattern, i)):  # `{3}` repeats; its digits are no text
            cut()
            i = repeat.end()
            continue
        if ch in "([":
            cut()
            if ch == "[":  # skip the class: any one of its characters, none required
                end = pattern.find("]", i + 2)
                i = end + 1 if end != -1 else len(pattern)
                continue
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
            cut()
        elif ch in _META or depth or nxt in _OPTIONAL:
            cut()
        else:
            keep(ch, nxt)
        i += 1
    cut()
    safe = [r for r in runs if not set(r) & _UNSAFE]
    return max(safe, key=len, default="")


@dataclass(frozen=True)
class Query:
    """What to look for: a compiled regex and the filters of `session search`."""

    pattern: Any
    """The compiled regex (`user_regex.compile_user_regex`): RE2's, or `re`'s when `backtracking`."""
    role: str | None = None
    tool: str | None = None
    literal: bytes = b""
    """A byte string every matching line's raw JSON contains (see `required_literal`); b'' for none."""
    ignore_case: bool = False
    backtracking: bool = False
    """The pattern runs on Python's `re` (`--pcre`): search under `user_regex.time_limit`."""

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
        literal = required_literal(pattern)
        if ignore_case:  # lower-cased ASCII only, without the letters a non-ASCII one folds to
            pieces = re.split(r"[kKsSiI]", literal) if literal.isascii() else []  # K (Kelvin), ſ, İ, ı
            literal = max(pieces, key=len, default="").lower()
        return cls(compiled, role, tool, literal.encode(), ignore_case, backtracking)

    def wants(self, part: PartText) -> bool:
        if self.role is not None and part.role != self.role:
            return False
        return self.tool is None or part.tool == self.tool


def _snippet(text: str, m: Any) -> tuple[str, str, str]:
    start, end = m.span()
    before = text[max(0, start - CONTEXT_CHARS) : start]
    after = text[end : end + CONTEXT_CHARS]
    flat = str.maketrans({"\n": " ", "\r": " ", "\t": " "})
    lead = "…" if start > CONTEXT_CHARS else ""
    tail = "…" if end + CONTEXT_CHARS < len(text) else ""
    return lead + before.translate(flat), m.group(0).translate(flat), after.translate(flat) + tail


def _candidate_lines(data: bytes, literal: bytes, folded: bool) -> Iterator[bytes]:
    """The lines of `data` that contain `literal` (every line when it is empty), found by jumping
    from one occurrence to the next rather than visiting each line."""
    if not literal:
        yield from (line for line in data.split(b"\n") if line)
        return
    haystack = data.lower() if folded else data
    pos = haystack.find(literal)
    while pos != -1:
        start = haystack.rfind(b"\n", 0, pos) + 1
        end = haystack.find(b"\n", pos)
        end = len(data) if end == -1 else end
        yield data[start:end]
        pos = haystack.find(literal, end)


def search_blob(data: bytes, query: Query) -> Iterator[tuple[PartText, Any]]:
    """Every match in one blob's messages, in order (the first match per part)."""
    search = query.pattern.search
    folded = bool(query.literal) and query.ignore_case
    for line in _candidate_lines(data, query.literal, folded):
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # not ours to judge here: `session fsck` names a damaged blob
        if not isinstance(message, dict):
            continue
        for part in part_texts(message):
            if query.wants(part) and (m := search(part.text)) is not None:
                yield part, m


def _blob_origins(store: SessionStore, name: str, all_history: bool) -> list[tuple[str, Any]]:
    """(blob id, commit that first stored it) for the blobs to search in session `name`, in order."""
    commits, _ = store.log(name).scan(since_reset=False)
    if not commits:
        return []
    first: dict[str, Any] = {}
    for commit in commits:
        for blob in ([commit.blob] if commit.blob else []) + commit.blobs:
            first.setdefault(blob, commit)
    if all_history:
        return list(first.items())
    from sessionstore.porcelain.session.writer import (
        state_at,
    )  # lazily: `session list` titles sessions with `part_texts` alone

    blobs, _ = state_at(store, commits[-1])
    return [(blob, first[blob]) for blob in dict.fromkeys(blobs)]


def search(
    store: SessionStore, query: Query, names: Iterable[str] | None = None, *, all_history: bool = False
) -> Iterator[Hit]:
    """Hits in sessions `names` (default: every session), session by session, oldest message first."""
    for name in names if names is not None else store.sessions():
        for blob, commit in _blob_origins(store, name, all_history):
            data = store.objects.read(blob)
            for part, m in search_blob(data, query):
                before, match, after = _snippet(part.text, m)
                yield Hit(name, commit.seq, commit.id, part.role, part.kind, part.tool, before, match, after)
