"""Running `session` through click's runner, and proving a refused command changed nothing on disk."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from sessionstore.cli.main import EXIT_ERROR, cli

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "sessionstore" / "examples" / "fix-auth.json"
EXAMPLE_TURNS = 14
"""Turns (one import commit each) of the bundled example: enough for every revision the README's tour
names (`fix-auth~3`, `fix-auth@12`)."""
EXAMPLE_MESSAGES = 98


def run(store: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """`session --store STORE ARGS...` in-process; stdout and stderr kept apart."""
    return CliRunner().invoke(cli, ["--store", str(store), *args], env=env, catch_exceptions=False)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` but lock files (taking a lock is not a change), with its bytes."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "locks" not in p.relative_to(root).parts
    }


def assert_lock_refused(result: Result, *words: str) -> None:
    """A refused wait for a lock: first a line saying who holds it (a pid) and how long it waits, then
    one refusal line naming each of `words`; exit 2, nothing on stdout."""
    assert result.exit_code == EXIT_ERROR, (result.exit_code, result.output, result.stderr)
    waited, refused = result.stderr.strip().splitlines()
    assert waited.startswith("session: ") and " is locked by pid " in waited and "waiting up to" in waited
    assert refused.startswith("session: ") and "Traceback" not in result.stderr
    for word in words:
        assert word in refused, (word, refused)
    assert result.stdout == ""


def assert_refused(result: Result, *words: str) -> None:
    """One line on stderr naming the problem (each of `words`), exit 2, no traceback, no stdout."""
    assert result.exit_code == EXIT_ERROR, (result.exit_code, result.output, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("session: ")
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert result.stdout == ""
