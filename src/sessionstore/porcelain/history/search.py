"""`session search`: a regex over what sessions said, read straight from the blobs.

Blobs are JSONL of pydantic-ai messages, so a message is one line and `orjson` turns it into plain
dicts: no pydantic-ai import and no validation on this path (it measured well above the 50 MB/s goal
of issue 15; see benchmarks/bench_search.py). What is searched is each part's text as
`session.message_text.part_texts` gives it (prompts, answers, thinking, tool arguments and output).

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
from sessionstore.porcelain.session.log_blobs import blob_origins
from sessionstore.porcelain.session.message_text import ROLES, PartText, part_texts

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

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
    # Every match contains the literal, so a part whose text lacks it cannot match: `in` skips the
    # regex call (which encodes the text to UTF-8 first) for the other parts of a candidate line.
    needed = "" if folded else query.literal.decode()
    for line in _candidate_lines(data, query.literal, folded):
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # not ours to judge here: `session fsck` names a damaged blob
        if not isinstance(message, dict):
            continue
        for part in part_texts(message):
            if needed not in part.text:
                continue
            if query.wants(part) and (m := search(part.text)) is not None:
                yield part, m


def search(
    store: SessionStore, query: Query, names: Iterable[str] | None = None, *, all_history: bool = False
) -> Iterator[Hit]:
    """Hits in sessions `names` (default: every session), session by session, oldest message first."""
    for name in names if names is not None else store.sessions():
        for blob, commit in blob_origins(store, name, all_history=all_history):
            data = store.objects.read(blob)
            for part, m in search_blob(data, query):
                before, match, after = _snippet(part.text, m)
                yield Hit(name, commit.seq, commit.id, part.role, part.kind, part.tool, before, match, after)
