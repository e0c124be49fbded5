"""The one `Settings` object every layer reads (DESIGN §10).

Loading order, later wins: defaults, `[tool.sessionstore]` in the nearest pyproject.toml, `SESSIONSTORE_*`
environment variables, CLI flags. (Loader: see `Settings.load`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settings:
    """Effective configuration; invalid values are refused at load with the key named."""

    compaction_enabled: bool = True
    ultimate_compaction_enabled: bool = True
    context_window_tokens: int = 1_048_576
    full_reserve_fraction: float = 0.20
    micro_reserve_fraction: float = 0.40
    keep_recent_tokens: int = 20_000
    micro_keep_recent_tokens: int = 4_000
    protected_tools: tuple[str, ...] = ()
    tool_priority: dict[str, int] = field(default_factory=dict)
    ultimate_keep_checkpoints: int = 3
    memory_max_lines: int = 200
    memory_max_bytes: int = 25_000
    memory_compression_enabled: bool = True
    model: str = "extractive"
    lock_timeout_s: float = 10.0
