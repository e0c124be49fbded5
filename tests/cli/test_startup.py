"""What `session list` imports (issue 16 item 5): exactly the modules it needs, nothing heavy.

Start-up is most of what a small listing costs, and one module-level import (the writer, pydantic-ai,
a tokenizer, tomllib) can double it without any test noticing. These run the real entry point in a
fresh interpreter and compare what it loaded on top of `import click` with a pinned list, so adding
an import to the list path fails here with the module named; make it lazy or, when `list` really
needs it, add it to the list with the reason. (Timings are benchmarks/bench_perf.py's job.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import orjson
import pytest

from helpers.messages import tagged_turn
from helpers.untitled import written_before_titles
from sessionstore.porcelain.session.heads import HEADS_FILE
from sessionstore.porcelain.store import SessionStore

PROBE = """
import sys
import click
before = set(sys.modules)
import orjson as _json_out  # the probe's own output format, not the command's: never counted
before.add("orjson")
before.update(m for m in sys.modules if m.startswith("orjson"))
from sessionstore.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
added = sorted(set(sys.modules) - before)
sys.stderr.write(_json_out.dumps({"code": code, "added": added}).decode() + "\\n")
"""

STORE_PATH = {
    "sessionstore", "sessionstore.errors", "sessionstore.cli", "sessionstore.cli.main",
    "sessionstore.cli.output", "sessionstore.cli.store_cmds", "sessionstore.accounting",
    "sessionstore.accounting.settings", "sessionstore.plumbing", "sessionstore.plumbing.fsutil",
    "sessionstore.plumbing.names", "sessionstore.plumbing.locks", "sessionstore.plumbing.logs",
    "sessionstore.plumbing.commits", "sessionstore.plumbing.file_backend",
    "sessionstore.plumbing.objects", "sessionstore.plumbing.refs", "sessionstore.porcelain",
    "sessionstore.porcelain.session", "sessionstore.porcelain.session.layout",
    "sessionstore.porcelain.session.heads", "sessionstore.porcelain.session.heads_file",
    "sessionstore.porcelain.store", "sessionstore.porcelain.session.log_stats", "sessionstore.cli.listing",
    "sessionstore.cli.list_filters",  # `--sort`, `--since`, PATTERN (stdlib only: re, datetime, fnmatch)
    "sessionstore.plumbing.storedir", "sessionstore.porcelain.session.log_marks",
    "sessionstore.plumbing.forks",  # what a forked child must not inherit (registered as the store opens)
    "sessionstore.plumbing.collector",  # the cyclic collector paused while the heads listing builds rows
}  # fmt: skip
"""Opening a store and listing its logs: what an empty store's `session list` loads."""
ROWS = {
    "sessionstore.porcelain.history", "sessionstore.porcelain.history.naming",
    "sessionstore.porcelain.session.file_moves",  # set titles (`file_moves.titles_dir`)
    "sessionstore.porcelain.history.lookup",
    "sessionstore.porcelain.session.revisions",  # naming's `conversation_of`
    "sessionstore.porcelain.session.first_request",  # the title rules, and the field that records one
}  # fmt: skip
"""Added once there are rows to print from the heads cache: its cells are the rendered columns."""
CELLS = {  # the context column: the window, and the calibrated reading (DESIGN §6)
    "sessionstore.accounting.thresholds", "sessionstore.accounting.calibration",
    "sessionstore.porcelain.session.gauge",
}  # fmt: skip
"""Added to make the cells of a head the cache lacks (and for `--json`, which reads every head)."""
DERIVING = {"sessionstore.formats", "sessionstore.formats.injected"}
"""Added only when a title must be derived from a first blob (a session the cache has not seen, whose
log was written before titles were recorded on its lines): what
names injected context (`naming` reads a prompt's text itself; `search` only for a content that is
no string)."""

