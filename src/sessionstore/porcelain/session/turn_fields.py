"""What a turn's commit line records beside its messages, so readers never load them: the model it ran
on, that model's known capacity, the measured prefix, and the calibration its usage taught.

`session gauge` and `session list` read one line per session: these fields are what they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessionstore.accounting.calibration import FIELD as CALIBRATION_FIELD
from sessionstore.accounting.calibration import Calibration
from sessionstore.accounting.thresholds import measure, model_capacity

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ["calibration_fields", "context_fields", "model_id"]


def model_id(model: Any) -> str:
    """A model's id as the log records it: `provider:name` for a pydantic-ai `Model`, else as given."""
    if isinstance(model, str):
        return model
    system, name = getattr(model, "system", None), getattr(model, "model_name", None)
    return f"{system}:{name}" if system and name else str(name or type(model).__name__)


def context_fields(
    new: list[ModelMessage], sizes: list[int], model: Any, elided: int, *, measured: bool
) -> dict[str, Any]:
    """The model, its known capacity and (when `measured`) the measured prefix of the turn's newest
    response with usage: its input + output plus the local sizes after it, plus what tier 1 `elided`
    from the view it answered (the usage measured the blanked view)."""
    fields: dict[str, Any] = {}
    if model:
        fields["model"] = model_id(model)
        capacity = model_capacity(model)
        if capacity:
            fields["capacity"] = capacity
    m = measure(new, sizes)
    if measured and m.measured_tokens is not None:
        fields["measured"] = m.measured_tokens + elided
    return fields


def calibration_fields(
    calibration: Calibration, new: list[ModelMessage], model: Any, sent_local: int
) -> dict[str, Any]:
    """The `calibration` field once the newest response of `new` taught `model`'s factor (its input
    tokens over `sent_local`, the local estimate of the request it answered); {} when it has no usage.
    `calibration` itself is left alone: the session takes the field from the line once it is written."""
    response = next((m for m in reversed(new) if m.kind == "response"), None)
    measured = response.usage.input_tokens if response is not None else 0
    learned = Calibration(calibration.factors)
    if not isinstance(model, str) or not measured or learned.learn(model, measured, sent_local) is None:
        return {}
    return {CALIBRATION_FIELD: learned.to_field()}
