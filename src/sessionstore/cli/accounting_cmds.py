"""`session config` (effective settings and where each came from) and `session gauge NAME`.

Both start without importing pydantic-ai or tiktoken: `gauge` reads what the head commit recorded (its
measured prefix or local `tokens`, its model's capacity), so it is cheap enough for a shell prompt or a
tmux status line. Only a `--model` with a provider prefix, or a commit that names a model without
recording its capacity, imports pydantic-ai to read the model's context window from its profile.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click
import orjson

from ..accounting.settings import ENV_PREFIX, NOT_SETTINGS_ENV
from ..accounting.thresholds import THRESHOLD_ENV, levels, resolve_window, threshold_override
from ..porcelain.gauge import commit_gauge, format_gauge, gauge


def _toml_value(value: Any) -> str:
    """How a value would be written in [tool.sessionstore]: true, 0.2, ["a"], {"x": 1}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, tuple | list | dict):
        return orjson.dumps(list(value) if isinstance(value, tuple) else value).decode()
    return repr(value)


def _use_color(plain: bool) -> bool:
    return not plain and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: {key: {value, source}}.")
@click.pass_context
def config(ctx: click.Context, as_json: bool) -> None:
    """Print the effective settings of the store (its project's pyproject.toml, then SESSIONSTORE_*
    variables) and where each value came from."""
    from .output import store_settings

    settings = store_settings(ctx)
    sources = settings.sources()
    values = settings.as_dict()
    if as_json:
        data = {key: {"value": values[key], "source": sources[key]} for key in values}
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
        return
    width = max(len(key) for key in values)
    rendered = {key: _toml_value(value) for key, value in values.items()}
    value_width = min(max(len(text) for text in rendered.values()), 40)
    for key, text in rendered.items():
        click.echo(f"{key:<{width}} = {text:<{value_width}}  # {sources[key]}")
    for warning in env_warnings(os.environ, list(values)):
        click.echo(f"session: {warning}", err=True)


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


@click.command("gauge")
@click.argument("name")
@click.option("--plain", is_flag=True, help="No colour (for tmux status lines and logs).")
@click.option("--json", "as_json", is_flag=True, help="The reading as one JSON object.")
@click.option("--model", default=None, help="Model whose window applies (default: the session's own model).")
@click.option("--window", type=int, default=None, help="Configured window in tokens (context_window_tokens).")
@click.pass_context
def gauge_cmd(
    ctx: click.Context, name: str, plain: bool, as_json: bool, model: str | None, window: int | None
) -> None:
    """One line: how full NAME's context window is, and when compaction fires."""
    from .output import open_store

    store = open_store(ctx, overrides={"context_window_tokens": window})
    settings = store.settings
    commit = store.resolve(name)
    if model is None:
        reading = commit_gauge(commit, settings)  # the log line's capacity and measured prefix
    else:  # an explicit model: its profile's window (this lookup imports pydantic-ai)
        resolved = resolve_window(model, settings)
        reading = gauge(commit.extra.get("measured", commit.tokens), resolved, levels(resolved, settings))
    if as_json:
        data = {
            "session": commit.session,
            "commit": commit.id,
            "seq": commit.seq,
            "measured": "measured" in commit.extra,
            **reading.to_json(),
        }
        click.echo(orjson.dumps(data).decode())
    else:
        click.echo(format_gauge(reading, color=_use_color(plain)), color=_use_color(plain))


COMMANDS: list[click.Command] = [config, gauge_cmd]
