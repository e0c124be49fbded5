"""`session search` and `session diff` through click's runner."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from helpers.cli import EXAMPLE, EXAMPLE_MESSAGES, EXAMPLE_TURNS, assert_refused, run, snapshot


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    run(root, "init")
    assert run(root, "import", str(EXAMPLE)).exit_code == 0
    assert run(root, "compact", "fix-auth").exit_code == 0  # fix-auth@15: a checkpoint
    return root


def test_search_prints_rev_role_and_the_match(root: Path) -> None:
    result = run(root, "search", r"leeway", "--role", "user", "--all-history")  # the prompts before it
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("fix-auth@") and " user: " in line for line in lines)
    assert "\x1b[" not in result.stdout  # not a terminal: no colour


def test_search_json_is_one_array_and_jsonl_streams(root: Path) -> None:
    hits = orjson.loads(run(root, "search", "verify_token", "--all-history", "--json").stdout)
    assert hits and {h["rev"] for h in hits} >= {"fix-auth@1"}
    assert set(hits[0]) == {
        "session",
        "seq",
        "rev",
        "commit",
        "role",
        "kind",
        "tool",
        "before",
        "match",
        "after",
    }
    lines = run(root, "search", "verify_token", "--all-history", "--jsonl", "-n", "2").stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == hits[:2]


def test_search_tool_filter_and_no_match_exit_1(root: Path) -> None:
    hits = orjson.loads(run(root, "search", ".", "--tool", "read_file", "--all-history", "--json").stdout)
    assert hits and {h["tool"] for h in hits} == {"read_file"}
    result = run(root, "search", "no such text anywhere")
    assert result.exit_code == 1 and result.stdout == "" and result.stderr == ""


def test_search_refusals_are_one_line(root: Path) -> None:
    assert_refused(run(root, "search", "("), "invalid pattern", "escape")
    assert_refused(run(root, "search", "x", "fix-atuh"), "no session 'fix-atuh'", "did you mean 'fix-auth'")


def test_diff_of_a_compaction_shows_what_the_summary_replaced(root: Path) -> None:
    result = run(root, "diff", "fix-auth~1", "fix-auth")
    assert result.exit_code == 0, result.output
    text = result.stdout
    head, compaction = EXAMPLE_TURNS, EXAMPLE_TURNS + 1
    replaced = EXAMPLE_MESSAGES - 4  # all but the newest turn's 4 messages, kept verbatim
    assert text.startswith(f"fix-auth@{head} (") and f" -> fix-auth@{compaction} (" in text.splitlines()[0]
    assert f"compaction tier 2 at fix-auth@{compaction} [checkpoints/fix-auth/1]" in text
    assert f"replaced {replaced} messages (" in text and "kept 4 verbatim" in text
    assert "# Conversation summary" in text and "\n- user " in text and "\n+ " in text
    document = orjson.loads(run(root, "diff", "fix-auth~1", "fix-auth", "--json").stdout)
    assert document["compactions"][0]["replaced_messages"] == replaced
    assert len(document["removed"]) == replaced and document["to"]["rev"] == f"fix-auth@{compaction}"


def test_diff_refuses_unknown_revisions_and_changes_nothing(root: Path) -> None:
    before = snapshot(root)
    assert_refused(run(root, "diff", "fix-auth@99", "fix-auth"), "outside session 'fix-auth'")
    assert snapshot(root) == before


def test_search_refuses_a_backreference_naming_it_and_runs_it_with_pcre(root: Path) -> None:
    assert_refused(run(root, "search", r"(verify)_\w+\1"), r"a backreference (\1)", "RE2", "--pcre")
    assert_refused(run(root, "search", r"verify(?=_token)"), "lookahead (?=...)", "--pcre")
    found = run(root, "search", r"verify(?=_token)", "--pcre", "--all-history")
    assert found.exit_code == 0 and "verify" in found.stdout, found.output
