"""`session memory init|squash|append` and `session hooks install` through the real click entry point."""

from __future__ import annotations

import os
import subprocess
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessionstore.cli.main import cli
from sessionstore.memory.document import headings, join_lines, split_lines, template_text


def _lines(bullets: int) -> list[str]:
    start = date(2026, 1, 1)
    notes = [f"- {start + timedelta(days=i)} s{i}: worked on {i}" for i in range(bullets)]
    return [*split_lines(template_text()), "", *notes]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for key in [k for k in os.environ if k.startswith("SESSIONSTORE_")]:
        monkeypatch.delenv(key)
    return tmp_path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_init_then_refuses_second_time(repo: Path) -> None:
    code, out, _ = _run("memory", "init")
    assert code == 0 and "wrote" in out and "merge=union" in out
    assert (repo / "MEMORY.md").read_text() == template_text()
    code, _, err = _run("memory", "init")
    assert code == 2 and err.count("\n") == 1 and "already exists" in err


def test_squash_exit_codes_and_second_run_noop(repo: Path) -> None:
    path = repo / "MEMORY.md"
    path.write_text(join_lines(_lines(300)))
    code, out, _ = _run("memory", "squash", "--check")
    assert code == 1 and "would change" in out and split_lines(path.read_text()) == _lines(300)
    code, out, _ = _run("memory", "squash")  # no FILES: MEMORY.md at the git top level
    assert code == 1 and "-> " in out
    lines = split_lines(path.read_text())
    assert len(lines) <= 200 and headings(lines) == headings(_lines(0))
    code, out, _ = _run("memory", "squash", str(path))
    assert (code, out) == (0, "")


def test_squash_flags_and_verbose_lists_removed(repo: Path) -> None:
    path = repo / "MEMORY.md"
    path.write_text(join_lines(_lines(20)))
    code, out, _ = _run("memory", "squash", "--max-lines", "25", "--verbose", str(path))
    assert code == 1
    assert "  - removed: - 2026-01-01 s0: worked on 0" in out
    assert len(split_lines(path.read_text())) <= 25


def test_squash_under_cap_removes_union_duplicates(repo: Path) -> None:
    path = repo / "MEMORY.md"
    lines = _lines(3)
    path.write_text(join_lines([*lines, lines[-1]]))
    assert _run("memory", "squash", str(path))[0] == 1
    assert split_lines(path.read_text()) == lines


@pytest.mark.parametrize("kind", ["binary", "latin1", "directory", "readonly"])
def test_bad_files_one_error_line_exit_2_unchanged(repo: Path, kind: str) -> None:
    path = repo / "MEMORY.md"
    data = join_lines(_lines(300)).encode()
    if kind == "binary":
        data = b"\x89PNG\r\n\x1a\n\x00\x00" + data
    elif kind == "latin1":
        data = data + "café\n".encode("latin-1")
    if kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(data)
    if kind == "readonly":
        path.chmod(0o444)
    code, out, err = _run("memory", "squash", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("session: ") and str(path) in err
    if kind != "directory":
        assert path.read_bytes() == data


def test_squash_missing_default_file_names_the_fix(repo: Path) -> None:
    code, _, err = _run("memory", "squash")
    assert code == 2 and "session memory init" in err


def test_append_adds_a_bullet(repo: Path) -> None:
    _run("memory", "init")
    code, _, _ = _run("memory", "append", "fix-auth", "# Conversation summary\n## Goal\nFix auth\n")
    assert code == 0
    last = split_lines((repo / "MEMORY.md").read_text())[-1]
    assert last.endswith(" fix-auth: Fix auth") and last.startswith("- 20")


def test_hooks_install_and_force(repo: Path) -> None:
    code, out, _ = _run("hooks", "install")
    assert code == 0 and "installed" in out
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n")
    code, _, err = _run("hooks", "install")
    assert code == 2 and "--force" in err and "pre-commit.local" in err
    code, out, _ = _run("hooks", "install", "--force")
    assert code == 0 and f"(your hook is now {hook}.local, and runs first)" in out
    assert (repo / ".git" / "hooks" / "pre-commit.local").read_text() == "#!/bin/sh\n"
    hook.write_text("#!/bin/sh\nexit 0\n")
    code, out, err = _run("hooks", "install", "--force")  # .local is taken: refused, nothing changed
    assert code == 2 and "exists too" in err and hook.read_text() == "#!/bin/sh\nexit 0\n"


FIXTURE_SECTIONS = [
    "## Key Fixtures",
    "",
    "### From conftest.py",
    "",
    "- `client` - FastAPI TestClient",
    "- `temp_db` - Temporary SQLite database",
    "",
    "## Assertion Helpers",
    "",
    "### From conftest.py",
    "",
    "- `assert_ok(response)` - fails on a non-2xx status",
    "",
]


def test_squash_keeps_a_heading_repeated_under_different_parents(repo: Path, realdata: Path) -> None:
    # A real AGENTS.md with `### From conftest.py` under two parents (issue 28, item 2): both are
    # sections of their own; squash used to fold the second into the first and move its bullet.
    lines = split_lines((realdata / "memory" / "codemie-code_AGENTS.md").read_text())
    at = lines.index("## Development Commands")
    lines = [*lines[:at], *FIXTURE_SECTIONS, *lines[at:]]
    path = repo / "AGENTS.md"
    path.write_text(join_lines(lines))
    assert _run("memory", "squash", "--max-lines", "1000", "--max-bytes", "100000", str(path)) == (0, "", "")
    assert split_lines(path.read_text()) == lines
    # A union merge's real repeat is still repaired: the second `## Troubleshooting` and its
    # `### Common Issues` fold into the first, its bullet under `### Common Issues`, not elsewhere.
    path.write_text(join_lines([*lines, "", "## Troubleshooting", "", "### Common Issues", "", "- new: x"]))
    code, _, _ = _run("memory", "squash", "--max-lines", "1000", "--max-bytes", "100000", str(path))
    after = split_lines(path.read_text())
    assert code == 1 and headings(after) == headings(lines)
    issues = after.index("### Common Issues")
    assert issues < after.index("- new: x") < after.index("### Diagnostic")
    assert after.count("### From conftest.py") == 2
    for heading, bullet in (("## Key Fixtures", "- `client`"), ("## Assertion Helpers", "- `assert_ok")):
        start = after.index(heading)
        assert after[start + 2] == "### From conftest.py" and after[start + 4].startswith(bullet)
