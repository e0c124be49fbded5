"""MEMORY.md through real git merges: union alone (and squash's repair), the structured driver, the caps.

The scenario is the issue's: a MEMORY.md without a Session notes section yet; on one clone a session
ends (git appends "## Session notes" and a bullet at the end of the file), on the other a teammate
adds a Gotchas bullet at the end (Gotchas is the last section) and a session ends too. Both sides
inserted at the end of the file, so git's union keeps both runs of lines one after the other.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.gitrepos import git_env
from sessionstore.accounting.settings import Settings
from sessionstore.memory.append import append_session_summary
from sessionstore.memory.compress import compress_memory_file
from sessionstore.memory.document import join_lines, split_lines
from sessionstore.memory.hooks import install_git_hook, install_merge_driver
from sessionstore.memory.merge import split_sections

BASE = ["# Project memory", "", "## Conventions", "", "- use uv", "", "## Gotchas", "", "- old gotcha"]


def _env() -> dict[str, str]:
    return git_env()


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, env=_env(), capture_output=True, text=True, check=check)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in _env().items():
        monkeypatch.setenv(key, value)
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "MEMORY.md").write_text(join_lines(BASE))
    (path / ".gitattributes").write_text("MEMORY.md merge=union\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    return path


def _diverge(repo: Path) -> None:
    """main: a session ends. other: a gotcha at the end of the file, then a session ends."""
    memory = repo / "MEMORY.md"
    git(repo, "checkout", "-qb", "other")
    memory.write_text(memory.read_text() + "- gotcha from bob\n")
    append_session_summary(memory, "bob-session", "fixed the cache", Settings())
    git(repo, "commit", "-qam", "bob")
    git(repo, "checkout", "-q", "main")
    append_session_summary(memory, "alice-session", "added the login page", Settings())
    git(repo, "commit", "-qam", "alice")


def _sections(repo: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for section in split_sections(split_lines((repo / "MEMORY.md").read_text())):
        title = section.title
        lines = [line for unit in section.body for line in unit.lines if line.strip()]
        out.setdefault(title, []).extend(lines)
    return out


def test_union_alone_repeats_the_heading_and_squash_repairs_it(repo: Path) -> None:
    _diverge(repo)
    merged = git(repo, "merge", "-q", "other", "-m", "merge")
    assert merged.returncode == 0
    text = (repo / "MEMORY.md").read_text()
    assert text.count("## Session notes") == 2  # what union does (the report)
    update = compress_memory_file(repo / "MEMORY.md", Settings(), only_past_caps=True)
    assert update.changed
    after = (repo / "MEMORY.md").read_text()
    assert after.count("## Session notes") == 1
    notes = _sections(repo)["session notes"]
    assert any("alice-session" in line for line in notes) and any("bob-session" in line for line in notes)
    assert "- gotcha from bob" in after  # kept, though squash cannot tell which heading it belongs to


def test_the_driver_merges_per_heading(repo: Path) -> None:
    for name in ("pre-commit", "post-merge"):
        install_git_hook(repo, name=name)
    attributes, changed = install_merge_driver(repo)
    assert changed and "MEMORY.md merge=sessionstore-memory" in attributes.read_text()
    assert install_merge_driver(repo) == (attributes, False)
    _diverge(repo)
    merged = git(repo, "merge", "-q", "other", "-m", "merge")
    assert merged.returncode == 0, merged.stderr
    assert git(repo, "status", "--porcelain").stdout == ""
    sections = _sections(repo)
    assert list(sections) == ["project memory", "conventions", "gotchas", "session notes"]
    assert sections["gotchas"] == ["- old gotcha", "- gotcha from bob"]
    notes = sections["session notes"]
    assert len(notes) == 2 and "alice-session" in notes[0] and "bob-session" in notes[1]  # ours, then theirs
    assert (repo / ".gitattributes").read_text() == "MEMORY.md merge=union\n"  # the repo's file untouched


def _notes(who: str, n: int, month: int = 11) -> list[str]:
    return [
        f"- 2026-{month}-{1 + i // 10:02d} {who}{i}: {who} worked on item {i} of the plan" for i in range(n)
    ]


def test_a_clean_merge_past_the_cap_comes_out_within_it(repo: Path) -> None:
    install_merge_driver(repo)
    memory = repo / "MEMORY.md"
    base = [*split_lines(memory.read_text()), "", "## Session notes", ""]
    memory.write_text(join_lines(base + _notes("c", 90, month=10)))
    git(repo, "commit", "-qam", "ninety notes")
    git(repo, "checkout", "-qb", "other")
    memory.write_text(join_lines(split_lines(memory.read_text()) + _notes("b", 60)))
    git(repo, "commit", "-qam", "bob")
    git(repo, "checkout", "-q", "main")
    memory.write_text(join_lines(split_lines(memory.read_text()) + _notes("a", 60)))
    git(repo, "commit", "-qam", "alice")
    merged = git(repo, "merge", "-q", "other", "-m", "merge")
    assert merged.returncode == 0, merged.stderr
    lines = split_lines(memory.read_text())
    assert len(lines) <= 200 and lines.count("## Session notes") == 1
    assert lines[-1].startswith("- 2026-11-") and " b59:" in lines[-1]  # theirs' newest note is last
    assert "squashed" in merged.stderr


def test_the_post_merge_hook_squashes_a_fast_forward_past_the_cap(repo: Path) -> None:
    install_git_hook(repo, name="post-merge")
    memory = repo / "MEMORY.md"
    git(repo, "checkout", "-qb", "other")
    base = [*split_lines(memory.read_text()), "", "## Session notes", ""]
    memory.write_text(join_lines(base + _notes("b", 203)))
    git(repo, "commit", "-qam", "214 lines")
    assert len(split_lines(memory.read_text())) == 215
    git(repo, "checkout", "-q", "main")
    merged = git(repo, "merge", "-q", "--ff-only", "other")  # no commit hook runs for this
    assert merged.returncode == 0
    assert len(split_lines(memory.read_text())) <= 200
    assert "review it and commit it" in merged.stderr
    assert git(repo, "status", "--porcelain").stdout.strip() == "M MEMORY.md"


def test_the_driver_survives_the_venv_that_registered_it(repo: Path, tmp_path: Path) -> None:
    # issue 28, item 6: the driver was registered with the venv's absolute path; a new venv broke it.
    import os
    import sys

    venv_bin = tmp_path / "old-venv" / "bin"
    venv_bin.mkdir(parents=True)
    session = venv_bin / "session"
    used = tmp_path / "used.log"
    real = Path(sys.executable).with_name("session")
    session.write_text(f'#!/bin/sh\necho old >> "{used}"\nexec "{real}" "$@"\n')
    session.chmod(0o755)
    install_merge_driver(repo, executable=str(session))
    _diverge(repo)
    tip = git(repo, "rev-parse", "HEAD").stdout.strip()

    def merge(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        git(repo, "reset", "-q", "--hard", tip)
        done = subprocess.run(
            ["git", "merge", "-q", "other", "-m", "merge"], cwd=repo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0 and git(repo, "status", "--porcelain").stdout == "", done.stderr
        return done

    merge(_env())
    assert used.read_text() == "old\n"  # the executable that registered it, while it exists
    structured = (repo / "MEMORY.md").read_text()
    assert structured.count("## Session notes") == 1
    session.unlink()  # the venv is gone (recreated elsewhere): `session` on PATH merges the same
    merge(_env())
    assert (repo / "MEMORY.md").read_text() == structured
    # No `session` anywhere: git's union merge, as clones without the driver get, and it says so.
    bare = git_env(PATH=os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir()))
    done = merge(bare)
    assert "no 'session' executable" in done.stderr and "union" in done.stderr
    text = (repo / "MEMORY.md").read_text()
    assert "alice-session" in text and "bob-session" in text and "- gotcha from bob" in text
