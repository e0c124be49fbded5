"""`session list PATTERN --sort --since` and `--last` for chat, show and log (cli/list_filters.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.cli import assert_refused, run
from helpers.messages import tagged_turn
from sessionstore.cli.list_filters import SORTS, Selection, since_us
from sessionstore.cli.output import epoch_us
from sessionstore.errors import SessionStoreError
from sessionstore.porcelain.store import SessionStore

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Four sessions of different ages and sizes: `fix-auth` (newest), `fix-db`, `spike`, `old-notes`."""
    root = tmp_path / "store"
    store = SessionStore.open(root)
    for name, day, turns in (("old-notes", 1, 1), ("spike", 10, 6), ("fix-db", 20, 2), ("fix-auth", 28, 3)):
        session = store.session(name)
        with store.lock(name):
            for i in range(turns):
                session.commit_turn(tagged_turn(0, i, size=2 + 10 * i), time=f"2026-11-{day:02d}T10:00:0{i}Z")
    return root


def _names(root: Path, *args: str) -> list[str]:
    result = run(root, "list", *args)
    assert result.exit_code == 0, result.stderr
    return [line.split()[0] for line in result.stdout.splitlines()]


def test_list_sorts_filters_by_glob_and_by_age(root: Path) -> None:
    # issue 28, item 12: `session list` could neither sort nor filter.
    assert _names(root) == ["fix-auth", "fix-db", "old-notes", "spike"]
    assert _names(root, "--sort", "time") == ["fix-auth", "fix-db", "spike", "old-notes"]
    assert _names(root, "--sort", "tokens") == ["spike", "fix-auth", "fix-db", "old-notes"]
    assert _names(root, "fix-*") == ["fix-auth", "fix-db"]
    assert _names(root, "fix-*", "--sort", "time", "--since", "2026-11-25") == ["fix-auth"]
    assert _names(root, "--since", "2026-11-05T00:00:00+00:00", "--sort", "time") == [
        "fix-auth",
        "fix-db",
        "spike",
    ]
    records = orjson.loads(run(root, "list", "--sort", "time", "--json").stdout)
    assert [r["name"] for r in records] == ["fix-auth", "fix-db", "spike", "old-notes"]
    nothing = run(root, "list", "nope-*")
    assert nothing.exit_code == 0 and nothing.stdout == "" and "no session matches" in nothing.stderr


def test_refused_sorts_and_ages_name_the_fix(root: Path) -> None:
    bad = run(root, "list", "--sort", "size")  # click's usage error (one line through `main`)
    assert bad.exit_code == 2 and "'size' is not one of 'name', 'time', 'tokens'" in bad.stderr
    assert_refused(run(root, "list", "--since", "yesterday"), "--since 'yesterday'", "3d", "2026-03-01")


def test_last_is_the_session_with_the_newest_head(root: Path) -> None:
    log = run(root, "log", "--last", "--oneline")
    assert log.exit_code == 0 and len(log.stdout.splitlines()) == 3  # fix-auth's three turns
    show = run(root, "show", "--last")
    assert show.exit_code == 0 and show.stdout.split()[1] == "fix-auth@3"
    store = SessionStore.open(root, create=False)
    store.session("spike").append(tagged_turn(1, 0))  # now: spike's head is the newest
    assert run(root, "show", "--last").stdout.split()[1] == "spike@7"
    for args, says in ((["log"], "Missing argument 'NAME' (or"), (["show", "x", "--last"], "not both")):
        refused = run(root, *args)  # click's usage error (one line through `main`: test_cli_main.py)
        assert refused.exit_code == 2 and says in refused.stderr


def test_since_reads_ages_and_dates() -> None:
    assert since_us("2h", NOW) == epoch_us("2026-12-02T10:00:00Z")
    assert since_us("3d", NOW) == since_us("72h", NOW) == epoch_us("2026-11-29T12:00:00Z")
    assert since_us("1w", NOW) == epoch_us("2026-11-25T12:00:00Z")
    assert since_us("2026-11-05T08:00:00+00:00") == epoch_us("2026-11-05T08:00:00Z")
    with pytest.raises(SessionStoreError, match="neither an age nor a date"):
        since_us("soon")


WHEN = st.dictionaries(st.sampled_from("abcdefgh"), st.one_of(st.none(), st.integers(0, 10**6)), min_size=1)


@given(
    WHEN,
    st.sampled_from(SORTS),
    st.one_of(st.none(), st.integers(0, 10**6)),
    st.sampled_from([None, "*", "[a-d]*", "x"]),
)
def test_a_selection_keeps_exactly_what_matches_in_its_order(when, sort, since, pattern) -> None:
    names = sorted(when)
    tokens = {n: (ord(n) * 7919) % 101 for n in names}
    picked = [names[i] for i in Selection(pattern, since, sort).order(names, when, tokens)]

    def recent(n: str) -> bool:
        return since is None or (when[n] is not None and when[n] >= since)

    expected = {n for n in names if (pattern is None or fnmatchcase(n, pattern)) and recent(n)}
    assert set(picked) == expected and len(picked) == len(expected)
    keys = {
        "name": lambda n: n,
        "time": lambda n: -(when[n] if when[n] is not None else -1),
        "tokens": lambda n: -tokens[n],
    }
    assert [keys[sort](n) for n in picked] == sorted(keys[sort](n) for n in picked)
