"""`StoreDir`, the one way to a path inside a store (plumbing/storedir.py), on real directories and
real symlinks: every component below the root is a real directory or absent, a link or a file in
the place of one is refused naming it, and nothing is created or read through one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessionstore.errors import StorePathError
from sessionstore.plumbing.fsutil import write_temp
from sessionstore.plumbing.storedir import StoreDir


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "store" / "refs" / "checkpoints" / "s").mkdir(parents=True)
    return tmp_path / "store"


def test_check_passes_real_and_absent_directories_and_returns_the_path(root: Path) -> None:
    deep = StoreDir(root) / "refs" / "checkpoints" / "s"
    assert deep.check() == root / "refs" / "checkpoints" / "s" and deep.exists()
    absent = StoreDir(root).below("trash/x.1Z/refs")
    assert absent.check() == root / "trash" / "x.1Z" / "refs" and not absent.exists()
    assert StoreDir(root).check() == root and deep.rel == "refs/checkpoints/s"
    assert deep.file("1") == f"{root}/refs/checkpoints/s/1"


@pytest.mark.parametrize("level", ["refs", "refs/checkpoints", "refs/checkpoints/s"])
def test_a_symlink_at_any_level_is_refused_naming_it(root: Path, tmp_path: Path, level: str) -> None:
    outside = tmp_path / "outside"
    (root / level).rename(outside)
    (root / level).symlink_to(outside, target_is_directory=True)
    deep = StoreDir(root).below("refs/checkpoints/s")
    for use in (deep.check, deep.make, deep.listdir, deep.exists, lambda: deep.entry("1"), deep.temp_files):
        with pytest.raises(StorePathError) as refused:
            use()
        assert str(refused.value) == (
            f"{root}/{level} is a symlink: nothing is read or written through it (it points to {outside}); "
            "replace it with a real directory holding what belongs there, then retry"
        )
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    with pytest.raises(StorePathError):
        (StoreDir(root).below("refs/checkpoints/s") / "new").make()
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before  # nothing made there


def test_a_file_where_a_directory_belongs_is_refused(root: Path) -> None:
    (root / "logs").write_bytes(b"not a directory")
    with pytest.raises(StorePathError, match=r"/logs is a regular file where the store keeps a directory"):
        (StoreDir(root) / "logs").make()
    os.mkfifo(root / "trash")
    with pytest.raises(StorePathError, match=r"/trash is a FIFO where the store keeps a directory"):
        StoreDir(root).below("trash/x").check()


def test_the_root_itself_may_be_a_link(root: Path, tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(root, target_is_directory=True)
    made = (StoreDir(tmp_path / "via") / "titles").make()
    assert made == tmp_path / "via" / "titles" and (root / "titles").is_dir()


def test_make_creates_each_absent_level_and_keeps_existing_ones(root: Path) -> None:
    made = StoreDir(root).below("locks/importing/x/refs/checkpoints").make()
    assert made.is_dir() and not made.is_symlink()
    assert StoreDir(root).below("locks/importing/x/refs/checkpoints").make() == made


def test_entry_refuses_a_linked_file_or_directory_in_its_own_place(root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("outside")
    titles = (StoreDir(root) / "titles").make()
    (titles / "s").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StorePathError, match=r"titles/s is a symlink: .* replace it with the file itself"):
        (StoreDir(root) / "titles").entry("s")
    assert (StoreDir(root) / "titles").entry("t") == titles / "t"  # absent: its path


def test_a_component_is_one_name(root: Path) -> None:
    for bad in ("", ".", "..", "a/b"):
        with pytest.raises(ValueError, match="not one directory name"):
            StoreDir(root) / bad


def test_temp_files_lists_regular_leftovers_only_and_never_through_a_link(tmp_path: Path) -> None:
    here = tmp_path / "d"
    here.mkdir()
    left = write_temp(here, b"half")  # what a writer killed before its rename leaves
    (here / ".tmp-dir").mkdir()
    (here / ".tmp-link").symlink_to(left)
    (here / "kept").write_bytes(b"a real file")
    assert (StoreDir(tmp_path) / "d").temp_files() == [left]
    (tmp_path / "link").symlink_to(here)
    with pytest.raises(StorePathError):
        (StoreDir(tmp_path) / "link").temp_files()
    assert (StoreDir(tmp_path) / "absent").temp_files() == []
