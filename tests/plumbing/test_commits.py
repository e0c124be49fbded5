"""Commit lines: canonical JSON whose id verifies, read back exactly, and refused when a byte moves."""

from __future__ import annotations

import hashlib
from dataclasses import fields

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.plumbing.commits import CORE_FIELDS, Commit, canonical, from_body, make_line, parse_line

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
EXTRA = st.dictionaries(
    st.text(min_size=1, max_size=10).filter(lambda k: k not in {*CORE_FIELDS, "id", "session"}), JSON
)


@pytest.mark.parametrize("name", ["seq", "id", "session"])
def test_extra_fields_may_not_shadow_core_fields_or_the_session_name(name: str) -> None:
    # `session` is what `to_json` names the log with; found by the hypothesis test below.
    with pytest.raises(ValueError, match="shadow"):
        make_line(parent=None, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={name: 9})


def test_a_line_from_elsewhere_with_a_session_field_still_names_its_own_log_in_json() -> None:
    body = {"parent": None, "seq": 1, "kind": "turn", "blob": None, "count": 0, "tokens": 0, "usage": None,
            "time": "2026-12-01T00:00:00Z", "session": "theirs"}  # fmt: skip
    line = canonical({**body, "id": hashlib.sha256(canonical(body)).hexdigest()})
    commit = parse_line(line, "ours", 0)
    assert commit is not None and commit.extra == {"session": "theirs"}
    assert commit.to_json()["session"] == "ours"


@settings(max_examples=100, deadline=None)
@given(extra=EXTRA, count=st.integers(0, 10**6), tokens=st.integers(0, 10**9))
def test_a_line_reads_back_as_the_commit_it_was_built_from(extra: dict, count: int, tokens: int) -> None:
    line, body = make_line(
        parent=None, kind="turn", blob=None, count=count, tokens=tokens, usage=None, extra=extra
    )
    assert line.endswith(b"\n") and b"\n" not in line[:-1]  # one line, whatever the extra fields hold
    commit = parse_line(line[:-1], "s", 0)
    assert commit is not None and commit == from_body(body, session="s", offset=0, size=len(line))
    made = Commit(**{f.name: getattr(commit, f.name) for f in fields(Commit)})  # through `__init__`
    assert (
        commit == made and commit.__dict__ == made.__dict__ and list(commit.__dict__) == list(made.__dict__)
    )
    rest = {k: v for k, v in body.items() if k != "id"}
    assert commit.id == hashlib.sha256(canonical(rest)).hexdigest() == body["id"]
    assert (commit.count, commit.tokens, commit.extra) == (count, tokens, orjson.loads(orjson.dumps(extra)))
    assert commit.to_json() == {**body, "session": "s"}
    child, _ = make_line(parent=commit, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
    assert parse_line(child[:-1], "s", len(line)).parent == commit.id  # a chain, like git's


@settings(max_examples=60, deadline=None)
@given(at=st.integers(0, 10_000), bit=st.sampled_from([0x01, 0x20, 0x80]))
def test_a_flipped_byte_anywhere_in_a_line_is_refused(at: int, bit: int) -> None:
    line, _ = make_line(
        parent=None, kind="turn", blob="ab" * 32, count=2, tokens=40, usage={"input_tokens": 9},
        extra={"sizes": [20, 20], "model": "openai:gpt-5"},
    )  # fmt: skip
    damaged = bytearray(line[:-1])
    damaged[at % len(damaged)] ^= bit
    assert parse_line(bytes(damaged), "s", 0) is None  # never taken for a commit


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 50), st.lists(st.integers(0, 9), max_size=4), st.booleans(), st.integers(-2, 2))
def test_count_after_replays_what_the_named_blobs_add(
    before: int, lines: list[int], reset: bool, off: int
) -> None:
    """A turn adds its blob's messages to the count before it; a reset point's blobs are the whole
    history. The line agrees only when its `count` and `sizes` say exactly that (fsck and pull)."""
    blobs = [f"{i:064x}" for i in range(len(lines))]
    added = sum(lines) if reset else (lines[0] if lines else 0)
    expect = added if reset else before + added
    extra = {"blobs": blobs, "sizes": [1] * expect} if reset else {"sizes": [1] * added}
    blob = None if reset or not lines else blobs[0]
    _, body = make_line(parent=None, kind="checkout" if reset else "turn", blob=blob, count=expect + off,
                        tokens=0, usage=None, extra=extra)  # fmt: skip
    commit = from_body(body, session="s", offset=0, size=1)
    assert commit.named_blobs == (blobs if reset else [blob] if blob else [])
    assert commit.count_after(before, added) == (expect, off == 0)