HEAVY = {
    "pydantic", "pydantic_core", "pydantic_ai", "tiktoken", "tiktoken_ext", "bpe_openai", "tomllib",
    "decimal", "concurrent", "asyncio", "secrets", "subprocess", "difflib", "shutil", "tempfile",
    "logging", "email", "http", "urllib.request", "zipfile", "sqlite3", "ssl", "socket",
}  # fmt: skip
"""Never on the list path (tomllib too: the store and the working directory have no pyproject.toml)."""


def _list(root: Path, *args: str) -> tuple[str, set[str]]:
    """Run `session --store ROOT list ARGS` in a fresh interpreter started in `root`'s parent (no
    pyproject.toml above it); (stdout, the modules it imported on top of `import click`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONSTORE_") and k != "NO_COLOR"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, "--store", str(root), "list", *args],
        capture_output=True, text=True, env=env, cwd=root.parent, timeout=60,
    )  # fmt: skip
    report = orjson.loads(result.stderr.splitlines()[-1])
    assert report["code"] in (0, None), result.stderr
    return result.stdout, set(report["added"])


def _ours(added: set[str]) -> set[str]:
    return {m for m in added if m.split(".")[0] == "sessionstore"}


def _heavy(added: set[str]) -> set[str]:
    return {m for m in added if m in HEAVY or m.split(".")[0] in HEAVY}


def _filled(tmp_path: Path, *, titled: bool = True) -> Path:
    """A store of three sessions, their titles recorded on their lines (`titled`) or not (logs
    written before the `title` field: titles derived from their first blobs)."""
    root = tmp_path / "work" / "store"
    store = SessionStore.open(root, warm=False)
    with nullcontext() if titled else written_before_titles():
        for i in range(3):
            store.session(f"s{i}").append(tagged_turn(i, 0), compact=False)
    past = time.time() - 60  # settled: the first listing caches every head
    for log in store.logs_dir.glob("*.jsonl"):
        os.utime(log, (past, past))
    return root


def test_an_empty_store_loads_only_the_store(tmp_path: Path) -> None:
    root = tmp_path / "work" / "store"
    SessionStore.open(root, warm=False)
    assert not (root.parent / "pyproject.toml").exists()
    _, added = _list(root)
    assert _ours(added) == STORE_PATH, (
        f"unexpected: {sorted(_ours(added) - STORE_PATH)}, missing: {sorted(STORE_PATH - _ours(added))}"
    )
    assert not _heavy(added), sorted(_heavy(added))


@pytest.mark.parametrize("titled", [True, False])
def test_a_cached_listing_loads_the_rows_and_nothing_else(tmp_path: Path, titled: bool) -> None:
    root = _filled(tmp_path, titled=titled)
    first, added = _list(root)  # takes (or derives from the first blobs) the titles, writes the cache
    assert _ours(added) == STORE_PATH | ROWS | CELLS | (set() if titled else DERIVING), sorted(added)
    assert _heavy(added) == {"secrets"}  # the cache's temp file name (fsutil.write_temp)
    assert (root / HEADS_FILE).is_file()
    again, added = _list(root)
    assert again == first and [line.split()[0] for line in again.splitlines()] == ["s0", "s1", "s2"]
    assert _ours(added) == STORE_PATH | ROWS, (
        f"unexpected: {sorted(_ours(added) - STORE_PATH - ROWS)}, "
        f"missing: {sorted((STORE_PATH | ROWS) - _ours(added))}"
    )
    assert not _heavy(added), sorted(_heavy(added))  # no secrets either: an unchanged cache is not rewritten


@pytest.mark.parametrize("fmt", ["--json", "--jsonl"])
def test_machine_readable_listings_stay_as_lean(tmp_path: Path, fmt: str) -> None:
    root = _filled(tmp_path)
    _list(root)  # the cache
    out, added = _list(root, fmt)
    assert _ours(added) == STORE_PATH | ROWS | CELLS and not _heavy(added), sorted(added)
    records = orjson.loads(out) if fmt == "--json" else [orjson.loads(line) for line in out.splitlines()]
    assert [r["name"] for r in records] == ["s0", "s1", "s2"]
