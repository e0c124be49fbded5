"""Session names are checked before any path is built from them (DESIGN §2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.errors import InvalidSessionName
from sessionstore.plumbing.names import check_name, invalid_names, is_valid_name
from sessionstore.porcelain.store import SessionStore

BAD = ["../x", "a/b", ".", "", "..", "x" * 129, "-rf", "a..b", ".hidden", "a b", "a\\b", "é", "a\x00", "_x"]
GOOD = ["a", "fix-auth", "A.b_c-9", "x" * 128, "0"]


@pytest.mark.parametrize("name", BAD)
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidSessionName) as err:
        check_name(name)
    assert repr(name) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", GOOD)
def test_good_names_pass_unchanged(name: str) -> None:
    assert check_name(name) == name


def test_non_strings_are_refused() -> None:
    with pytest.raises(InvalidSessionName, match="bytes"):
        check_name(b"abc")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("name", BAD)
def test_every_entry_point_refuses_before_touching_disk(store: SessionStore, name: str) -> None:
    before = _tree(store.root.parent)
    for attempt in (
        lambda: store.session(name),
        lambda: store.exists(name),
        lambda: store.info(name),
        lambda: store.log(name),
        lambda: store.refs.create(name, 1, "0" * 64, 0),
        lambda: store.lock(name).__enter__(),
    ):
        with pytest.raises(InvalidSessionName):
            attempt()
    assert _tree(store.root.parent) == before


def test_fork_to_a_bad_name_is_refused(store: SessionStore) -> None:
    from helpers.messages import tagged_turn

    store.session("src").append(tagged_turn(0, 0))
    with pytest.raises(InvalidSessionName):
        store.fork("src", "../escape")
    assert store.sessions() == ["src"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=140))
def test_accepted_names_are_single_safe_path_components(name: str) -> None:
    try:
        check_name(name)
    except InvalidSessionName:
        return
    assert "/" not in name and "\\" not in name and ".." not in name and not name.startswith((".", "-"))
    assert 1 <= len(name) <= 128 and name.isascii()


def test_none_is_refused_as_not_a_string() -> None:
    with pytest.raises(InvalidSessionName, match="a session name is a string like 'fix-auth', not NoneType"):
        check_name(None)


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(BAD + GOOD).filter(lambda n: "/" not in n)
        | st.text(st.sampled_from("aZ9._-é \n\x00"), max_size=6),
        max_size=8,
    )
)
def test_invalid_names_are_those_each_check_refuses(names: list[str]) -> None:
    """One match over all the names (as a listing of thousands of logs asks) gives what one check
    per name gives; no name a directory lists holds '/'."""
    assert invalid_names(set(names)) == {n for n in names if not is_valid_name(n)}
