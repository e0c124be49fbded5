"""Reading refuses what is not a writable UTF-8 text file; writes are atomic and keep the mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sessionstore.errors import MemoryFileError
from sessionstore.memory.fileio import MemoryUpdate, read_memory_file, write_atomic


def test_round_trip_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("old\n")
    path.chmod(0o640)
    write_atomic(path, "new é\n")
    assert read_memory_file(path) == "new é\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["MEMORY.md"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [(b"# M\n\x00\x01binary", "binary"), (b"# M\n\xff\xfe caf\xe9\n", "not UTF-8")],
)
def test_binary_and_non_utf8_are_refused(tmp_path: Path, data: bytes, needle: str) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(data)
    with pytest.raises(MemoryFileError, match=needle):
        read_memory_file(path)


def test_directory_and_missing_are_refused(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").mkdir()
    with pytest.raises(MemoryFileError, match="is a directory"):
        read_memory_file(tmp_path / "MEMORY.md")
    with pytest.raises(MemoryFileError, match="session memory init"):
        read_memory_file(tmp_path / "absent.md")


def test_read_only_file_is_refused_even_as_root(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("keep\n")
    path.chmod(0o444)
    with pytest.raises(MemoryFileError, match="read-only"):
        write_atomic(path, "changed\n")
    assert path.read_text() == "keep\n"


def test_describe() -> None:
    update = MemoryUpdate(Path("M.md"), True, "extractive", 300, 190, 20_000, 9_000, removed=["a"])
    assert update.describe() == "M.md: 300 -> 190 lines, 20,000 -> 9,000 bytes (extractive, 1 line removed)"
    assert "unchanged" in MemoryUpdate(Path("M.md")).describe()


def test_describe_names_a_missing_file_instead_of_calling_it_unchanged(tmp_path) -> None:
    from sessionstore.accounting.settings import Settings
    from sessionstore.memory.append import record_session_end

    update = record_session_end(tmp_path / "MEMORY.md", "s", "x", Settings())
    said = update.describe()
    assert "unchanged" not in said and "0 lines" not in said
    assert str(tmp_path / "MEMORY.md") in said and "session memory init" in said
