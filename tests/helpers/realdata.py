"""Where the real transcripts live (../shared/realdata beside the repo), and how tests skip without them.

`TESTS_REALDATA` points elsewhere (a nonexistent path shows what a fresh clone without
../shared skips: only the tests that read real data, each with its reason).
"""

from __future__ import annotations

import os
from pathlib import Path

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
