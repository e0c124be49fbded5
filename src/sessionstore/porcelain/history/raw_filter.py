"""Which lines of a stored blob can hold a match of `session search`'s pattern, judged on raw bytes.

`session search` matches a pattern against each part's text (`message_text.part_texts`), which is
what the blob's JSON decodes to. Parsing every line costs far more than scanning bytes, so a blob
is first scanned for literals every match must contain (`required_literals`), and only the lines
holding one are parsed. `RawFilter.lines` is exact in one direction, which is all a caller needs:
every line whose text can match is returned (lines that cannot match may be returned too).

Why a literal found in the text is found in the raw bytes:

- The store's writers escape only `"`, `\\` and control characters (pydantic-core, orjson and the
  stdlib with `ensure_ascii=False`), and a literal holding one is never used. Other writers also
  escape non-ASCII (`\\u00e9`, surrogate pairs), `/` or HTML's `<>&'`, never an ASCII letter, digit
  or other punctuation: for a literal holding one of those, a blob with such an escape (`\\/`, or
  `\\u` of a printable character) is not filtered: every line is returned. Looking for escapes
  costs a pass over the bytes as long as the regex's, so a literal without such characters skips it.
- Text that is not a JSON string (a dict's `key: value` lines, a list joined by newlines, media as
  `[kind: url]`, a number as Python prints it) is made up of raw strings and separators. A literal
  that could span a separator (holding `:`, `[` or `]`, or starting with a space) or lie in a
  reprinted number (made only of `0-9 . + - e`) may be absent from the raw bytes, so for such a
  literal every line with non-string content or arguments is returned as well.
- With `--tool NAME`, a line must also hold the name as a JSON string (`"NAME"`, its `tool_name`),
  when the name is made of characters no writer escapes.
- With `-i` the literal is ASCII with no letter a non-ASCII one folds to (K, S, I: the Kelvin sign,
  long s, dotted I), looked for regardless of case.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import re2

__all__ = ["NEVER_ESCAPED", "RawFilter", "required_literal", "required_literals"]

_META = frozenset(".^$*+?{}[]()|\\")
_OPTIONAL = frozenset("*?{")
_REPEAT = re.compile(r"\{\d*(?:,\d*)?\}")
_UNSAFE = frozenset('"\\') | {chr(c) for c in range(32)}
"""Characters JSON writes escaped: a literal holding one is not searched for in the raw bytes."""
_SPANS = frozenset(":[]")
"""Characters of the separators `_as_text` puts between the raw strings of non-string content
(`key: value`, `[kind: url]`; newlines, the other one, are never in a literal)."""
_NUMERIC = frozenset("0123456789.+-e")
NEVER_ESCAPED = frozenset(chr(c) for c in range(0x20, 0x7F)) - frozenset("/<>&'") - _UNSAFE
"""Characters no JSON writer is known to escape: printable ASCII but `"`, `\\`, `/` and `<>&'`."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.encoding = re2.Options.Encoding.LATIN1  # bytes as bytes: `[^\\]` is any one byte but a backslash
_FOREIGN = re2.compile(rb"(?:^|[^\\])(?:\\\\)*\\(?:/|u[^0]|u0[^0]|u00[^01])", _OPTIONS)
"""An escape our writers never write (`\\/`, or `\\u` of a printable character): preceded by an
even run of backslashes, so it is one."""
_STRUCTURED = re2.compile(rb'"(?:args|content)"\s*:\s*[-0-9\[{]', _OPTIONS)
"""Arguments or content that are not a JSON string (an object, a list, a number)."""


def _class_end(pattern: str, i: int) -> int:
    """Where the character class opening at `pattern[i]` (`[`) ends: the index after its `]`.

    A `]` first in the class (after `[` or `[^`) is a member, as are escapes and `[:name:]`."""
    j = i + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[" and pattern[j + 1 : j + 2] == ":" and (end := pattern.find(":]", j + 2)) != -1:
            j = end + 2
            continue
        if ch == "]":
            return j + 1
        j += 1
    return len(pattern)


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
                i = _class_end(pattern, i)
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


def _top_level_branches(pattern: str) -> list[str] | None:
    """`pattern` split at its top-level `|` (None when it has an inline flag, which may apply to
    every branch, or an unbalanced bracket)."""
    if "(?" in pattern:
        return None
    branches, start, depth, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _class_end(pattern, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*branches, pattern[start:]] if depth == 0 else None


