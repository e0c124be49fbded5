"""`session log`, `show`, `checkout` and `fork` through click's runner."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.cli import EXAMPLE, EXAMPLE_TURNS, assert_lock_refused, assert_refused, run, snapshot
from sessionstore.porcelain.store import SessionStore

LONG_RESULT = "\n".join(f"line {i} of the file" for i in range(1, 213))


def _turn(i: int) -> list:
    return [
        ModelRequest(parts=[UserPromptPart(f"step {i}: add a test for the expired-token path")]),
        ModelResponse(
            parts=[
                ThinkingPart(f"think {i}"),
                ToolCallPart("read_file", {"path": "src/auth.py", "limit": 3}, tool_call_id=f"c{i}"),
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", LONG_RESULT, tool_call_id=f"c{i}")]),
        ModelResponse(parts=[TextPart(f"done {i}")]),
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """`fix-auth`: turns 1-3, a tier-2 compaction (checkpoint 1), turn 4; 5 commits."""
    root = tmp_path / "store"
    store = SessionStore.open(root)
    session = store.session("fix-auth")
    for i in range(1, 4):
        session.append(_turn(i))
    summary = [ModelRequest(parts=[UserPromptPart("# Conversation summary\n## Goal\nauth tests")])]
    with store.lock("fix-auth"):
        session.commit_checkpoint(summary, tier=2)
    session.append(_turn(4))
    return root


def _store(root: Path) -> SessionStore:
    return SessionStore.open(root, create=False)


def test_log_oneline_newest_first(root: Path) -> None:
    result = run(root, "log", "fix-auth", "--oneline")
    assert result.exit_code == 0, result.output
    commits = _store(root).session("fix-auth").log()
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [c.id[:7] for c in commits]
    head, compaction, turn3 = lines[0], lines[1], lines[2]
    assert head.split()[1:5] == ["(head)", "turn", "+4", "msgs"]
    assert f"{commits[0].tokens:,} tok" in head
    before, after = commits[2].tokens, commits[1].tokens
    assert f"compaction tier 2  [checkpoints/fix-auth/1]  {before:,} -> {after:,} tok" in compaction
    assert "(head)" not in turn3 and turn3.split()[1:4] == ["turn", "+4", "msgs"]


def test_log_shows_checkout_and_fork_targets(root: Path) -> None:
    store = _store(root)
    target = store.resolve("fix-auth@2")
    store.session("fix-auth").checkout("fix-auth@2")
    store.fork("fix-auth@1", "spike")
    head = run(root, "log", "fix-auth", "--oneline", "-n", "1").stdout.split()
    assert head[:6] == [head[0], "(head)", "checkout", "->", "fix-auth@2", f"({target.id[:7]})"]
    fork = run(root, "log", "spike", "--oneline").stdout
    assert f"fork       -> fix-auth@1 ({store.resolve('fix-auth@1').id[:7]})  " in fork


def test_log_limit_and_long_format(root: Path) -> None:
    result = run(root, "log", "fix-auth", "-n", "2")
    assert result.exit_code == 0
    commits = _store(root).session("fix-auth").log()
    text = result.stdout
    assert text.count("\ncommit ") + text.startswith("commit ") == 2
    assert text.startswith(f"commit {commits[0].id} (head -> fix-auth)")
    assert "Seq:      fix-auth@5" in text and "Seq:      fix-auth@4" in text
    assert "Change:   compaction tier 2" in text
    assert "ago)" in text or "just now)" in text


def test_log_json_is_one_document_and_jsonl_one_commit_per_line(root: Path) -> None:
    commits = _store(root).session("fix-auth").log()
    assert orjson.loads(run(root, "log", "fix-auth", "--json").stdout) == [c.to_json() for c in commits]
    lines = run(root, "log", "fix-auth", "--jsonl").stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == [c.to_json() for c in commits]


def test_log_refuses_unknown_and_invalid_names(root: Path) -> None:
    assert_refused(run(root, "log", "fix-atuh"), "no session 'fix-atuh'", "did you mean 'fix-auth'")
    assert_refused(run(root, "log", "../etc"), "../etc")


def test_show_renders_roles_calls_and_shortened_results(root: Path) -> None:
    result = run(root, "show", "fix-auth~2")  # after turn 3, before the compaction
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(_store(root).resolve("fix-auth@3").id[:7] + " fix-auth@3  12 messages")
    assert "user       step 1: add a test for the expired-token path" in lines
    assert '           read_file(path="src/auth.py", limit=3)' in lines
    assert "tool       read_file -> line 1 of the file" in lines
    assert "           (212 lines, shortened; --full shows all)" in lines
    assert "line 100 of the file" not in result.stdout
    assert "assistant  [thinking]" in lines and "assistant  done 3" in lines
    full = run(root, "show", "fix-auth~2", "--full").stdout
    assert "line 212 of the file" in full and "shortened" not in full


def test_show_marks_compaction_summaries_at_a_checkpoint(root: Path) -> None:
    result = run(root, "show", "checkpoints/fix-auth/1")
    assert result.exit_code == 0
    assert "# Conversation summary" in result.stdout
    assert "step 1" not in result.stdout


def test_show_json_is_the_history_as_pydantic_ai_json(root: Path) -> None:
    store = _store(root)
    for rev in ("fix-auth", "fix-auth@2", store.resolve("fix-auth@1").id[:8]):
        result = run(root, "show", rev, "--json")
        assert result.exit_code == 0
        commit = store.resolve(rev)
        document = orjson.loads(result.stdout)
        assert (document["commit"], document["rev"]) == (commit.id, f"fix-auth@{commit.seq}")
        assert len(ModelMessagesTypeAdapter.validate_python(document["messages"])) == commit.count
    assert run_history(root, "fix-auth") == store.session("fix-auth").history


@pytest.mark.parametrize(
    ("rev", "words"),
    [
        ("fix-auth@99", ["outside session 'fix-auth'", "session log fix-auth"]),
        ("nosuch~1", ["no session 'nosuch'"]),
        ("checkpoints/fix-auth/7", ["no checkpoint checkpoints/fix-auth/7"]),
        ("abcdef0", ["'abcdef0'"]),
        ("nothing!", ["unknown revision 'nothing!'", "NAME@SEQ"]),
        ("bad/rev/", ["unknown revision"]),
    ],
)
def test_show_refuses_unknown_revisions(root: Path, rev: str, words: list[str]) -> None:
    assert_refused(run(root, "show", rev), *words)


def test_checkout_moves_the_head_and_keeps_the_log(root: Path) -> None:
    store = _store(root)
    target = store.resolve("fix-auth@2")
    result = run(root, "checkout", "fix-auth@2")
    assert result.exit_code == 0, result.output
    head = store.log("fix-auth").head()
    assert result.stdout.startswith(f"fix-auth: head is now {head.id[:7]} (checkout of {target.id[:7]}")
    assert head.kind == "checkout" and head.target == target.id and head.count == target.count == 8
    assert len(store.session("fix-auth").log()) == 6


def test_checkout_of_a_locked_session_changes_nothing(root: Path) -> None:
    store = _store(root)
    before = snapshot(root)
    with store.lock("fix-auth"):
        result = run(root, "checkout", "fix-auth@1", env={"SESSIONSTORE_LOCK_TIMEOUT_S": "0.2"})
    assert_lock_refused(result, "session 'fix-auth' is locked by pid", "retry")
    assert snapshot(root) == before


def test_fork_starts_a_new_session_sharing_blobs(root: Path) -> None:
    objects = sorted((root / "objects").rglob("*"))
    result = run(root, "fork", "fix-auth@3", "spike")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("forked fix-auth@3 (")
    assert "into spike: 12 messages" in result.stdout
    store = _store(root)
    assert store.session("spike").history == run_history(root, "fix-auth@3")
    assert sorted((root / "objects").rglob("*")) == objects  # nothing copied


def run_history(root: Path, rev: str) -> list:
    return ModelMessagesTypeAdapter.validate_python(
        orjson.loads(run(root, "show", rev, "--json").stdout)["messages"]
    )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["fork", "fix-auth", "fix-auth"], ["'fix-auth' already exists", "another name"]),
        (["fork", "fix-auth", "a/b"], ["a/b"]),
        (["fork", "nope", "spike"], ["no session 'nope'"]),
        (["checkout", "fix-auth@0"], ["outside session 'fix-auth'"]),
        (["checkout", "checkpoints/fix-auth/2"], ["no checkpoint"]),
    ],
)
def test_refused_fork_and_checkout_change_nothing(root: Path, args: list[str], words: list[str]) -> None:
    before = snapshot(root)
    assert_refused(run(root, *args), *words)
    assert snapshot(root) == before


# -- a commit that other sessions hold too (issue 28, item 1) -----------------------------------------


@pytest.fixture
def diverged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Bob's store after a diverged pull: `review` (2 commits, its first shared with `review-origin-*`)
    and the pulled copy. Two real git clones of one bare remote; both added a turn to `review`."""
    from helpers.gitrepos import apart_clones, isolate_git
    from sessionstore.porcelain.sharing.pull import pull

    isolate_git(monkeypatch)
    _, _, bob = apart_clones(tmp_path, "review")
    assert [o.status for o in pull(bob)] == ["diverged"]
    assert len(bob.sessions()) == 2
    return bob.root


