"""What a run tells its caller and its log about the requests it sent: `RunReport`, `RUN_FIELDS`.

Every size here is a decision figure (DESIGN §6): the larger of the provider-measured prefix (plus the
calibrated estimate of what followed it) and the calibrated local estimate, with `figure` naming which
one it is, so a reader never mistakes a test model's fake usage for a count of what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RUN_FIELDS", "RequestRecord", "RunReport", "run_fields"]

RUN_FIELDS = {
    "run": "the pydantic-ai run id (every line of one run carries the same)",
    "step": "1-based index of this line among the run's lines",
    "requests": "model requests whose responses this line holds",
    "peak": "the largest of those requests as sent, in tokens (the decision figure, DESIGN §6)",
    "peak_figure": "which figure `peak` is: measured (the provider's prefix decided) or estimate",
    "mid_run": "true on every line but the run's last: a compaction right after it is a mid-run checkpoint",
}
"""Extra fields of the turn lines a run writes (`session log --json` shows them)."""


@dataclass(frozen=True)
class RequestRecord:
    """One model request of a run: `tokens` sent (the decision figure, DESIGN §6) against `window`,
    `measured` the same before protection, the highest `tier` applied (0 none, 1, 2 mid-run checkpoint,
    3), `figure` which figure `tokens` is (`"measured"` or `"estimate"`) and `local` the plain local
    estimate of what was sent (messages and tool definitions), which its response's usage calibrates."""

    tokens: int
    measured: int
    window: int
    tier: int
    figure: str = "estimate"
    local: int = 0


@dataclass
class RunReport:
    """Every request the capability protected (all runs it served, oldest first)."""

    requests: list[RequestRecord] = field(default_factory=list)
    checkpoints: int = 0
    """Mid-run checkpoints (tier 2 compactions written inside a run)."""

    @property
    def peak(self) -> int:
        """The largest request sent, in tokens (0 before any request): the decision figure, the
        larger of the measured prefix and the calibrated local estimate (`peak_figure` says which)."""
        return max((r.tokens for r in self.requests), default=0)

    @property
    def peak_figure(self) -> str | None:
        """Which figure `peak` is (`"measured"` or `"estimate"`); None before any request."""
        if not self.requests:
            return None
        return max(self.requests, key=lambda r: r.tokens).figure


def run_fields(records: list[RequestRecord], *, step: int, run_id: str | None, final: bool) -> dict[str, Any]:
    """The run fields of a line holding the responses to `records` (see `RUN_FIELDS`)."""
    fields: dict[str, Any] = {"step": step, "requests": len(records)}
    if run_id:
        fields["run"] = run_id
    if records:
        top = max(records, key=lambda r: r.tokens)
        fields["peak"], fields["peak_figure"] = top.tokens, top.figure
    if not final:
        fields["mid_run"] = True
    return fields