def required_literals(pattern: str) -> tuple[str, ...]:
    """Literals one of which every match of `pattern` contains: one per top-level alternative
    (`error|warn` gives both); () when some alternative has none, so nothing can be skipped."""
    branches = _top_level_branches(pattern)
    if branches is None:
        return ()
    literals = tuple(required_literal(b) for b in branches)
    return () if not all(literals) else tuple(dict.fromkeys(literals))


def _fold(literal: str) -> str:
    """The part of `literal` looked for in lower-cased bytes under `-i`: lower-cased ASCII, cut at
    the letters a non-ASCII one folds to (K: Kelvin sign, S: long s, I: dotted capital I); '' if
    none is left."""
    pieces = re.split(r"[kKsSiI]", literal) if literal.isascii() else []
    return max(pieces, key=len, default="").lower()


def _may_span(literal: str) -> bool:
    """Whether `literal` may be in the text of non-string content but not in its raw bytes: if it
    holds a separator's character (a space only counts first: elsewhere it would follow the `:` of
    `: `), or could lie in a number Python prints otherwise than the writer (`1e+16`, `1e16`)."""
    return bool(set(literal) & _SPANS) or literal.startswith(" ") or set(literal) <= _NUMERIC


class RawFilter:
    """The lines of a blob that may hold a match, found by scanning its raw bytes (see the module)."""

    def __init__(self, literals: tuple[str, ...], *, ignore_case: bool, tool: str | None = None) -> None:
        folded = tuple(_fold(lit) for lit in literals) if ignore_case else literals
        self.literals = () if not all(folded) else tuple(lit.encode() for lit in dict.fromkeys(folded))
        """Byte strings one of which every line that can match holds; () filters nothing."""
        self.ignore_case = ignore_case
        self.structured = any(_may_span(lit) for lit in folded)
        """Whether lines with non-string content or arguments are candidates whatever their bytes."""
        self.escapable = any(not set(lit) <= NEVER_ESCAPED for lit in folded)
        """Whether a literal holds a character some JSON writer escapes (see the module)."""
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1  # byte for byte; `-i` folds ASCII letters (and more)
        options.case_sensitive = not ignore_case
        self._scan = re2.compile(b"|".join(re2.escape(lit) for lit in self.literals) or b"^", options)
        """Any of the literals (RE2 finds a literal in bytes faster than `bytes.find`)."""
        safe_tool = tool is not None and bool(tool) and set(tool) <= NEVER_ESCAPED
        self.tool = b'"' + tool.encode() + b'"' if safe_tool else b""  # type: ignore[union-attr]
        """The tool name as JSON writes it (`--tool`): a line that can match holds it (b'' for any)."""

    @property
    def active(self) -> bool:
        """Whether some line can be skipped unparsed."""
        return bool(self.literals or self.tool)

    @classmethod
    def for_pattern(cls, pattern: str, *, ignore_case: bool, tool: str | None = None) -> RawFilter:
        return cls(required_literals(pattern), ignore_case=ignore_case, tool=tool)

    def lines(self, data: bytes) -> list[bytes] | list[memoryview]:
        """The lines of `data` (a blob: JSONL) that may hold a match, in order, as views of `data`
        (copies when every line is returned); none when no line can."""
        if self.escapable and _FOREIGN.search(data) is not None:
            return [line for line in data.split(b"\n") if line]
        if not self.literals:
            return [line for line in data.split(b"\n") if line and (not self.tool or self.tool in line)]
        spans: dict[int, int] = {}
        found = self._scan.search(data)
        # RE2 skips text without a literal fastest; once one is found, the next is often near
        next_at = data.find if len(self.literals) == 1 and not self.ignore_case else None
        while found is not None:
            start = data.rfind(b"\n", 0, found.start()) + 1
            end = data.find(b"\n", found.end())
            spans[start] = len(data) if end == -1 else end
            if end == -1:
                break
            if next_at is None:
                found = self._scan.search(data, end)
            else:
                at = next_at(self.literals[0], end)
                found = None if at == -1 else _At(at, at + len(self.literals[0]))
        if self.structured:
            for m in _STRUCTURED.finditer(data):
                start = data.rfind(b"\n", 0, m.start()) + 1
                end = data.find(b"\n", m.end())
                spans[start] = len(data) if end == -1 else end
        view, tool = memoryview(data), self.tool
        return [
            view[start : spans[start]]
            for start in sorted(spans)
            if not tool or data.find(tool, start, spans[start]) != -1
        ]


class _At(NamedTuple):
    """Where a literal was found: `start()` and `end()`, as a match reports them."""

    at: int
    stop: int

    def start(self) -> int:
        return self.at

    def end(self) -> int:
        return self.stop