def test_checkout_and_fork_resolve_inside_the_named_session(diverged: Path) -> None:
    store = _store(diverged)
    copy = next(n for n in store.sessions() if n != "review")
    shared = store.resolve("review@1")
    assert store.resolve(f"{copy}@1").id == shared.id  # the same commit in two sessions
    result = run(diverged, "checkout", "review@1")  # was: "is ambiguous ... give more digits"
    assert result.exit_code == 0, result.stderr
    assert "checkout of" in result.stdout and "review@1" in result.stdout
    head = store.log("review").head()
    assert (head.kind, head.target, head.count) == ("checkout", shared.id, shared.count)
    assert store.log(copy).head().seq == 2  # the other holder is untouched
    result = run(diverged, "fork", "review~1", "spike")  # review~1 is now review@2, bob's own turn
    assert result.exit_code == 0, result.stderr
    assert store.session("spike").history == run_history(diverged, "review@2")
    result = run(diverged, "fork", f"{copy}~1", "spike2")
    assert result.exit_code == 0 and result.stdout.startswith(f"forked {copy}@1 ")


def test_a_bare_id_several_sessions_hold_asks_for_name_at_seq(diverged: Path) -> None:
    store = _store(diverged)
    copy = next(n for n in store.sessions() if n != "review")
    shared = store.resolve("review@1").id
    before = snapshot(diverged)
    assert_refused(run(diverged, "checkout", shared), "is in 2 sessions", "review@1", f"{copy}@1")
    assert "more digits" not in run(diverged, "checkout", shared[:8]).stderr
    assert snapshot(diverged) == before
    commit = store.session("review").checkout(shared[:8])  # a Session reads an id in itself first
    assert commit.target == shared


def test_the_same_transcript_imported_twice(tmp_path: Path) -> None:
    root = tmp_path / "store"
    SessionStore.open(root)
    for name in ("a", "b"):
        assert run(root, "import", str(EXAMPLE), "--as", name).exit_code == 0
    store = _store(root)
    assert store.resolve("a@1").id == store.resolve("b@1").id
    assert run(root, "checkout", "b@1").exit_code == 0
    assert store.log("b").head().kind == "checkout" and store.log("a").head().kind == "import"
    result = run(root, "fork", "a~1", "c")
    assert result.exit_code == 0 and result.stdout.startswith(f"forked a@{EXAMPLE_TURNS - 1} "), result.stderr
