"""The one `Settings` object every layer reads (DESIGN §10).

Loading order, later wins: defaults, `[tool.sessionstore]` in the nearest pyproject.toml, `SESSIONSTORE_*`
environment variables, CLI flags (`overrides`). Every value is checked where it enters, so a bad one is
refused with the key, the value, where it came from and what is allowed, instead of surfacing later as
a compaction that never fires.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import SettingsError

ENV_PREFIX = "SESSIONSTORE_"
THRESHOLD_ENV = "SESSIONSTORE_COMPACT_THRESHOLD"
"""The debug override of the full compaction level, in tokens (DESIGN §6): not a setting, which is
loaded once, but read on every call of `threshold_override`, never cached."""
NOT_SETTINGS_ENV = frozenset({"SESSIONSTORE_DIR", THRESHOLD_ENV, "SESSIONSTORE_BIN"})
"""`SESSIONSTORE_*` variables that are not settings: the store's location and the git hook's `session`
executable (other owners), and the debug trigger level (read per call, `threshold_override`)."""

TOKENIZERS = ("bpe-openai", "tiktoken", "auto")
"""The `tokenizer` setting's values (accounting/tokenizer.py's backends, and auto)."""

KIND = "kind"
"""The metadata key of a `Settings` field holding its kind: how its environment text is parsed and
what a value must be (a key of `_ALLOWED`)."""

DEFAULT_SOURCE = "default"
OVERRIDE_SOURCE = "flag"


def setting(kind: str, default: Any) -> Any:
    """A `Settings` field of `kind` defaulting to `default` (a type such as `dict`: a fresh one per
    instance). The field is the one place a setting is declared: loading, checking, `session config`
    and the list of known keys all read the dataclass's fields."""
    if isinstance(default, type):
        return field(default_factory=default, metadata={KIND: kind})
    return field(default=default, metadata={KIND: kind})


