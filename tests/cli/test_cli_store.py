"""`session init`, `list`, `fsck` and `gc` through click's runner: output, exit codes, refusals."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from helpers.cli import EXAMPLE, EXAMPLE_MESSAGES, assert_refused, run, snapshot
from helpers.messages import sample_turns
from sessionstore.cli.main import cli
from sessionstore.plumbing.fsutil import write_temp
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def filled(root: Path) -> Path:
    """A store with two sessions: `alpha` (three turns) and `beta` (one turn, one checkpoint)."""
    store = SessionStore.open(root)
    alpha = store.session("alpha")
    for turn in sample_turns():
        alpha.append(turn)
    beta = store.session("beta")
    beta.append(sample_turns()[0])
    with store.lock("beta"):
        beta.commit_checkpoint(sample_turns()[1], tier=2)
    return root


def test_init_creates_a_store_once(root: Path) -> None:
    first = run(root, "init")
    assert first.exit_code == 0
    assert "Initialized empty session store" in first.stdout
    assert (root / "VERSION").read_text() == "1\n"
    again = run(root, "init")
    assert again.exit_code == 0
    assert "already a session store (0 sessions)" in again.stdout


def test_init_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a directory")
    result = run(path, "init")  # click's own usage error (`--store` must be a directory)
    assert result.exit_code == 2 and "is a file" in result.stderr and "Traceback" not in result.stderr
    assert path.read_text() == "not a directory"


@pytest.mark.parametrize("args", [["list"], ["log", "x"], ["show", "x"], ["fsck"], ["gc"], ["export", "x"]])
def test_commands_on_a_missing_store_say_run_init(root: Path, args: list[str]) -> None:
    assert_refused(run(root, *args), "is not a session store", "session init")
    assert not root.exists()


def test_store_comes_from_the_environment(root: Path) -> None:
    from click.testing import CliRunner

    from sessionstore.cli.main import cli

    result = CliRunner().invoke(cli, ["init"], env={"SESSIONSTORE_DIR": str(root)})
    assert result.exit_code == 0, result.output
    assert (root / "VERSION").is_file()


def test_list_shows_every_session(filled: Path) -> None:
    result = run(filled, "list")
    assert result.exit_code == 0, result.output
    alpha, beta = result.stdout.splitlines()
    count = sum(len(turn) for turn in sample_turns())
    assert alpha.split()[:3] == ["alpha", str(count), "msgs"]
    assert "just now" in alpha and "checkpoint" not in alpha
    assert beta.split()[:3] == ["beta", "2", "msgs"]
    assert "1 checkpoint" in beta
    assert "%" in alpha and "\x1b[" not in result.stdout  # not a terminal: no colour


def test_list_json_is_one_array_and_jsonl_one_object_per_session(filled: Path) -> None:
    records = orjson.loads(run(filled, "list", "--json").stdout)
    lines = run(filled, "list", "--jsonl").stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == records
    store = SessionStore.open(filled, create=False)
    assert [r["name"] for r in records] == ["alpha", "beta"]
    for record in records:
        info = store.info(record["name"])
        assert record["messages"] == info.count
        assert record["tokens"] == info.tokens > 0
        assert record["head"] == info.head.id
        assert record["checkpoints"] == info.checkpoints


def test_list_of_an_empty_store_says_how_to_start(root: Path) -> None:
    run(root, "init")
    result = run(root, "list")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "session import" in result.stderr


def test_fsck_clean_store_exits_0(filled: Path) -> None:
    result = run(filled, "fsck")
    assert result.exit_code == 0, result.output
    assert "checked 2 sessions, 5 commits" in result.stdout and result.stdout.rstrip().endswith(": ok")


def test_fsck_reports_damage_and_repair_fixes_what_is_derivable(filled: Path) -> None:
    (filled / "refs" / "checkpoints" / "beta" / "1").unlink()
    log = filled / "logs" / "alpha.jsonl"
    with open(log, "ab") as f:
        f.write(b'{"torn":')
    found = run(filled, "fsck")
    assert found.exit_code == 1
    assert "problem: beta: checkpoints/beta/1 is missing" in found.stdout
    assert "problem: alpha: torn last line" in found.stdout
    assert "2 problems; `session fsck --repair`" in found.stderr
    repaired = run(filled, "fsck", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert repaired.stdout.count("repaired: ") == 2
    assert (filled / "refs" / "checkpoints" / "beta" / "1").is_file()
    assert run(filled, "fsck").exit_code == 0


def test_fsck_exit_1_when_problems_remain_after_repair(filled: Path) -> None:
    blob = next(p for p in (filled / "objects").rglob("*") if p.is_file())
    data = bytearray(blob.read_bytes())
    data[0] ^= 1
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(data))
    result = run(filled, "fsck", "--repair")
    assert result.exit_code == 1
    assert blob.parent.name + blob.name in result.stdout or blob.name in result.stdout


def _orphan(root: Path, age_days: float) -> Path:
    store = SessionStore.open(root, create=False)
    oid = store.objects.write(f"orphan {age_days}\n".encode())
    path = store.objects.path(oid)
    old = time.time() - age_days * 86400
    os.utime(path, (old, old))
    return path


def test_gc_removes_old_orphans_only(filled: Path) -> None:
    old, young = _orphan(filled, 30), _orphan(filled, 1)
    dry = run(filled, "gc", "--dry-run")
    assert dry.exit_code == 0
    assert "would remove 1 unreachable object" in dry.stdout
    assert old.exists()
    done = run(filled, "gc")
    assert "removed 1 unreachable object" in done.stdout
    assert not old.exists() and young.exists()
    assert run(filled, "gc", "--grace", "0").stdout.startswith("removed 1 unreachable object")
    assert not young.exists()
    assert run(filled, "fsck").exit_code == 0


def test_a_leftover_ref_temp_is_an_fsck_note_and_a_gc_line(filled: Path) -> None:
    ref = filled / "refs" / "checkpoints" / "beta" / "1"
    left = write_temp(ref.parent, ref.read_bytes())  # what a ref write killed before its link leaves
    relative = str(left.relative_to(filled))
    checked = run(filled, "fsck")
    assert checked.exit_code == 0 and checked.stdout.rstrip().endswith(": ok")
    assert f"note: {relative}: temp file of a write a crash interrupted, never read" in checked.stdout
    assert orjson.loads(run(filled, "fsck", "--json").stdout)["notes"] == [
        checked.stdout.split("note: ")[1].splitlines()[0]
    ]
    kept = run(filled, "gc")
    assert (
        "removed 0 leftover temp files of writes a crash interrupted (refs/checkpoints/*/.tmp-*, titles"
        in kept.stdout
    )
    assert "; kept 1 younger than 14 days" in kept.stdout and left.exists()
    old = time.time() - 15 * 86400
    os.utime(left, (old, old))
    dry = orjson.loads(run(filled, "gc", "--dry-run", "--json").stdout)
    assert (dry["temps_removed"], dry["temps_kept"]) == ([relative], 0) and left.exists()
    done = run(filled, "gc")
    assert "removed 1 leftover temp file of writes a crash interrupted" in done.stdout and not left.exists()
    assert "leftover" not in run(filled, "gc").stdout, "no line when there is nothing to say"
    assert "note:" not in run(filled, "fsck").stdout and ref.is_file()


def test_gc_refuses_a_negative_grace(filled: Path) -> None:
    before = snapshot(filled)
    result = run(filled, "gc", "--grace", "-1")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert snapshot(filled) == before


def test_list_shows_an_imported_example(root: Path) -> None:
    run(root, "init")
    assert run(root, "import", str(EXAMPLE)).exit_code == 0
    assert run(root, "list").stdout.split()[:3] == ["fix-auth", str(EXAMPLE_MESSAGES), "msgs"]


def test_list_shows_a_damaged_session_and_still_lists_the_others(filled: Path) -> None:
    log = filled / "logs" / "beta.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    # A bad last line counts as torn; one before it is damage, which `info` (head) reports.
    log.write_bytes(b"".join(line.replace(b'"kind"', b'"kinD"') for line in lines))
    result = run(filled, "list")
    assert result.exit_code == 0, result.output
    alpha, beta = result.stdout.splitlines()
    assert alpha.split()[0] == "alpha" and "msgs" in alpha
    assert beta.split() == ["beta", "damaged:", "run", "`session", "fsck`"]
    records = orjson.loads(run(filled, "list", "--json").stdout)
    assert records[0]["name"] == "alpha" and "damaged" in records[1]["error"]


def test_fsck_checks_and_rebuilds_the_conversation_index(root: Path) -> None:
    import asyncio

    from pydantic_ai.conversation import Conversation

    from sessionstore import FileConversationStore

    ours = FileConversationStore(root)
    asyncio.run(ours.save(Conversation(conversation_id="c1", messages=sample_turns()[0])))
    assert run(root, "fsck").exit_code == 0
    ours.index.note("c1", time="2027-01-01T00:00:00.000000Z", scope=None, commit="f" * 64)  # never landed
    found = run(root, "fsck")
    assert (
        found.exit_code == 1
        and "index/conversations.jsonl: conversation 'c1' is listed at commit fffffff" in (found.stdout)
    )
    fixed = run(root, "fsck", "--repair")
    assert (
        fixed.exit_code == 0
        and "rebuilt index/conversations.jsonl from the logs (1 conversation)" in fixed.stdout
    )
    assert run(root, "fsck").exit_code == 0


def _here(*args: str) -> Result:
    """`session ARGS...` with no --store and no SESSIONSTORE_DIR: the store is found from the cwd."""
    return CliRunner().invoke(cli, list(args), env={"SESSIONSTORE_DIR": None}, catch_exceptions=False)


def test_outside_git_a_subdirectory_finds_the_store_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 28, item 9: from a subdirectory, outside git, `session list` said to `session init` again.
    if any((d / ".git").exists() or (d / ".sessions").exists() for d in tmp_path.parents):
        pytest.skip(f"a .git or .sessions above {tmp_path} would be found first")
    project = tmp_path / "proj"
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(project)
    assert _here("init").exit_code == 0 and (project / ".sessions" / "VERSION").is_file()
    monkeypatch.chdir(project / "src" / "deep")
    assert _here("import", "--example").exit_code == 0
    assert _here("list").stdout.split()[0] == "fix-auth"
    assert SessionStore.open(project / ".sessions", create=False).sessions() == ["fix-auth"]
    again = _here("init")  # not a second store below the first: it says where the store is
    assert again.exit_code == 0 and not (project / "src" / "deep" / ".sessions").exists()
    assert f"{project / '.sessions'} is already a session store (1 session, found above" in again.stdout
    elsewhere = tmp_path / "elsewhere" / "x"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    result = _here("list")  # nothing above: it says where it looked and what init would create
    assert_refused(
        result,
        f"looked for .sessions/ in {elsewhere} and every directory above it; not in a git repository",
        f"run `session init` to create {elsewhere / '.sessions'}",
    )
