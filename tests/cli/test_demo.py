"""The demo's lines are true (issue 10): each turn's peak is the largest request the model received."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessionstore.accounting.tokens import estimate_messages
from sessionstore.cli import demo


def test_every_turn_line_shows_its_peak_request_and_the_mid_run_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    received: dict[int, list[int]] = {}
    real = demo._Scripted.__call__

    def recording(self: demo._Scripted, messages: list, info: object) -> object:
        size = sum(estimate_messages(messages))
        response = real(self, messages, info)  # type: ignore[arg-type]
        received.setdefault(self.turn + 1, []).append(size)  # the step this request belongs to
        return response

    monkeypatch.setattr(demo._Scripted, "__call__", recording)
    lines: list[str] = []
    demo.run_demo(tmp_path / "s", lines.append, color=False)
    turns = [line for line in lines if line.startswith("turn ")]
    assert len(turns) == len(demo.SCRIPT)
    for line in turns:
        m = re.match(r"turn +(\d+) peak ([\d,]+)/([\d,]+) tok in (\d+) reqs?", line)
        assert m, line
        n, peak, window, requests = (
            int(m[1]),
            int(m[2].replace(",", "")),
            int(m[3].replace(",", "")),
            int(m[4]),
        )
        assert window == demo.DEMO_WINDOW and peak <= window, line
        assert requests == len(received[n]) == len(demo.SCRIPT[n - 1].calls) + 1, line
        # the peak is the decision figure of the largest request (DESIGN §6): at least what the model got,
        # at most that with the provider's overhead, scaled by the calibration (at most 2x) it taught
        assert max(received[n]) <= peak <= 2 * max(received[n]) + demo.PROVIDER_OVERHEAD, (line, received[n])
    assert any("mid-run tier 2" in line for line in turns), "a tool loop crosses the full level mid-run"
    assert any("mid-run tier 3" in line for line in turns)
    long_loop = turns[9]
    assert "in 13 reqs" in long_loop and "mid-run tier 2" in long_loop
