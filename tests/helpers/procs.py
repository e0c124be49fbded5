"""Starting the child-process helpers with `tests/` importable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HELPERS = Path(__file__).resolve().parent


def spawn(script: str, *args: object, stdin: int | None = None) -> subprocess.Popen[str]:
    """Start `tests/helpers/<script>` with this interpreter; stdout is read as text lines."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HELPERS.parent), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, str(HELPERS / script), *map(str, args)],
        stdout=subprocess.PIPE,
        stdin=stdin,
        text=True,
        bufsize=1,
        env=env,
    )
