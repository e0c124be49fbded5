"""merge_memory_files: what git's %O %A %B become (the result in %A), caps applied offline."""

from __future__ import annotations

from pathlib import Path

from sessionstore.accounting.settings import Settings
from sessionstore.memory.document import join_lines, split_lines
from sessionstore.memory.driver import merge_memory_files

BASE = ["# M", "", "## Gotchas", "", "- g", "", "## Session notes", "", "- 2026-11-01 a: one"]


def _files(tmp_path: Path, base: list[str], ours: list[str], theirs: list[str]) -> tuple[Path, Path, Path]:
    paths = tuple(tmp_path / name for name in ("base", "ours", "theirs"))
    for path, lines in zip(paths, (base, ours, theirs), strict=True):
        path.write_text(join_lines(lines))
    return paths  # type: ignore[return-value]


def test_the_result_replaces_ours_and_secrets_are_redacted(tmp_path: Path) -> None:
    base, ours, theirs = _files(
        tmp_path, BASE, [*BASE, "- 2026-11-02 b: two"], [*BASE[:5], "- token=abcd1234efgh", *BASE[5:]]
    )
    update = merge_memory_files(base, ours, theirs, Settings())
    out = split_lines(ours.read_text())
    assert update.changed and update.method == "merge"
    assert out[:6] == ["# M", "", "## Gotchas", "", "- g", "- token=[redacted]"]
    assert out[-1] == "- 2026-11-02 b: two"


def test_past_the_caps_the_merge_is_squashed(tmp_path: Path) -> None:
    more = [f"- 2026-11-{1 + i // 10:02d} s{i}: note {i}" for i in range(30)]
    base, ours, theirs = _files(tmp_path, BASE, BASE + more[:15], BASE + more[15:])
    update = merge_memory_files(base, ours, theirs, Settings(memory_max_lines=20))
    assert update.method == "merge+extractive" and len(split_lines(ours.read_text())) <= 20


def test_no_common_ancestor_is_an_empty_base(tmp_path: Path) -> None:
    base, ours, theirs = _files(tmp_path, [], ["## A", "- a"], ["## B", "- b"])
    merge_memory_files(base, ours, theirs, Settings())
    assert split_lines(ours.read_text()) == ["## A", "- a", "", "## B", "- b"]
