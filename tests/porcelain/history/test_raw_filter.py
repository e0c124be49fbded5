"""The raw-byte filter of `session search` against an oracle that parses every line (issue 30).

`search_blob` scans raw bytes first and parses only the lines that may match; the oracle here is
the search as it was before any filter: every line parsed, every part's text matched with the user
regex as RE2's `str` wrapper reports it. They must agree on every query and every message: text
with escapes, unicode, matches spanning JSON syntax (a dict's `key: value`, lists, numbers), case,
and blobs from writers that escape more than ours.
"""

from __future__ import annotations

import json
import re

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.porcelain.history.raw_filter import RawFilter, required_literal, required_literals
from sessionstore.porcelain.history.search import CONTEXT_CHARS, Query, search_blob
from sessionstore.porcelain.history.user_regex import compile_user_regex
from sessionstore.porcelain.session.message_text import part_texts

_ALPHABET = 'aAbkKſs S:[]{},"\\\n\t/<&é€😀\u2028\x1b0123456789.+-ep'
_TEXT = st.text(alphabet=_ALPHABET, max_size=30) | st.text(alphabet=_ALPHABET, min_size=60, max_size=160)
_VALUE = st.recursive(
    _TEXT | st.integers(-(10**20), 10**20) | st.sampled_from([1e16, 1e-5, 0.5, -2.0, True, None]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_TOOL = st.sampled_from(["read", "bash"])
_REQUEST_PART = st.one_of(
    st.builds(UserPromptPart, _TEXT),
    st.builds(UserPromptPart, st.lists(_TEXT, min_size=1, max_size=3)),
    st.builds(ToolReturnPart, _TOOL, _VALUE),
)
_RESPONSE_PART = st.one_of(
    st.builds(TextPart, _TEXT),
    st.builds(ToolCallPart, _TOOL, st.dictionaries(_TEXT, _VALUE, max_size=3) | _TEXT),
)
_MESSAGES = st.lists(
    st.one_of(
        st.builds(
            ModelRequest, st.lists(_REQUEST_PART, min_size=1, max_size=3), instructions=st.none() | _TEXT
        ),
        st.builds(ModelResponse, st.lists(_RESPONSE_PART, min_size=1, max_size=3)),
    ),
    min_size=1,
    max_size=4,
)
_TOKENS = st.sampled_from(
    [
        "a",
        "A",
        "k",
        "s",
        "S",
        ":",
        "\\[",
        "[ab]",
        "[[:alpha:]]",
        "é",
        "😀",
        "€",
        "e",
        "1",
        "\\+",
        "-",
        "0",
        "\\.",
        ".",
        "a?",
        "b+",
        "(a|b)",
        "|",
        "\\w",
        '"',
        "\\\\",
        "/",
        "<",
        "&",
        "null",
        "true",
        "\\{",
        "\\}",
        ",",
        " ",
        ": ",
        "p: ",
        "\n",
    ]
)


def _oracle_snippet(text: str, start: int, end: int) -> tuple[str, str, str]:
    flat = str.maketrans({"\n": " ", "\r": " ", "\t": " "})
    lead = "…" if start > CONTEXT_CHARS else ""
    tail = "…" if end + CONTEXT_CHARS < len(text) else ""
    before = text[max(0, start - CONTEXT_CHARS) : start]
    after = text[end : end + CONTEXT_CHARS]
    return lead + before.translate(flat), text[start:end].translate(flat), after.translate(flat) + tail


def _oracle(blob: bytes, pattern: str, ignore_case: bool, tool: str | None) -> list[tuple[str, ...]]:
    compiled = compile_user_regex(pattern, ignore_case=ignore_case)
    found = []
    for line in blob.split(b"\n"):
        if not line:
            continue
        for part in part_texts(orjson.loads(line)):
            if tool is not None and part.tool != tool:
                continue
            if (m := compiled.search(part.text)) is not None:
                found.append((part.kind, *_oracle_snippet(part.text, *m.span())))
    return found


def _foreign(blob: bytes, *, html: bool) -> bytes:
    """The same messages as another writer stores them: the stdlib's `ensure_ascii` escapes and
    spaces after separators, with `html` also `\\/` and HTML-safe `\\u003c` and the like."""
    out = []
    for line in blob.split(b"\n")[:-1]:
        text = json.dumps(orjson.loads(line))
        if html:  # these characters only ever occur inside strings
            text = text.replace("/", "\\/").replace("<", "\\u003c").replace("&", "\\u0026")
        out.append(text.encode() + b"\n")
    return b"".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=_MESSAGES,
    pattern=st.lists(_TOKENS, min_size=1, max_size=4).map("".join),
    ignore_case=st.booleans(),
    tool=st.sampled_from([None, "read"]),
    writer=st.sampled_from(["ours", "stdlib", "html"]),
)
def test_the_fast_path_finds_exactly_what_parsing_everything_finds(
    messages: list, pattern: str, ignore_case: bool, tool: str | None, writer: str
) -> None:
    try:
        query = Query.compile(pattern, ignore_case=ignore_case, tool=tool)
    except SessionStoreError:
        assume(False)
    blob = codec.encode(messages)
    if writer != "ours":
        blob = _foreign(blob, html=writer == "html")
    fast = [(f.part.kind, f.before, f.match, f.after) for f in search_blob(blob, query)]
    assert fast == _oracle(blob, pattern, ignore_case, tool)


def test_a_match_across_a_dicts_key_and_value_is_found() -> None:
    """`path: src` is the text of {"path": "src/a.py"} but not in its raw JSON: before issue 30's
    change the raw-byte literal check skipped that line (and a reprinted float, 1e+16)."""
    blob = codec.encode([ModelResponse(parts=[ToolCallPart("read", {"path": "src/a.py", "n": 1e16})])])
    assert [f.match for f in search_blob(blob, Query.compile("path: src"))] == ["path: src"]
    assert [f.match for f in search_blob(blob, Query.compile("n: 1e"))] == ["n: 1e"]


def test_text_another_writer_escaped_is_found() -> None:
    message = {"parts": [{"part_kind": "text", "content": "caf\u00e9 <b> a/b"}], "kind": "response"}
    blob = _foreign(orjson.dumps(message) + b"\n", html=True)
    assert b"\\u00e9" in blob and b"\\/" in blob
    for pattern in ("café", "<b>", "a/b", "caf"):
        assert [f.match for f in search_blob(blob, Query.compile(pattern))] == [pattern]


def test_only_lines_holding_a_literal_are_returned() -> None:
    blob = b'{"a":"x error y"}\n{"a":"nothing"}\n{"a":"warn"}\n{"args":{"k":"v"}}\n'
    assert RawFilter(("error", "warn"), ignore_case=False).lines(blob) == [
        b'{"a":"x error y"}',
        b'{"a":"warn"}',
    ]
    # a literal that may span `key: value` separators keeps every line with non-string arguments
    assert RawFilter(("k: v",), ignore_case=False).lines(blob) == [b'{"args":{"k":"v"}}']
    assert RawFilter(("ERROR",), ignore_case=True).lines(blob) == [b'{"a":"x error y"}']
    assert RawFilter(("absent",), ignore_case=False).lines(blob) == []
    assert len(RawFilter((), ignore_case=False).lines(blob)) == 4  # no literal: every line


def test_required_literals_of_alternatives() -> None:
    assert required_literals("error|warn(ing)?") == ("error", "warn")
    assert required_literals("error|[ab]") == ()  # an alternative with no literal: no filter
    assert required_literals("(error|warn)") == ()  # inside a group: not split
    assert required_literals("(?i)error|warn") == ()  # an inline flag
    assert required_literals("x[|]|y") == ()  # a `|` anywhere in an alternative: none (conservative)
    assert required_literals("x[ab]|y") == ("x", "y")
    assert required_literal("[[:alpha:]x]") == ""  # `[:alpha:]` does not end the class
    assert required_literal("[]a]bc") == "bc"
    assert re.compile("[]a]bc").search("abc")


def test_a_tool_filter_skips_lines_without_the_tool_name() -> None:
    blob = b'{"parts":[{"tool_name":"read","content":"x"}]}\n{"parts":[{"tool_name":"bash","content":"x"}]}\n'
    assert RawFilter(("x",), ignore_case=False, tool="bash").lines(blob) == [blob.split(b"\n")[1]]
    assert RawFilter((), ignore_case=False, tool="read").lines(blob) == [blob.split(b"\n")[0]]
    assert not RawFilter((), ignore_case=False, tool="a/b").active  # `/` may be escaped: no filter
