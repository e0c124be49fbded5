"""Windows, trigger levels and the measured prefix (DESIGN §6): every compaction decision goes through here.

`over_threshold` is the only comparison of a token count with a level in the code base (a test scans
the source to keep it so): one definition of "equal does not fire" and "zero fires nothing".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import SettingsError
from .calibration import LOCAL_PROVIDERS, decide
from .settings import Settings, threshold_override

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "Levels",
    "Measurement",
    "Meter",
    "levels",
    "measure",
    "model_capacity",
    "model_of",
    "next_tier",
    "over_threshold",
    "resolve_window",
    "window_for_capacity",
]

LOCAL_MODELS = frozenset({"extractive"})
"""Model names that run locally (no provider, no context window of their own)."""


_warned: set[str] = set()
"""Unknown model ids already warned about in this process (one warning per id, not per call)."""

TIER_NONE, TIER_MICRO, TIER_FULL = 0, 1, 2


# --- window -------------------------------------------------------------------------------------------


def model_of(history: Sequence[ModelMessage]) -> str | None:
    """The model the conversation runs on: the newest response's `model_name` (with provider), whose
    window `resolve_window` gives a session that names no model of its own."""
    for msg in reversed(history):
        if msg.kind == "response" and msg.model_name:
            return f"{msg.provider_name}:{msg.model_name}" if msg.provider_name else msg.model_name
    return None


def model_capacity(model: Any) -> int | None:
    """The model's known context window from its pydantic-ai profile, or None when unknown.

    Accepts a model id (`'anthropic:claude-sonnet-4-5'`) or a pydantic-ai `Model` (its `context_window`).
    """
    if model is None:
        return None
    if not isinstance(model, str):
        capacity = getattr(model, "context_window", None)
        return capacity if isinstance(capacity, int) and capacity > 0 else None
    if model in LOCAL_MODELS or ":" not in model:
        return None  # no provider prefix: pydantic-ai would return its default profile (no window)
    if model in _seeded:
        return _seeded[model]
    return _capacity_of_id(model)


_seeded: dict[str, int | None] = {}
_looked_up: dict[str, int | None] = {}


def seed_capacities(known: Mapping[str, Any]) -> None:
    """Take `known` (model id -> window, or None for none) as what the lookup would answer in this
    process: a store's memo of its earlier lookups under the same pydantic-ai and genai-prices
    versions (`porcelain/session/model_windows.py`). Values that are not a window are ignored."""
    for model, capacity in known.items():
        if isinstance(model, str) and (capacity is None or (type(capacity) is int and capacity > 0)):
            _seeded[model] = capacity


def looked_up() -> dict[str, int | None]:
    """Every model id whose window this process looked up (not seeded), with the answer."""
    return dict(_looked_up)


@lru_cache(maxsize=64)
def _capacity_of_id(model: str) -> int | None:
    # Profiles are static per model id, so this lookup (which imports pydantic-ai) is cached.
    capacity = _lookup_capacity(model)
    _looked_up[model] = capacity
    return capacity


def _lookup_capacity(model: str) -> int | None:
    from pydantic_ai.models import infer_model_profile, parse_model_id

    try:
        capacity = infer_model_profile(model).get("context_window")
    except ImportError:
        # The provider's SDK is not installed (e.g. `openai:` without the openai extra); pydantic-ai's
        # profile would fill the window from genai-prices anyway, so ask genai-prices directly.
        capacity = _genai_prices_window(*parse_model_id(model))
    except Exception:  # an id pydantic-ai cannot profile is an unknown capacity, not a crash
        capacity = None
    return capacity if isinstance(capacity, int) and capacity > 0 else None


def _genai_prices_window(provider: str | None, name: str) -> int | None:
    """The window genai-prices records for `provider:name` (what pydantic-ai's profiles fill in from).

    Asked through genai-prices' own public snapshot API (a dependency of pydantic-ai-slim) rather than
    pydantic-ai's private `_genai_prices` module, which may change in any release.
    """
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:
        return None
    try:
        _, info = get_snapshot().find_provider_model(
            name, provider=None, provider_id=provider, provider_api_url=None
        )
    except Exception:  # LookupError for an unknown model; anything else is an unknown window too
        return None
    window = getattr(info, "context_window", None)
    return window if isinstance(window, int) else None


def resolve_window(model: str | Any | None, settings: Settings, *, replay: bool = False) -> int:
    """The context window triggers and the gauge use: min(model capacity, `context_window_tokens`).

    Both are upper bounds, so the smaller one wins; an unknown or local model ("extractive") leaves the
    configured window alone. `replay=True` gives the replay budget (how much history a resumed session
    may send): the model's capacity alone, falling back to the configured window when unknown.
    """
    capacity = model_capacity(model)
    if capacity is None and isinstance(model, str):
        _warn_unknown(model, settings)
    return window_for_capacity(capacity, settings, replay=replay)


def _warn_unknown(model: str, settings: Settings) -> None:
    """One warning per unknown model id per process: the configured window stands in for its own."""
    provider = model.split(":", 1)[0] if ":" in model else None
    if model in LOCAL_MODELS or (provider or model) in LOCAL_PROVIDERS or model in _warned:
        return
    _warned.add(model)
    hint = "" if provider else " (a model id names its provider, e.g. 'openai:gpt-5')"
    warnings.warn(
        f"unknown model {model!r}{hint}: its context window is not known, so context_window_tokens "
        f"({settings.context_window_tokens:,}) is used; set context_window_tokens to the model's window",
        UserWarning,
        stacklevel=3,
    )


def window_for_capacity(capacity: int | None, settings: Settings, *, replay: bool = False) -> int:
    """`resolve_window` for an already known capacity (e.g. the one a commit line recorded)."""
    configured = settings.context_window_tokens
    if capacity is None or capacity <= 0:
        return configured
    return capacity if replay else min(capacity, configured)


# --- levels -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Levels:
    """Token levels above which a tier fires; micro <= full always."""

    micro: int
    full: int


def _fraction_of(window: int, reserve: float) -> int:
    # round() before floor() so 100 * (1 - 0.4) = 60.00000000000001 (or 59.999...) gives 60.
    return math.floor(round(window * (1.0 - reserve), 6))


def levels(window: int, settings: Settings, *, env: Mapping[str, str] | None = None) -> Levels:
    """Micro and full levels for `window`: window * (1 - reserve fraction), rounded down.

    `SESSIONSTORE_COMPACT_THRESHOLD`, asked of the settings' owner on every call
    (`settings.threshold_override`, from `env` or os.environ), replaces the full level; the micro level
    is then scaled by the same ratio as configured (60/80 of it with the defaults), so micro still
    fires first and debugging one level exercises both tiers.
    """
    if window <= 0:
        raise SettingsError(f"invalid context window {window!r}: must be a positive number of tokens")
    full = _fraction_of(window, settings.full_reserve_fraction)
    micro = _fraction_of(window, settings.micro_reserve_fraction)
    override = threshold_override(env)
    if override is not None:
        ratio = (1.0 - settings.micro_reserve_fraction) / (1.0 - settings.full_reserve_fraction)
        full, micro = override, math.floor(round(override * ratio, 6))
    return Levels(micro=micro, full=full)


def over_threshold(tokens: int, level: int) -> bool:
    """Whether `tokens` is past `level`: strictly greater (equal does not fire), and zero never fires."""
    return tokens > 0 and tokens > level


# --- measured prefix ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """What the triggers compare: the decision figure of DESIGN §6 and what it is made of.

    `tokens` = max(`measured`, `estimate`) (`calibration.decide`): `measured` is the provider-measured
    prefix (`anchor_tokens`, the input + output of the response at index `anchor`) plus the calibrated
    local estimate of the messages after it, None when no usage measures the history; `estimate` is
    the calibrated local estimate of the whole history and `local` the plain one (what `log`, `show`
    and stats report). `factor` is the decision factor both were scaled by (>= 1.0).
    """

    tokens: int
    local: int
    anchor: int | None = None
    anchor_tokens: int = 0
    measured_tokens: int | None = None
    estimate: int | None = None
    factor: float = 1.0

    @property
    def measured(self) -> bool:
        return self.anchor is not None

    @property
    def figure(self) -> str:
        """Which figure `tokens` is: `"measured"` (the measured prefix decides) or `"estimate"`."""
        if self.measured_tokens is not None and self.measured_tokens >= (self.estimate or 0):
            return "measured"
        return "estimate"


def _decided(local: int, factor: float, anchor: int | None, anchor_tokens: int, tail: int) -> Measurement:
    """The measurement of a history: `decide` on its local estimate and, when anchored, its prefix."""
    d = decide(local, factor, anchor_tokens if anchor is not None else None, tail)
    return Measurement(d.tokens, local, anchor, anchor_tokens if anchor is not None else 0, d.measured,
                       d.estimate, factor)  # fmt: skip


def _usage_tokens(usage: Any) -> int | None:
    """input + output of a provider usage, or None when it carries none (input 0 is pydantic-ai's default)."""
    if usage is None:
        return None
    input_tokens = getattr(usage, "input_tokens", 0) or 0
    if input_tokens <= 0:
        return None
    return input_tokens + (getattr(usage, "output_tokens", 0) or 0)


def measure(
    history: Sequence[ModelMessage],
    sizes: Sequence[int],
    last_usage: Any = None,
    *,
    reset_at: int = 0,
    local: int | None = None,
    factor: float = 1.0,
    elided: int = 0,
) -> Measurement:
    """Measure `history` (with its per-message local `sizes`) for the triggers.

    `local`: `sum(sizes)` when the caller already knows it (a session's head records it), so a
    measurement after each turn costs O(messages since the newest response), not O(history).
    `factor`: the decision factor of the session's model (`Calibration.decision_factor`); `elided`:
    tokens of tool output tier 1 blanked from the view the newest response answered (its usage
    measured the blanked view, so they are added back to the measured figure).

    The newest `ModelResponse` at or after `reset_at` anchors the measurement when it carries usage
    (`last_usage`, if given, stands in for that response's own usage): its input + output plus the
    calibrated sizes of the messages after it. A newest response without usage, or none since the
    reset point (a compaction, checkout, fork or import: older responses measured a context that no
    longer exists), leaves the calibrated local estimate alone. Either way `tokens` is never below
    the calibrated local estimate (DESIGN §6: decisions take the larger figure).
    """
    if len(sizes) != len(history):
        raise ValueError(f"sizes has {len(sizes)} entries for {len(history)} messages")
    if local is None:
        local = sum(sizes)
    for index in range(len(history) - 1, max(reset_at, 0) - 1, -1):
        if history[index].kind != "response":
            continue
        measured = _usage_tokens(last_usage if last_usage is not None else history[index].usage)
        if measured is None:
            break  # the newest response has no usage: that invalidates any older measurement
        return _decided(local, factor, index, measured + elided, sum(sizes[index + 1 :]))
    return _decided(local, factor, None, 0, 0)


def next_tier(measurement: Measurement | int, levels: Levels) -> int:
    """Which tier would fire now: 0 none, 1 micro, 2 full."""
    tokens = measurement.tokens if isinstance(measurement, Measurement) else measurement
    if over_threshold(tokens, levels.full):
        return TIER_FULL
    if over_threshold(tokens, levels.micro):
        return TIER_MICRO
    return TIER_NONE


@dataclass
class Meter:
    """The measurement a Session keeps across turns, with DESIGN §6's refresh rules.

    Call `succeeded` after a model request returned, `failed` after one raised, `reset` after a
    compaction, checkout, fork or import replaced the history. `factor` (each call's) is the
    session's decision factor at that moment (`Calibration.decision_factor`).
    """

    current: Measurement | None = None
    reset_at: int = 0

    def succeeded(
        self,
        history: Sequence[ModelMessage],
        sizes: Sequence[int],
        last_usage: Any = None,
        *,
        local: int | None = None,
        factor: float = 1.0,
        elided: int = 0,
    ) -> Measurement:
        """A success measures what was actually sent (or invalidates, if its response has no usage).
        `local`, here and below: `sum(sizes)` when the caller knows it (see `measure`)."""
        self.current = measure(
            history, sizes, last_usage, reset_at=self.reset_at, local=local, factor=factor, elided=elided
        )
        return self.current

    def failed(
        self,
        history: Sequence[ModelMessage],
        sizes: Sequence[int],
        *,
        local: int | None = None,
        factor: float = 1.0,
    ) -> Measurement:
        """A failed request keeps the previous anchor; messages appended since still count locally."""
        previous = self.current
        local = sum(sizes) if local is None else local
        if previous is None or previous.anchor is None or previous.anchor >= len(history):
            self.current = _decided(local, factor, None, 0, 0)
        else:
            tail = sum(sizes[previous.anchor + 1 :])
            self.current = _decided(local, factor, previous.anchor, previous.anchor_tokens, tail)
        return self.current

    def reset(
        self,
        history: Sequence[ModelMessage],
        sizes: Sequence[int],
        *,
        local: int | None = None,
        factor: float = 1.0,
    ) -> Measurement:
        """History replaced: responses before this point no longer measure anything; local decides."""
        self.reset_at = len(history)
        local = sum(sizes) if local is None else local
        self.current = _decided(local, factor, None, 0, 0)
        return self.current
