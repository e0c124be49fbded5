"""Every MEMORY.md writer takes the one memory lock: concurrent writers lose nothing (real processes).

Before the lock, 8 processes x 10 `session memory append` kept 62 of 80 bullets (each read the file,
added its bullet and renamed its copy over the others'), and 55 with a squash running alongside.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.procs import spawn
from sessionstore.accounting.settings import Settings
from sessionstore.errors import LockTimeout
from sessionstore.memory.append import append_session_summary
from sessionstore.memory.compress import compress_memory_file
from sessionstore.memory.document import template_text
from sessionstore.memory.driver import merge_memory_files
from sessionstore.memory.lock import memory_lock
from sessionstore.porcelain.store import SessionStore

WRITERS = 8
APPENDS = int(os.environ.get("SESSIONSTORE_MEMORY_APPENDS", "30"))
"""Appends per writer: 8 x 30 raced appends by default (the suite's budget); SESSIONSTORE_MEMORY_APPENDS=100
for 8 x 100."""
ROOMY = {"SESSIONSTORE_MEMORY_MAX_LINES": "100000", "SESSIONSTORE_MEMORY_MAX_BYTES": "10000000"}
"""Caps no run reaches, so every bullet must stay (the clamp drops the oldest by design)."""


def bullets(path: Path) -> set[str]:
    return set(re.findall(r"^- \d{4}-\d\d-\d\d (w\d+-\d+): ", path.read_text(), re.MULTILINE))


def memory_file(tmp_path: Path) -> Path:
    path = tmp_path / "MEMORY.md"
    path.write_text(template_text())
    return path


def run_writers(path: Path, *, squash_seconds: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ROOMY.items():
        monkeypatch.setenv(key, value)
    os.chdir(path.parent)  # settings are looked up from the working directory: none there
    children = [spawn("memory_writer.py", "append", path, w, APPENDS) for w in range(WRITERS)]
    if squash_seconds is not None:
        children.append(spawn("memory_writer.py", "squash", path, squash_seconds))
    outputs = [child.communicate(timeout=240)[0] for child in children]
    assert [child.returncode for child in children] == [0] * len(children), outputs
    assert all(out.splitlines()[-1].startswith("ok ") for out in outputs)


@pytest.mark.slow
@pytest.mark.parametrize("squash", [False, True], ids=["appends", "appends+squash"])
def test_concurrent_appends_keep_every_bullet(
    tmp_path: Path, squash: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = memory_file(tmp_path)
    run_writers(path, squash_seconds=(APPENDS / 25) if squash else None, monkeypatch=monkeypatch)
    expected = {f"w{w}-{i}" for w in range(WRITERS) for i in range(APPENDS)}
    kept = bullets(path)
    assert kept == expected, f"{len(expected - kept)} of {len(expected)} bullets lost"


def hold(path: Path) -> subprocess.Popen[str]:
    holder = spawn("memory_writer.py", "hold", path, stdin=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0


QUICK = Settings(lock_timeout_s=0.2)


def test_every_writer_waits_for_the_one_lock(tmp_path: Path) -> None:
    """Append, squash, the merge driver and a session's end all wait on a lock another process holds,
    and give up naming the file; nothing is written meanwhile."""
    path = memory_file(tmp_path)
    before = path.read_bytes()
    other = tmp_path / "theirs.md"
    other.write_text(template_text() + "\n- 2026-01-01 x: theirs\n")
    store = SessionStore.open(tmp_path / "store", settings=QUICK)
    assert store.memory_path == path
    holder = hold(path)
    try:
        writers = {
            "append": lambda: append_session_summary(path, "s", "did a thing", QUICK, compress=True),
            "squash": lambda: compress_memory_file(path, QUICK),
            "driver": lambda: merge_memory_files(path, path, other, QUICK, memory=path),
            "end": lambda: store.session("s").end(),
        }
        for what, write in writers.items():
            with pytest.raises(LockTimeout, match=re.escape(str(path))):
                write()
            assert path.read_bytes() == before, what
    finally:
        release(holder)
    append_session_summary(path, "s", "did a thing", QUICK)  # free again
    assert " s: did a thing" in path.read_text()


def test_the_lock_is_the_files_not_the_spelling(tmp_path: Path) -> None:
    """A relative path, an absolute one and one through `..` name the same lock."""
    path = memory_file(tmp_path)
    (tmp_path / "sub").mkdir()
    holder = hold(path)
    try:
        for spelling in (tmp_path / "sub" / ".." / "MEMORY.md", path):
            with pytest.raises(LockTimeout), memory_lock(spelling, 0.1):
                pass
    finally:
        release(holder)
    with memory_lock(path, 0.1):
        pass