@dataclass(frozen=True)
class Settings:
    """Effective configuration; invalid values are refused at load with the key named."""

    compaction_enabled: bool = setting("bool", True)
    ultimate_compaction_enabled: bool = setting("bool", True)
    context_window_tokens: int = setting("positive_int", 1_048_576)
    full_reserve_fraction: float = setting("fraction", 0.20)
    micro_reserve_fraction: float = setting("fraction", 0.40)
    keep_recent_tokens: int = setting("nonneg_int", 20_000)
    micro_keep_recent_tokens: int = setting("nonneg_int", 4_000)
    protected_tools: tuple[str, ...] = setting("str_list", ())
    tool_priority: dict[str, int] = setting("int_dict", dict)  # noqa: RUF009 (a field: dict is its factory)
    ultimate_keep_checkpoints: int = setting("nonneg_int", 3)
    memory_max_lines: int = setting("positive_int", 200)
    memory_max_bytes: int = setting("positive_int", 25_000)
    memory_compression_enabled: bool = setting("bool", True)
    model: str = setting("nonempty_str", "extractive")
    lock_timeout_s: float = setting("nonneg_float", 10.0)
    tokenizer: str = setting("tokenizer", "bpe-openai")
    """The cl100k_base counter (DESIGN §6): "bpe-openai" (fast to load and count) or "tiktoken" (the
    reference); both give identical ids. Process-wide: the first store opened picks it."""
    count_process: bool = setting("bool", True)
    """Count a turn's longest texts in a second process while the writing thread encodes and checks
    its blob (accounting/count_process.py): on where the process may use 2+ CPUs and the backend
    holds the GIL (bpe-openai). Same counts either way. Process-wide, like `tokenizer`."""
    summary_max_tokens: int = setting("positive_int", 4_000)
    """Ceiling on a tier-2 summary's own text: the skeleton (a model's, or the offline one), the work
    log and the rules found in files. The user's words have their own budget."""
    summary_user_tokens: int = setting("positive_int", 20_000)
    """Ceiling on the user's own words a tier-2 summary quotes verbatim (`## What the user said`).
    With the rest, a summary never takes more than a quarter of the full level (compaction/full.py)."""

    def __post_init__(self) -> None:
        # Direct construction is validated too, so no code path holds an impossible Settings.
        for key in KINDS:
            object.__setattr__(self, key, _check(key, getattr(self, key), "argument"))
        _check_together({key: getattr(self, key) for key in KINDS}, lambda key: "argument")

    @classmethod
    def load(
        cls,
        *,
        start: Path | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> Settings:
        """Defaults < nearest pyproject.toml from `start` (default: cwd) < `env` < `overrides`.

        `env` defaults to os.environ. An override whose value is None counts as not given (an unset CLI flag).
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        pyproject = find_pyproject(start if start is not None else Path.cwd())
        if pyproject is not None:
            label = f"pyproject.toml ({pyproject})"
            for key, raw in _read_table(pyproject).items():
                if key not in KINDS:
                    raise SettingsError(
                        f"unknown setting {key!r} in [tool.sessionstore] of {pyproject}; "
                        f"known keys: {', '.join(KINDS)}"
                    )
                values[key], sources[key] = _check(key, raw, label), label
        environ = os.environ if env is None else env
        for key in KINDS:
            name = ENV_PREFIX + key.upper()
            if name in environ:
                label = f"env {name}"
                values[key], sources[key] = _check(key, _parse_env(key, environ[name], label), label), label
        for key, raw in (overrides or {}).items():
            if key not in KINDS:
                raise SettingsError(f"unknown setting {key!r}; known keys: {', '.join(KINDS)}")
            if raw is not None:
                values[key], sources[key] = _check(key, raw, OVERRIDE_SOURCE), OVERRIDE_SOURCE
        merged = {key: values.get(key, _default(key)) for key in KINDS}
        _check_together(merged, lambda key: sources.get(key, DEFAULT_SOURCE))
        settings = cls(**merged)
        object.__setattr__(settings, "_sources", dict(sources))
        return settings

    def sources(self) -> dict[str, str]:
        """Where each effective value came from: 'default', 'pyproject.toml (path)', 'env NAME', 'flag'."""
        recorded: dict[str, str] = getattr(self, "_sources", {})
        result = {}
        for key in KINDS:
            if key in recorded:
                result[key] = recorded[key]
            else:
                result[key] = DEFAULT_SOURCE if getattr(self, key) == _default(key) else "argument"
        return result

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values (tuples as lists), in declaration order."""
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in ((key, getattr(self, key)) for key in KINDS)
        }


KINDS: dict[str, str] = {f.name: f.metadata[KIND] for f in dataclasses.fields(Settings)}
"""Every setting's kind, in declaration order: read from the fields, never written twice."""

_ALLOWED = {
    "bool": "true or false",
    "positive_int": "an integer > 0",
    "nonneg_int": "an integer >= 0",
    "fraction": "a number strictly between 0 and 1",
    "nonneg_float": "a number >= 0",
    "str_list": "a list of strings",
    "int_dict": "a table/object of string keys to integers",
    "nonempty_str": "a non-empty string",
    "tokenizer": "one of bpe-openai, tiktoken (or auto: bpe-openai, else tiktoken)",
}

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _default(key: str) -> Any:
    spec = Settings.__dataclass_fields__[key]
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return spec.default


