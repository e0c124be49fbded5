"""`session config` (effective settings and where each came from) and `session gauge NAME`.

Both start without importing pydantic-ai or tiktoken: `gauge` reads what the head commit recorded (its
measured prefix or local `tokens`, its model's capacity), so it is cheap enough for a shell prompt or a
tmux status line. Only a `--model` with a provider prefix, or a commit that names a model without
recording its capacity, imports pydantic-ai to read the model's context window from its profile.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click
import orjson

from ..accounting.settings import ENV_PREFIX, NOT_SETTINGS_ENV, THRESHOLD_ENV, Settings, threshold_override
from ..accounting.thresholds import levels, resolve_window
from ..porcelain.session.gauge import commit_gauge, format_gauge, gauge, line_reading
from .output import (
    colour_enabled,
    complete_rev,
    fail,
    json_options,
    open_store,
    print_json,
    resolve,
    store_settings,
    warn,
)

if TYPE_CHECKING:
    from ..porcelain.store import SessionStore


def _toml_value(value: Any) -> str:
    """How a value would be written in [tool.sessionstore]: true, 0.2, ["a"], {"x": 1}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, tuple | list | dict):
        return orjson.dumps(list(value) if isinstance(value, tuple) else value).decode()
    return repr(value)


def config(settings: Settings, *, fmt: str | None = None) -> int:
    """`session config`: the effective `settings` and where each value came from; exit 0."""
    sources = settings.sources()
    values = settings.as_dict()
    if fmt == "json":
        print_json({key: {"value": values[key], "source": sources[key]} for key in values})
        return 0
    width = max(len(key) for key in values)
    rendered = {key: _toml_value(value) for key, value in values.items()}
    value_width = min(max(len(text) for text in rendered.values()), 40)
    for key, text in rendered.items():
        click.echo(f"{key:<{width}} = {text:<{value_width}}  # {sources[key]}")
    for warning in env_warnings(os.environ, list(values)):
        warn(warning)
    return 0


@click.command("config")
@json_options(stream=False)
@click.pass_context
def config_cmd(ctx: click.Context, fmt: str | None) -> int:
    """Print the effective settings of the store (its project's pyproject.toml, then SESSIONSTORE_*
    variables) and where each value came from.

    \b
    Example:  session config --json | jq .context_window_tokens
    """
    return config(store_settings(ctx), fmt=fmt)


def env_warnings(environ: Mapping[str, str], keys: list[str]) -> list[str]:
    """`SESSIONSTORE_*` variables that silently do nothing: a typo'd name, an unparsable threshold."""
    import difflib

    known = {ENV_PREFIX + key.upper() for key in keys} | NOT_SETTINGS_ENV
    suffixes = sorted(name.removeprefix(ENV_PREFIX) for name in known)  # the shared prefix would match all
    warnings = []
    for name in sorted(n for n in environ if n.startswith(ENV_PREFIX) and n not in known):
        close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1)
        hint = f"did you mean {ENV_PREFIX}{close[0]}?" if close else f"settings are {ENV_PREFIX}<KEY>"
        warnings.append(f"{name} is not a sessionstore variable and is ignored; {hint}")
    raw = environ.get(THRESHOLD_ENV)
    if raw is not None and threshold_override({THRESHOLD_ENV: raw}) is None:
        warnings.append(f"{THRESHOLD_ENV}={raw!r} is ignored: set a positive number of tokens, or unset it")
    return warnings


def gauge_of(store: SessionStore, name: str, *, plain: bool, fmt: str | None, model: str | None) -> int:
    """`session gauge`: one line (or JSON object) saying how full `name`'s window is; exit 0."""
    if model is not None and not model.strip():  # else an unknown-model warning about ''
        raise fail("--model is empty: give a model id (e.g. openai:gpt-4o), or leave --model out")
    settings = store.settings
    commit = resolve(store, name)
    if model is None:
        reading = commit_gauge(commit, settings)  # the log line's capacity and measured prefix
    else:  # an explicit model: its profile's window (this lookup imports pydantic-ai)
        resolved = resolve_window(model, settings)
        used, figure = line_reading(commit)
        reading = gauge(used, resolved, levels(resolved, settings), figure=figure)
    if fmt == "json":
        data = {
            "session": commit.session,
            "commit": commit.id,
            "seq": commit.seq,
            "measured": "measured" in commit.extra,
            **reading.to_json(),
        }
        print_json(data)
        return 0
    color = not plain and colour_enabled()
    click.echo(format_gauge(reading, color=color), color=color)
    return 0


@click.command("gauge")
@click.argument("name", shell_complete=complete_rev)
@click.option("--plain", is_flag=True, help="No colour (for tmux status lines and logs).")
@json_options(stream=False)
@click.option("--model", default=None, help="Model whose window applies (default: the session's own model).")
@click.option("--window", type=int, default=None, help="Configured window in tokens (context_window_tokens).")
@click.pass_context
def gauge_cmd(
    ctx: click.Context, name: str, plain: bool, fmt: str | None, model: str | None, window: int | None
) -> int:
    """One line: how full NAME's context window is, and when compaction fires.

    \b
    Example:  session gauge fix-auth --plain   (for a tmux status line)
    """
    store = open_store(ctx, overrides={"context_window_tokens": window})
    return gauge_of(store, name, plain=plain, fmt=fmt, model=model)
