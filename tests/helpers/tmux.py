"""Driving a program in a real terminal: tmux on a private socket, send-keys to type, capture-pane to read.

Each `Terminal` has its own tmux server (`-L`), so tests never see each other's panes (or a user's).
`wait_for` polls the screen until a text appears; it fails with the screen it last saw.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest


def require_tmux() -> str:
    path = shutil.which("tmux")
    if path is None:
        pytest.skip("tmux not found on PATH (apt-get install tmux; .ci/run installs it)")
    return path


class Terminal:
    """One tmux pane running `argv` in a terminal of `width` x `height`."""

    def __init__(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], width: int = 150, height: int = 40
    ) -> None:
        self.tmux = require_tmux()
        self.socket = f"sessionstore-test-{uuid.uuid4().hex[:12]}"
        # The pane stays after the program exits, so its last screen and exit status can be read.
        command = " ".join(shlex.quote(a) for a in argv)
        env = {**env, "TERM": "xterm-256color"}
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c", str(cwd),
                   f"env -i {exports} {command}; echo \"[exit $?]\"; sleep 600")  # fmt: skip

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, "-f", os.devnull, *args],
            capture_output=True, text=True, timeout=20, check=True,
        )  # fmt: skip
        return done.stdout

    def type(self, text: str) -> None:
        """Type `text` literally (no key names), then Enter."""
        self._tmux("send-keys", "-t", "t", "-l", text)
        self._tmux("send-keys", "-t", "t", "Enter")

    def key(self, name: str) -> None:
        """Press one key by tmux name: C-c, C-d, Enter."""
        self._tmux("send-keys", "-t", "t", name)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t", "-S", "-2000")

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 30.0) -> str:
        """The screen once it contains `what` (or `what(screen)` holds); fails after `timeout` seconds."""
        check = (lambda s: what in s) if isinstance(what, str) else what
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what!r}; the screen was:\n{screen}")

    def footer(self) -> str:
        """The last non-blank line of the visible pane (where the bottom toolbar is drawn)."""
        lines = [ln for ln in self._tmux("capture-pane", "-p", "-t", "t").splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    def footer_with_colours(self) -> str:
        """The footer line with its SGR escape sequences (`capture-pane -e`)."""
        lines = [ln for ln in self._tmux("capture-pane", "-p", "-e", "-t", "t").splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    def close(self) -> None:
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], capture_output=True, check=False)
