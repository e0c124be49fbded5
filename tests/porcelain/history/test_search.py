"""porcelain/history/search.py: regex search over stored blobs (text, tool arguments, tool output),
without pydantic-ai."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.errors import CorruptObjectError, SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.porcelain.history.search import Query, part_texts, search, search_blob
from sessionstore.porcelain.store import SessionStore


def _turn(i: int, secret: str = "") -> list:
    return [
        ModelRequest(parts=[UserPromptPart(f"request {i}: fix the expired-token path {secret}")]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": f"src/auth_{i}.py"}, tool_call_id=f"c{i}")]),
        ModelRequest(
            parts=[ToolReturnPart("read_file", f"def verify_{i}(): raise Expired", tool_call_id=f"c{i}")]
        ),
        ModelResponse(parts=[TextPart(f"answer {i}")]),
    ]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store")
    session = store.session("fix-auth")
    for i in range(1, 4):
        session.append(_turn(i), compact=False)
    summary = [ModelRequest(parts=[UserPromptPart("# Conversation summary\n## Goal\nauth")])]
    with store.lock("fix-auth"):
        session.commit_checkpoint(summary, tier=2)
    session.append(_turn(4), compact=False)
    store.session("other").append(_turn(9, "needle"), compact=False)
    return store


def _hits(store: SessionStore, pattern: str, names=None, **kw) -> list:  # type: ignore[no-untyped-def]
    filters = {k: kw.pop(k) for k in ("role", "tool", "ignore_case") if k in kw}
    return list(search(store, Query.compile(pattern, **filters), names, **kw))


def test_text_tool_arguments_and_tool_output_are_searched(store: SessionStore) -> None:
    (user,) = _hits(store, r"request 4")
    assert (user.session, user.seq, user.role, user.match) == ("fix-auth", 5, "user", "request 4")
    (call,) = _hits(store, r"auth_4\.py")
    assert (call.role, call.kind, call.tool) == ("assistant", "tool-call", "read_file")
    (output,) = _hits(store, r"verify_\d", ["fix-auth"])
    assert (output.role, output.tool, output.match) == ("tool", "read_file", "verify_4")
    assert output.before.endswith("def ") and output.after.startswith("(): raise")


def test_default_is_the_current_state_and_all_history_finds_what_compaction_replaced(
    store: SessionStore,
) -> None:
    assert _hits(store, "request 1") == []  # replaced by the summary
    (old,) = _hits(store, "request 1", all_history=True)
    assert (old.session, old.seq) == ("fix-auth", 1)
    assert [h.seq for h in _hits(store, "Conversation summary")] == [4]  # the compaction stored it
    assert len(_hits(store, r"request \d", ["fix-auth"], all_history=True)) == 4


def test_after_a_checkout_the_current_state_is_what_the_one_log_read_replays(store: SessionStore) -> None:
    session = store.session("fix-auth")
    session.checkout(session.log()[-3])  # back past the compaction: turns 1 to 3, no summary
    assert [h.match for h in _hits(store, r"request \d", ["fix-auth"])] == [
        "request 1",
        "request 2",
        "request 3",
    ]
    assert _hits(store, "Conversation summary") == []
    assert len(_hits(store, r"request \d", ["fix-auth"], all_history=True)) == 4


def test_only_the_parts_that_hold_the_literal_are_matched_on_a_candidate_line(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "store")
    two = ModelResponse(parts=[TextPart("no such word here"), TextPart("the expired token again")])
    store.session("s").append([two], compact=False)
    (hit,) = _hits(store, r"expired \w+")
    assert (hit.match, hit.before) == ("expired token", "the ")
    assert _hits(store, r"EXPIRED", ignore_case=True)[0].match == "expired"


def test_filters_by_session_role_and_tool(store: SessionStore) -> None:
    assert [h.session for h in _hits(store, "needle")] == ["other"]
    assert _hits(store, "needle", ["fix-auth"]) == []
    assert {h.role for h in _hits(store, "4", role="tool")} == {"tool"}
    assert {h.tool for h in _hits(store, ".", tool="read_file")} == {"read_file"}
    assert _hits(store, "REQUEST 4") == [] and len(_hits(store, "REQUEST 4", ignore_case=True)) == 1


def test_bad_patterns_and_roles_are_refused_in_one_line() -> None:
    with pytest.raises(SessionStoreError, match=r"invalid pattern '\(': .*escape"):
        Query.compile("(")
    with pytest.raises(SessionStoreError, match="unknown role 'bot'"):
        Query.compile("x", role="bot")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(min_size=1, max_size=40), args=st.dictionaries(st.text(max_size=8), st.text(max_size=20)))
def test_any_text_a_message_holds_is_found_by_its_literal_pattern(text: str, args: dict[str, str]) -> None:
    """Escaping in the stored JSON (quotes, newlines, unicode) never hides a match."""
    messages = [
        ModelRequest(parts=[UserPromptPart(text)]),
        ModelResponse(parts=[ToolCallPart("tool", args, tool_call_id="c")]),
        ModelRequest(parts=[ToolReturnPart("tool", {"out": text}, tool_call_id="c")]),
    ]
    blob = codec.encode(messages)
    found = [(f.part.kind, f.match) for f in search_blob(blob, Query.compile(re.escape(text)))]
    flat = text.translate(str.maketrans("\n\r\t", "   "))  # as a hit shows it
    assert ("user-prompt", flat) in found
    assert any(kind == "tool-return" for kind, _ in found)
    for value in args.values():
        if value:
            hits = search_blob(blob, Query.compile(re.escape(value)))
            assert any(f.part.kind == "tool-call" for f in hits)


def test_part_texts_covers_a_part_kind_it_does_not_know() -> None:
    message = {"kind": "response", "parts": [{"part_kind": "future-part", "content": "later"}]}
    (part,) = part_texts(message)
    assert (part.role, part.kind, part.text) == ("assistant", "future-part", "later")


def test_search_never_imports_pydantic_ai(store: SessionStore) -> None:
    probe = (
        "import sys\n"
        "from sessionstore.porcelain.store import SessionStore\n"
        "from sessionstore.porcelain.history.search import Query, search\n"
        f"hits = list(search(SessionStore.open({str(store.root)!r}, warm=False), Query.compile('needle')))\n"
        "assert len(hits) == 1, hits\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic_ai', 'pydantic'))\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


_TOKENS = st.sampled_from(
    ["a", "b", "k", "S", " ", ".", "a?", "b+", "\\.", "[ab]", "(a|b)", "\\w", "é", '"', "\n"]
)


@settings(max_examples=150, deadline=None)
@given(
    pattern=st.lists(_TOKENS, min_size=1, max_size=5).map("".join),
    text=st.text(alphabet='abkKSsſ .é"\n\\', max_size=30),
    ignore_case=st.booleans(),
)
def test_the_raw_byte_prefilter_never_hides_a_match(pattern: str, text: str, ignore_case: bool) -> None:
    """The literal looked for in the raw JSON is necessary: searching with it finds exactly what
    searching every parsed line finds."""
    blob = codec.encode([ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(text)])])
    query = Query.compile(pattern, ignore_case=ignore_case)
    unfiltered = dataclasses.replace(query, raw=None, plain=None)
    found = search_blob(blob, query)
    assert found == search_blob(blob, unfiltered)
    assert bool(found) == bool(query.pattern.search(text))


def test_required_literals_are_conservative() -> None:
    from sessionstore.porcelain.history.raw_filter import required_literal

    cases = {"error": "error", r"def \w+\(": "def ", "colou?r": "colo", "a|b": "", r"x\(y": "x(y", 'a"b': ""}
    cases |= {"abc+de": "abc", r"x\(+yz": "x(", "a+bcd": "bcd"}  # a `+` ends the run after its one copy
    cases |= {"a{34}!": "!", "ab{2,}cd": "cd", "x{,3}yz": "yz"}  # a repeat's digits are not text
    assert {p: required_literal(p) for p in cases} == cases
    assert Query.compile("Kiss", ignore_case=True).raw is None  # K, i, s fold to non-ASCII letters


def test_a_damaged_blob_with_a_hit_is_reported_and_one_without_is_not_verified(store: SessionStore) -> None:
    """Only what is reported is verified: a blob whose text would be shown raises as `read` words it;
    a blob with no hit is skipped unverified (`session fsck` checks every blob)."""
    head = store.log("other").head()
    assert head is not None and head.blob is not None
    path = store.objects.path(head.blob)
    good = path.read_bytes()
    at = good.index(b"fix the")
    path.chmod(0o644)
    path.write_bytes(good[:at] + b"fox" + good[at + 3 :])  # still text, still JSON, the same size
    with pytest.raises(CorruptObjectError) as read:
        store.objects.read(head.blob)
    for pattern in ("needle", "fox the", "fix the"):  # the last hits the healthy fix-auth blobs only
        if pattern == "fix the":
            assert {h.session for h in _hits(store, pattern)} == {"fix-auth"}
            continue
        with pytest.raises(CorruptObjectError) as searched:
            _hits(store, pattern)
        assert str(searched.value) == str(read.value)
    assert _hits(store, "no such text anywhere") == []
    path.write_bytes(good)
    assert [h.session for h in _hits(store, "needle")] == ["other"]


def test_a_missing_blob_is_reported(store: SessionStore) -> None:
    head = store.log("other").head()
    assert head is not None and head.blob is not None
    store.objects.path(head.blob).unlink()
    with pytest.raises(CorruptObjectError, match="missing"):
        _hits(store, "no such text anywhere")


def test_a_search_that_stops_early_never_meets_a_damaged_log_it_did_not_reach(store: SessionStore) -> None:
    """The next session's log and blobs are read ahead, but a damaged log is raised only in its turn."""
    log = store.root / "logs" / "other.jsonl"
    log.chmod(0o644)
    log.write_bytes(b"not a log\n")
    (first,) = islice(search(store, Query.compile("request 4"), ["fix-auth", "other"]), 1)
    assert first.session == "fix-auth"
    with pytest.raises(SessionStoreError):
        list(search(store, Query.compile("request 4"), ["fix-auth", "other"]))
