"""`## Rules found in files`: lines of what the agent read that are plainly instructions, with their source.

A CONTRIBUTING.md, a runbook, a config comment: rules the user never typed but the agent was bound
by. A line counts when the agent read it (the return of a call that reads a file: record.py), it holds
an instruction word of a registered language as a whole word ("must", "never", "do not", "nunca",
"不要": languages/, found by substring search, so everything read is scanned in linear time), and it
reads as prose: a few words, mostly letters, little code punctuation (an aside's parentheses and a
semicolon between words are prose; a comment's `#`, `//` or `*` and a list marker are taken off
first, and so is a line number a Read tool prefixes). Each line is quoted
as written after those markers, with its file, at most `PER_FILE` per file. In a document or a
configuration file (by its extension), a line opening with an imperative verb counts too ("- Keep
pull requests small."). The earliest lines are kept first within the budget, after the lines a
previous summary quoted, so the section is stable across rounds. Text read twice is scanned once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart

from sessionstore.accounting.tokens import count_text
from sessionstore.summary.boilerplate import without_blocks
from sessionstore.summary.languages import imperative_lines, instruction_lines
from sessionstore.summary.record import Call, walk
from sessionstore.summary.text import cut_chars

__all__ = ["HEADING", "PER_FILE", "Scanner", "found", "parse", "render"]

HEADING = "## Rules found in files"
PER_FILE = 6
_PREFIX = re.compile(r"^\s*(?:\d+(?:→|\t|:\s)\s*)?(#+|//+|/\*+|\*+|--+|;+|>+|[-*+•]|\d+[.)])?\s*")
_CODE = frozenset("{}()=;<>[]$|\\")
_AFTER_ASIDE = frozenset(" .,;:!?")
_MAX_CHARS = 400
_DOCUMENTS = (
    ".md",
    ".markdown",
    ".txt",
    ".rst",
    ".adoc",
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".cfg",
    ".conf",
    ".env",
)
"""Files whose lines starting with an imperative verb count too ("- Keep PRs small."): documents and
configuration. In code, such a line is code; its comments count by their instruction words."""
_SOURCE = re.compile(r"^- `([^`]+)`:$")


def _prose(line: str) -> str | None:
    """`line` without its comment, list or line-number marker, when it reads as prose: four words or
    more, mostly letters, at most two code characters, starting with a letter or digit, a capital
    unless it is a comment or list item (a lowercase start is a wrapped line's continuation)."""
    marker = _PREFIX.match(line)
    text = line[marker.end() if marker else 0 :].strip().removesuffix("*/").strip()
    words = text.split()
    if not 4 <= len(words) <= 80 or len(text) > _MAX_CHARS * 2 or not text[0].isalnum():
        return None
    marked = marker is not None and bool(marker.group(1))
    if text[0].islower() and not marked:
        return None
    if _code_chars(text) > 2 or ("`" in text and text.count("`") % 2):
        return None
    if "<" in text and ">" in text:  # markup (a tag, a caption's <v Name>): not prose
        return None
    letters = sum(c.isalpha() or c.isspace() for c in text)
    return cut_chars(text, _MAX_CHARS) if letters >= 0.75 * len(text) else None


def _code_chars(text: str) -> int:
    """How many characters of `text` are code punctuation. Prose uses some of them too, and those do
    not count: an aside's parentheses, opening after a space and closing before a space or a stop
    ("during business hours (09:00-18:00 CET) is not allowed"), and a semicolon between two words
    ("not allowed; fail over"). A call's `f(x)`, a statement's `);`, braces, brackets, `=` and the
    rest always count."""
    if not _CODE.intersection(text):
        return 0
    end = len(text) - 1
    asides = 0  # prose parentheses open
    n = 0
    for i, c in enumerate(text):
        if c not in _CODE:
            continue
        if c == "(" and (i == 0 or text[i - 1] == " ") and i < end and text[i + 1] != " ":
            asides += 1
        elif c == ")" and asides and text[i - 1] != " " and (i == end or text[i + 1] in _AFTER_ASIDE):
            asides -= 1
        elif c == ";" and 0 < i < end and text[i - 1].isalnum() and text[i + 1] == " ":
            pass
        else:
            n += 1
    return n


def _is_document(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(_DOCUMENTS) or "." not in name.lstrip(".")


def _rules(text: str, document: bool) -> list[str]:
    """The instruction lines of one file's text, at most `PER_FILE`: lines with an instruction word
    first, then (in a document) lines opening with an imperative verb; shown in the file's order."""
    lines = instruction_lines(text)
    if document:
        lines += imperative_lines(text)
    chosen: dict[str, str] = {}  # original line -> as quoted
    for line in lines:
        if len(chosen) == PER_FILE:
            break
        if line not in chosen and (quoted := _prose(line)) is not None:
            chosen[line] = quoted
    return [chosen[line] for line in sorted(chosen, key=text.find)]


class Scanner:
    """The instruction lines of the files a history read, built as `record.walk` feeds it (a
    `record.Reader`): each line once, with the first file it was read in, in reading order."""

    def __init__(self) -> None:
        self._reads: dict[str, str] = {}
        self._scanned: dict[str, list[str]] = {}
        self._lines: dict[str, str] = {}

    def response(self, msg: ModelResponse, calls: list[tuple[ToolCallPart, Call]]) -> None:
        for part, call in calls:
            if call.read is not None:
                self._reads[part.tool_call_id] = call.read

    def returned(self, part: ToolReturnPart) -> None:
        if (path := self._reads.get(part.tool_call_id)) is None:
            return
        if part.outcome != "success" or not isinstance(part.content, str):
            return
        if part.content not in self._scanned:
            self._scanned[part.content] = _rules(without_blocks(part.content), _is_document(path))
        for line in self._scanned[part.content]:
            self._lines.setdefault(line, path)

    def found(self) -> list[tuple[str, str]]:
        """(file, line) for each line found so far."""
        return [(path, line) for line, path in self._lines.items()]


def found(messages: Iterable[ModelMessage]) -> list[tuple[str, str]]:
    """(file, line) for each instruction line of each file read in `messages`, in reading order,
    each line once (with the first file it was read in)."""
    scanner = Scanner()
    walk(messages, scanner)
    return scanner.found()


def parse(body: str) -> list[tuple[str, str]]:
    """A previous summary's quoted lines, as (file, line)."""
    out: list[tuple[str, str]] = []
    source = ""
    for line in body.split("\n"):
        if found := _SOURCE.match(line):
            source = found.group(1)
        elif line.startswith("  - ") and source:
            out.append((source, line[4:]))
    return out


def render(previous: list[tuple[str, str]], new: list[tuple[str, str]], budget: int) -> str:
    """The section body: each line once (under the first file it came from), in reading order,
    `previous` first, within `budget` tokens: the earliest kept first, so a later round keeps what an
    earlier one quoted (what was read last is still verbatim in the tail)."""
    first: dict[str, str] = {}
    for path, line in [*previous, *new]:
        first.setdefault(line, path)
    kept: list[tuple[str, str]] = []
    used = 0
    sources: set[str] = set()
    for line, path in first.items():
        need = count_text(line) + 3 + (0 if path in sources else count_text(path) + 4)
        if used + need > budget:
            continue
        kept.append((path, line))
        sources.add(path)
        used += need
    groups: dict[str, list[str]] = {}
    for path, line in kept:
        groups.setdefault(path, []).append(line)
    out = [f"- `{path}`:\n" + "\n".join(f"  - {line}" for line in lines) for path, lines in groups.items()]
    return "\n".join(out) if out else "- none"
