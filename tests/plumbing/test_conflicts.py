"""Splitting git's conflict markers back into the two sides (pure bytes; the git run is in porcelain)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.plumbing.conflicts import UnresolvableConflict, has_conflict, split_conflict

LINE = (
    st.binary(min_size=1, max_size=20)
    .filter(lambda b: b"\n" not in b and b"\r" not in b)
    .map(lambda b: b"{" + b + b"}\n")
)


@given(st.lists(LINE, max_size=5), st.lists(LINE, max_size=5), st.lists(LINE, max_size=5), st.booleans())
def test_each_side_comes_back_exactly(
    common: list[bytes], ours: list[bytes], theirs: list[bytes], diff3: bool
) -> None:
    base = b"||||||| base\n{only in the base}\n" if diff3 else b""
    merged = b"".join([*common, b"<<<<<<< HEAD\n", *ours, base, b"=======\n", *theirs, b">>>>>>> other\n"])
    assert has_conflict(merged)
    assert split_conflict(merged) == (b"".join(common + ours), b"".join(common + theirs))


def test_no_markers_is_both_sides_whole() -> None:
    assert split_conflict(b"{a}\n{b}\n") == (b"{a}\n{b}\n", b"{a}\n{b}\n")
    assert not has_conflict(b"{a}\n{b}\n")


@pytest.mark.parametrize(
    "text",
    [
        b"=======\n",
        b"<<<<<<< HEAD\n{a}\n",
        b">>>>>>> x\n",
        b"<<<<<<< HEAD\n<<<<<<< HEAD\n=======\n>>>>>>> x\n",
    ],
)
def test_unbalanced_markers_are_refused_with_the_line(text: bytes) -> None:
    with pytest.raises(UnresolvableConflict):
        split_conflict(text)
