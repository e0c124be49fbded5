"""Where the real transcripts live (../shared/realdata beside the repo), and how tests skip without them.

`TESTS_REALDATA` points elsewhere (a nonexistent path shows what a fresh clone without
../shared skips: only the tests that read real data, each with its reason).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import orjson

REALDATA = Path(
    os.environ.get("TESTS_REALDATA") or Path(__file__).resolve().parents[3] / "shared" / "realdata"
)
MISSING = f"real data not found at {REALDATA} (the workspace's ../shared/realdata)"


def needs_realdata(err: BaseException) -> bool:
    """True when `err` is a missing file under REALDATA while REALDATA is absent: skip, not fail."""
    if REALDATA.is_dir():
        return False
    where = str(REALDATA)
    filename = getattr(err, "filename", None)
    return (isinstance(filename, str) and filename.startswith(where)) or where in str(err)


def strings_in(value: object, out: list[str]) -> None:
    """Every string inside a parsed JSON value, in order, appended to `out`."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            strings_in(item, out)
    elif isinstance(value, list):
        for item in value:
            strings_in(item, out)


@cache
def realdata_strings() -> tuple[str, ...]:
    """Every string of every JSON and JSONL file under REALDATA (the caller skips when it is absent)."""
    out: list[str] = []
    for path in sorted(REALDATA.rglob("*.json*")):
        data = path.read_bytes()
        try:
            strings_in(orjson.loads(data), out)
        except orjson.JSONDecodeError:  # JSONL
            for line in data.splitlines():
                try:
                    strings_in(orjson.loads(line), out)
                except orjson.JSONDecodeError:
                    continue
    return tuple(out)