def _refuse(key: str, value: Any, source: str) -> SettingsError:
    return SettingsError(f"invalid {key} = {value!r} (from {source}): must be {_ALLOWED[KINDS[key]]}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(key: str, value: Any, source: str) -> Any:
    """The normalized value for `key`, or SettingsError naming key, value, source and what is allowed."""
    kind = KINDS[key]
    ok = False
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind in ("positive_int", "nonneg_int"):
        ok = _is_int(value) and (value > 0 if kind == "positive_int" else value >= 0)
    elif kind in ("fraction", "nonneg_float"):
        if (_is_int(value) or isinstance(value, float)) and math.isfinite(value):
            value = float(value)
            ok = 0.0 < value < 1.0 if kind == "fraction" else value >= 0.0
    elif kind == "str_list":
        if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            value, ok = tuple(value), True
    elif kind == "int_dict":
        if isinstance(value, Mapping) and all(isinstance(k, str) and _is_int(v) for k, v in value.items()):
            value, ok = dict(value), True
    elif kind == "nonempty_str":
        ok = isinstance(value, str) and bool(value.strip())
    elif kind == "tokenizer":
        ok = isinstance(value, str) and value.strip().lower() in TOKENIZERS
        value = value.strip().lower() if ok else value
    if not ok:
        raise _refuse(key, value, source)
    return value


def _check_together(values: Mapping[str, Any], source_of: Any) -> None:
    """Rules across keys: micro compaction must fire before full compaction."""
    micro, full = values["micro_reserve_fraction"], values["full_reserve_fraction"]
    if micro <= full:
        raise SettingsError(
            f"invalid micro_reserve_fraction = {micro!r} (from {source_of('micro_reserve_fraction')}): "
            f"must be greater than full_reserve_fraction = {full!r} "
            f"(from {source_of('full_reserve_fraction')}), "
            "so micro compaction fires first"
        )


def _parse_env(key: str, text: str, source: str) -> Any:
    """Environment text to a typed value; the type check happens afterwards in `_check`."""
    kind = KINDS[key]
    stripped = text.strip()
    try:
        if kind == "bool":
            lowered = stripped.lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            return text
        if kind in ("positive_int", "nonneg_int"):
            return int(stripped.replace("_", ""))
        if kind in ("fraction", "nonneg_float"):
            return float(stripped)
        if kind == "str_list":
            if stripped.startswith("["):
                return orjson.loads(stripped)
            return [item.strip() for item in stripped.split(",") if item.strip()]
        if kind == "int_dict":
            return orjson.loads(stripped) if stripped else {}
    except ValueError:  # orjson.JSONDecodeError is a ValueError
        raise _refuse(key, text, source) from None
    return text


def threshold_override(env: Mapping[str, str] | None = None) -> int | None:
    """`SESSIONSTORE_COMPACT_THRESHOLD` as a positive int, or None (unset, non-positive or unparsable):
    read now from `env` (default: os.environ), on every call, so `thresholds.levels` sees a change
    made under a running process."""
    raw = (os.environ if env is None else env).get(THRESHOLD_ENV)
    if raw is None:
        return None
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        return None
    return value if value > 0 else None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start`; it marks the project, so the search stops there."""
    # os.path rather than pathlib: every store open runs this (about 4x cheaper, ~0.4 ms of a resume)
    here = os.path.realpath(start)
    if os.path.isfile(here):
        here = os.path.dirname(here)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            return Path(candidate)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


_tables: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}
"""`[tool.sessionstore]` per pyproject.toml, keyed by the file's (size, mtime_ns, inode): a process
that opens many stores (a server, resuming sessions) parses each file once, and an edit is seen."""


def _read_table(pyproject: Path) -> dict[str, Any]:
    try:
        st = pyproject.stat()
    except OSError as err:
        raise SettingsError(f"cannot read {pyproject}: {err}; fix the file or its permissions") from None
    key = (st.st_size, st.st_mtime_ns, st.st_ino)
    cached = _tables.get(pyproject)
    if cached is not None and cached[0] == key:
        return dict(cached[1])
    try:
        raw = pyproject.read_bytes()
    except OSError as err:
        raise SettingsError(f"cannot read {pyproject}: {err}; fix the file or its permissions") from None
    if b"sessionstore" not in raw and b"\\u" not in raw and b"\\U" not in raw:
        # No key of the file can name our table (short of a \u escape in a quoted key): nothing to
        # parse, and a command run in someone else's project does not pay for tomllib.
        _tables[pyproject] = (key, {})
        return {}
    import tomllib  # only when the file may configure us: keeps CLI start-up lean

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise SettingsError(f"cannot read {pyproject}: {err}; fix the file or its permissions") from None
    tool = data.get("tool", {})  # `tool = 5` is some other tool's problem, not a crash of ours
    table = tool.get("sessionstore", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise SettingsError(f"[tool.sessionstore] in {pyproject} must be a table, not {type(table).__name__}")
    _tables[pyproject] = (key, table)
    return dict(table)
