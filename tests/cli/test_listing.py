"""`session list` through the heads cache's cells and memo (cli/listing.py): after every kind of change a
listing prints exactly what a listing without any cache prints, and a listing the cache holds makes
no cell and reads no head."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from helpers.cli import EXAMPLE, run
from helpers.messages import tagged_turn
from sessionstore.cli import listing
from sessionstore.cli.output import Painter
from sessionstore.plumbing.logs import Log
from sessionstore.porcelain.session.heads import HEADS_FILE, HeadsCache
from sessionstore.porcelain.store import SessionStore


def _settle(root: Path) -> None:
    """Date every log, refs directory and title 60 s back: settled, so the next listing caches them
    all and a change after it must be noticed by its key alone."""
    past = time.time() - 60
    for path in [*root.glob("logs/*.jsonl"), *root.glob("refs/checkpoints/*"), *root.glob("titles/*")]:
        os.utime(path, (past, past))


def _uncached(root: Path, tmp_path: Path) -> str:
    """What `session list` prints for the same store read without its cache (a copy with no index/)."""
    copy = tmp_path / "uncached"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("index", "locks"))
    return run(copy, "list").stdout


def _append(root: Path) -> None:
    SessionStore.open(root, warm=False).session("fix-auth").append(tagged_turn(1, 0), compact=False)


def _title_in_place(root: Path) -> None:
    """A title file edited in place (same inode, same size, its old mtime put back): only a read of
    it can tell, so it is read on every listing."""
    path = root / "titles" / "fix-auth"
    st = path.stat()
    with open(path, "r+b") as f:
        f.write(b"L")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


CHANGES: list[tuple[str, Callable[[Path], object]]] = [
    ("append", _append),
    ("checkout", lambda root: run(root, "checkout", "fix-auth@1")),
    ("compact", lambda root: run(root, "compact", "fix-auth")),
    ("fork", lambda root: run(root, "fork", "fix-auth", "copy")),
    ("title", lambda root: run(root, "rename", "fix-auth", "--title", "leeway")),
    ("title edited in place", _title_in_place),
    ("title cleared", lambda root: run(root, "rename", "fix-auth", "--title", "")),
    ("rename", lambda root: run(root, "rename", "copy", "renamed")),
    ("rm", lambda root: run(root, "rm", "renamed")),
    ("undo", lambda root: run(root, "rm", "--undo", "renamed")),
    ("import", lambda root: run(root, "import", str(EXAMPLE), "--as", "again")),
]


def test_every_change_shows_in_the_next_listing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    run(root, "init")
    run(root, "import", str(EXAMPLE))
    _settle(root)
    first = run(root, "list").stdout
    assert first == _uncached(root, tmp_path) and "fix-auth" in first and (root / HEADS_FILE).is_file()
    for what, change in CHANGES:
        before = run(root, "list").stdout  # everything settled is cached now
        result = change(root)
        assert getattr(result, "exit_code", 0) == 0, (what, getattr(result, "output", ""))
        listed = run(root, "list").stdout
        assert listed == _uncached(root, tmp_path), what
        assert listed != before, f"{what}: the listing did not change"
        _settle(root)
        assert run(root, "list").stdout == listed, what  # cached again, the same


def test_a_cached_listing_makes_no_cell_and_reads_no_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    run(root, "init")
    for name in ("a", "b", "c"):
        run(root, "import", str(EXAMPLE), "--as", name)
    _settle(root)
    first = run(root, "list").stdout
    made: list[object] = []
    cells = listing.cells_of

    def counted(store: SessionStore) -> tuple[object, str]:
        make, tag = cells(store)
        return (lambda head: made.append(head) or make(head)), tag

    def refuse(self: Log) -> None:
        raise AssertionError(f"read the head of {self.session} although it is cached")

    monkeypatch.setattr(listing, "cells_of", counted)
    with monkeypatch.context() as patch:
        patch.setattr(Log, "head", refuse)
        assert run(root, "list").stdout == first and made == []
    monkeypatch.setenv("SESSIONSTORE_COMPACT_THRESHOLD", "10")  # the levels move: every band is red
    assert run(root, "list").stdout == first and len(made) == 3  # made again (the colour differs)
    rows = HeadsCache(SessionStore.open(root, warm=False)).load()
    assert [row.cells[2] for row in rows.values()] == ["red"] * 3
    monkeypatch.setenv("SESSIONSTORE_CONTEXT_WINDOW_TOKENS", "20000")  # a setting: the percentages move
    smaller = run(root, "list").stdout
    assert len(made) == 6 and smaller == _uncached(root, tmp_path) != first
    assert HeadsCache(SessionStore.open(root, warm=False)).check() == []


def test_a_coloured_listing_says_what_a_plain_one_says(tmp_path: Path) -> None:
    """Plain, the columns come from the heads cache's memo; coloured, from its rows: the same text."""
    root = tmp_path / "store"
    run(root, "init")
    for name in ("a", "b-long-name", "c"):
        run(root, "import", str(EXAMPLE), "--as", name)
    run(root, "rename", "c", "--title", "set by hand")
    store = SessionStore.open(root, warm=False)
    session = store.session("a")
    with store.lock("a"):
        session.commit_checkpoint(list(session.history), tier=2)
    _settle(root)
    plain, coloured = Painter(False), Painter(True)
    for _ in range(2):  # made, then remembered
        lines = listing.list_lines(store, *listing.table(store, plain), plain)
        painted = listing.list_lines(store, *listing.table(store, coloured), coloured)
        assert listing.table(store, plain)[0] == ["a", "b-long-name", "c"]
        assert all("\x1b[" in line for line in painted) and [click.unstyle(line) for line in painted] == lines
        assert "\n".join(lines) + "\n" == run(root, "list").stdout
        assert "1 checkpoint" in lines[0] and lines[2].endswith("set by hand")
