"""What callers hand a `Session` (messages, usage, a focus), checked before any work starts.

Each refusal is a `SessionStoreError` with one line naming what was passed and what to pass instead:
a `TypeError` from deep inside the write path would tell an API user nothing about their mistake.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sessionstore.errors import SessionStoreError

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage


def usage_dict(usage: Any) -> dict[str, Any] | None:
    """Provider usage as stored in a commit: the non-zero fields of a pydantic-ai usage object."""
    if usage is None:
        return None
    if dataclasses.is_dataclass(usage) and not isinstance(usage, type):
        usage = dataclasses.asdict(usage)
    if not isinstance(usage, dict):
        raise SessionStoreError(
            f"usage must be a pydantic-ai RequestUsage/RunUsage or a dict, not {type(usage).__name__}"
        )
    # pydantic-ai prices known models: `cost` is a Decimal (USD), stored as a JSON number.
    kept = {k: float(v) if isinstance(v, Decimal) and v.is_finite() else v for k, v in usage.items() if v}
    for key, value in kept.items():
        if isinstance(value, dict):  # `details`: provider-specific counters
            continue
        count = isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= 0
        if not count:
            raise SessionStoreError(
                f"usage field {key!r} = {value!r} is not a token count: pass result.usage (a RunUsage), "
                "or a dict of non-negative numbers"
            )
    return kept or None


def check_messages(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """`messages` as a non-empty list of `ModelRequest`/`ModelResponse`, or a one-line refusal."""
    from pydantic_ai.messages import ModelRequest, ModelResponse

    if isinstance(messages, ModelRequest | ModelResponse):
        raise SessionStoreError(
            f"append takes a list of messages, got one {type(messages).__name__}: pass [message], "
            "or result.new_messages()"
        )
    if isinstance(messages, str | bytes | dict) or not isinstance(messages, Iterable):
        kind = type(messages).__name__
        raise SessionStoreError(f"append takes a list of messages (result.new_messages()), not {kind}")
    new = list(messages)
    if not new:
        raise SessionStoreError("nothing to append: pass the run's new messages (result.new_messages())")
    bad = [type(m).__name__ for m in new if not isinstance(m, ModelRequest | ModelResponse)]
    if bad:
        raise SessionStoreError(f"append takes pydantic-ai ModelRequest/ModelResponse messages, got {bad[0]}")
    return new


def check_focus(focus: object) -> str | None:
    """A compaction focus: None or text."""
    if focus is not None and not isinstance(focus, str):
        raise SessionStoreError(
            f"focus must be text saying what the summary should keep (or None), not {type(focus).__name__}"
        )
    return focus
