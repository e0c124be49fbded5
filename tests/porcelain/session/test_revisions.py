"""Revisions (DESIGN §4): NAME, NAME@SEQ, NAME~K, id prefixes, checkpoints/NAME/K; unknown and ambiguous."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.messages import tagged_turn
from sessionstore.errors import UnknownRevision
from sessionstore.plumbing.commits import Commit, make_line
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def commits(store: SessionStore) -> list[Commit]:
    session = store.session("main")
    out = [session.append(tagged_turn(0, i)) for i in range(4)]
    with store.lock("main"):
        out.append(session.commit_checkpoint([ModelRequest(parts=[UserPromptPart("sum")])], tier=2))
    store.session("other").append(tagged_turn(1, 0))
    return out


def test_name_at_and_tilde(store: SessionStore, commits: list[Commit]) -> None:
    assert store.resolve("main") == commits[-1]
    assert store.resolve("main@1") == commits[0]
    assert store.resolve("main@5") == commits[4]
    assert store.resolve("main~1") == store.resolve("main~") == commits[3]
    assert store.resolve("main~4") == commits[0]
    assert store.resolve(" main@2 ") == commits[1]


@pytest.mark.parametrize("rev", ["main@0", "main@6", "main~5"])
def test_out_of_range_names_the_valid_range(store: SessionStore, commits: list[Commit], rev: str) -> None:
    with pytest.raises(UnknownRevision, match=r"commits 1\.\.5"):
        store.resolve(rev)


def test_id_and_prefixes(store: SessionStore, commits: list[Commit]) -> None:
    target = commits[2]
    assert store.resolve(target.id) == target
    assert store.resolve(target.id[:6]) == target
    with pytest.raises(UnknownRevision, match="no session 'abcde'"):
        store.resolve("abcde")  # 5 digits are too few: read as a session name
    with pytest.raises(UnknownRevision, match="no commit id starts with '000000' and no session"):
        store.resolve("0" * 6)


def test_an_ambiguous_prefix_lists_candidates(store: SessionStore) -> None:
    # Two real commits whose ids share 6 hex digits: a birthday search over commit times (~5k hashes).
    seen: dict[str, tuple[bytes, str]] = {}
    for n in range(1_000_000):
        line, body = make_line(
            parent=None, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={},
            time=f"2026-01-01T00:00:00.{n:06d}Z",
        )  # fmt: skip
        if (prefix := body["id"][:6]) in seen:
            break
        seen[prefix] = (line, body["id"])
    for name, (data, _) in (("one", seen[prefix]), ("two", (line, body["id"]))):
        (store.logs_dir / f"{name}.jsonl").write_bytes(data)
    with pytest.raises(UnknownRevision, match="ambiguous") as err:
        store.resolve(prefix)
    message = str(err.value)
    assert seen[prefix][1][:12] in message and body["id"][:12] in message
    assert "(one@1)" in message and "(two@1)" in message and "more digits" in message
    longer = next(k for k in range(6, 64) if body["id"][k] != seen[prefix][1][k]) + 1
    assert store.resolve(body["id"][:longer]).session == "two"


def test_checkpoints(store: SessionStore, commits: list[Commit]) -> None:
    assert store.resolve("checkpoints/main/1") == commits[4]
    assert (
        [i.checkpoints for i in store.infos()]
        == [1, 0]
        == [store.info(n).checkpoints for n in store.sessions()]
    )
    with pytest.raises(UnknownRevision, match=r"checkpoints: checkpoints/main/1"):
        store.resolve("checkpoints/main/2")
    with pytest.raises(UnknownRevision, match="none yet"):
        store.resolve("checkpoints/other/1")


def test_unknown_names_suggest(store: SessionStore, commits: list[Commit]) -> None:
    with pytest.raises(UnknownRevision, match="did you mean 'main'"):
        store.resolve("mian")
    with pytest.raises(UnknownRevision, match="did you mean 'main'"):
        store.resolve("mainn@2")
    with pytest.raises(UnknownRevision, match=r"unknown revision '\.\./main'"):
        store.resolve("../main")
    store.session("fresh")
    with pytest.raises(UnknownRevision):
        store.resolve("fresh")


def test_a_session_name_that_looks_like_hex_wins(store: SessionStore) -> None:
    commit = store.session("abcdef").append(tagged_turn(0, 0))
    assert store.resolve("abcdef") == commit


@pytest.mark.parametrize("rev", [None, 12, b"s@1"])
def test_a_revision_that_is_not_a_string_is_refused(store: SessionStore, rev: object) -> None:
    with pytest.raises(UnknownRevision, match=f"a revision is a string .*, not {type(rev).__name__}"):
        store.resolve(rev)  # type: ignore[arg-type]


@pytest.mark.parametrize("form", ["main@{}", "main~{}", "checkpoints/main/{}"])
def test_huge_numbers_are_one_line_errors_not_tracebacks(
    store: SessionStore, commits: list[Commit], form: str
) -> None:
    rev = form.format("9" * 4_301)  # int() refuses more than 4,300 digits with a ValueError
    with pytest.raises(UnknownRevision, match="has a 4301-digit number") as err:
        store.resolve(rev)
    assert "\n" not in str(err.value) and len(str(err.value)) < 200
    assert store.resolve(form.format("1")).kind in ("turn", "compaction")


@pytest.mark.parametrize("rev", ["main@\u0661", "main~\u0661", "checkpoints/main/\u0661", "main@\uff11"])
def test_only_ascii_digits_count(store: SessionStore, commits: list[Commit], rev: str) -> None:
    with pytest.raises(UnknownRevision, match="unknown revision") as err:
        store.resolve(rev)  # Arabic-Indic or fullwidth one is not 1
    assert "\n" not in str(err.value)


def test_a_commit_two_sessions_hold_resolves_in_the_session_named(
    store: SessionStore, commits: list[Commit]
) -> None:
    # the same log under another name: what importing one transcript twice, or a diverged pull, makes
    (store.logs_dir / "copy.jsonl").write_bytes((store.logs_dir / "main.jsonl").read_bytes())
    assert store.resolve("copy@2").session == "copy" and store.resolve("main@2").session == "main"
    assert store.resolve("copy@2").id == commits[1].id
    for rev in (commits[1].id, commits[1].id[:7]):
        with pytest.raises(UnknownRevision, match=r"is in 2 sessions \(copy@2, main@2\): name the one"):
            store.resolve(rev)
        assert store.resolve(rev, within="copy").session == "copy"
    with pytest.raises(UnknownRevision, match="is in 2 sessions"):
        store.resolve(commits[1].id, within="other")  # not other's: every session is searched
    assert store.session("copy").checkout(commits[1].id[:7]).target == commits[1].id
    assert store.fork(store.resolve("copy@1"), "spike").log()[0].extra["from"] == "copy"
