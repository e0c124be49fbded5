"""Per-model calibration of the local estimate (DESIGN §6 "Calibration"), and the decision figure.

cl100k is not every provider's tokenizer: on real Claude traffic the provider counts a median 29 %
more than cl100k does (benchmarks/RESULTS.md, "Calibration"). Each response with usage tells how the
provider counted the request it answered: `factor = measured input tokens / local estimate of that
same request` (the local estimate of what was really sent: the messages as shaped, plus the tool
definitions). The newest factor per model is kept (a provider changes its counting with the model,
not with the conversation, and on the real data the newest ratio predicted the next request best:
benchmarks/bench_calibration.py), and scales whatever no usage has measured yet: the first request,
the messages after the newest measured response, a history a compaction has just replaced.

For decisions a factor never goes below 1.0: a usage that is present but wrong (a test model's word
count, 50 tokens when streaming) must never let a request be sent over the window; nor above 2.0
(`Calibration.decision_factor` says why). For the same
reason every decision takes the larger of the measured figure and the calibrated local estimate
(`decide`). A factor past 2x (or under 0.5x) is warned about once per model and process, naming it:
either the provider counts very differently or the usage it reports is not a count of the request
(pydantic-ai's in-process test models, whose usage is fake by design, are not warned about).

Kept with the session: the factors ride on every commit line as the `calibration` field (a mapping
model id -> factor, carried from line to line like `model`), so a reopened session, a fork and
`session gauge` (which reads one line) have them without replaying anything.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "FIELD",
    "LOCAL_PROVIDERS",
    "WARN_ABOVE",
    "WARN_BELOW",
    "Calibration",
    "Decision",
    "decide",
    "scale",
]

FIELD = "calibration"
"""The commit line field holding the factors (model id -> measured/local of its newest request)."""

WARN_ABOVE = 2.0
WARN_BELOW = 0.5
"""Factors outside [WARN_BELOW, WARN_ABOVE] are warned about once per model and process."""

LOCAL_PROVIDERS = frozenset({"function", "test"})
"""pydantic-ai's in-process models (FunctionModel, TestModel): no window unless their profile says so,
and a usage that is fake by design (a word count, 50 tokens when streaming), so neither an unknown
window nor a calibration far from 1.0 is warned about for them: decisions are safe either way."""

_warned: set[str] = set()


@dataclass(frozen=True)
class Decision:
    """The figure a decision compares with a level, and which figure it is.

    `tokens` = max(`measured`, `estimate`): `measured` is the provider-measured prefix plus the
    calibrated estimate of what came after it (None when no usage measures the request), `estimate`
    the calibrated local estimate of the whole request. `figure` names the one `tokens` shows."""

    tokens: int
    estimate: int
    measured: int | None

    @property
    def figure(self) -> str:
        """`"measured"` when the measured prefix decides, else `"estimate"`."""
        return "measured" if self.measured is not None and self.measured >= self.estimate else "estimate"


def scale(tokens: int, factor: float) -> int:
    """`tokens` local tokens in provider terms: rounded up, so a scaled estimate errs high."""
    return tokens if factor == 1.0 else math.ceil(tokens * factor)


def decide(local: int, factor: float, measured: int | None = None, unmeasured: int = 0) -> Decision:
    """The decision figure for a request whose local estimate is `local` tokens.

    `measured`: the provider's count of the part a usage measured (input + output of the newest
    response), None when nothing is measured; `unmeasured`: the local estimate of what follows that
    measurement, scaled here. `factor` is the decision factor (`Calibration.decision_factor`)."""
    estimate = scale(local, factor)
    if measured is None:
        return Decision(estimate, estimate, None)
    full = measured + scale(unmeasured, factor)
    return Decision(max(full, estimate), estimate, full)


class Calibration:
    """The factors of one session, model id -> the newest measured/local ratio of that model."""

    def __init__(self, factors: Mapping[str, float] | None = None) -> None:
        self.factors: dict[str, float] = {
            k: float(v) for k, v in (factors or {}).items() if isinstance(v, int | float) and v > 0
        }

    @classmethod
    def of_line(cls, extra: Mapping[str, object]) -> Calibration:
        """The factors a commit line carries (its `calibration` field; none when absent or damaged)."""
        raw = extra.get(FIELD)
        return cls(raw if isinstance(raw, Mapping) else None)

    def factor(self, model: str | None) -> float | None:
        """The newest measured/local ratio of `model`, None when none was learned."""
        return self.factors.get(model) if model else None

    def decision_factor(self, model: str | None) -> float:
        """The factor decisions scale by: the learned one within [1.0, `WARN_ABOVE`] (1.0 when unknown).

        Never below 1.0: a usage that counts less than the local estimate is not trusted to let more
        through. At most 2x: beyond that the difference is not a tokenizer's but something the
        request carries that no local estimate sees (a provider's hidden prompt) or a usage that
        counts something else; it is added, not multiplied: the measured prefix carries it wherever a
        response measures the history, and scaling a whole history by it would compact for nothing."""
        learned = self.factor(model)
        return min(max(1.0, learned), WARN_ABOVE) if learned is not None else 1.0

    def learn(self, model: str, measured: int, local: int) -> float | None:
        """Record `measured / local` for `model` (one response's input tokens over the local estimate
        of the request it answered); returns the factor, None when either count is not positive.
        Warns once per model and process when the two differ by more than 2x either way."""
        if measured <= 0 or local <= 0:
            return None
        factor = round(measured / local, 4)
        self.factors[model] = factor
        local_model = model.split(":", 1)[0] in LOCAL_PROVIDERS
        if (factor > WARN_ABOVE or factor < WARN_BELOW) and model not in _warned and not local_model:
            _warned.add(model)
            warnings.warn(
                f"model {model!r} reported {measured:,} input tokens for a request estimated at "
                f"{local:,} tokens locally ({factor:.2f}x; a tokenizer difference explains at most 2x "
                "either way): decisions take the larger of the two, so no request goes over the window",
                UserWarning,
                stacklevel=4,
            )
        return factor

    def to_field(self) -> dict[str, float]:
        """The `calibration` field of a commit line (sorted: lines are canonical JSON anyway)."""
        return dict(sorted(self.factors.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Calibration) and other.factors == self.factors

    def __repr__(self) -> str:
        return f"Calibration({self.factors!r})"
