"""Starting the child-process helpers with `tests/` importable."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HELPERS = Path(__file__).resolve().parent


def spawn(
    script: str,
    *args: object,
    stdin: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[str]:
    """Start `tests/helpers/<script>` with this interpreter (in `cwd`, when given); stdout is read as
    text lines. `env` replaces this process's environment (PYTHONPATH is set either way)."""
    base = os.environ if env is None else env
    env = {
        **base,
        "PYTHONPATH": os.pathsep.join([str(HELPERS.parent), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, str(HELPERS / script), *map(str, args)],
        stdout=subprocess.PIPE,
        stdin=stdin,
        text=True,
        bufsize=1,
        env=env,
        cwd=cwd,
    )


def stop(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM `proc` and reap it; SIGKILL if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
