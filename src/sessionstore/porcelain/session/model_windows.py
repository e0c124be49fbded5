"""Each model's context window as this store last looked it up: `index/windows.json`.

A turn's commit line records its model's window (`capacity`), and the cascade needs it to decide. For
an id such as `anthropic:claude-sonnet-4-5` the window comes from pydantic-ai's profile, which for
most providers means importing genai-prices' price table (a 1.6 MB module: 30-80 ms measured), so the
first turn of every fresh process paid that: a one-shot script's append, `session import`, a
server's first request. The store remembers what the lookups answered instead, as a derived cache:

- `{"versions": [pydantic-ai's, genai-prices'], "windows": {model id: window or null}}`; under other
  versions the file is ignored (and rewritten), so an upgrade that corrects a window is seen at once;
- read once per store per process, when a session is first written (`load`), and rewritten after a
  commit whose model's window this process looked up and the file lacked (`save`), atomically;
- missing, damaged or unreadable: the windows are looked up as before; a linked `index/` is never
  followed: a commit that would record a window there is refused before it writes anything
  (`before_commit`), as every writer refuses a linked store directory; git ignores `index/`;
- file stores only: an object store has no `index/` of its own here.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.accounting import thresholds
from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.fsutil import atomic_replace, read_regular

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout

__all__ = ["WINDOWS_FILE", "before_commit", "load", "save"]

WINDOWS_FILE = Path("index") / "windows.json"

_loaded: set[str] = set()
"""Roots whose file this process has read."""
_saved: dict[str, set[str]] = {}
"""Per root, the model ids its file holds (as this process last read or wrote it)."""


def _versions() -> list[str]:
    import pydantic_ai

    try:
        import genai_prices  # pydantic-ai imports it already: no cost

        prices = str(genai_prices.__version__)
    except ImportError:
        prices = "-"
    return [str(getattr(pydantic_ai, "__version__", "-")), prices]


def _read(store: StoreLayout) -> dict[str, Any] | None:
    """The windows the file holds under this process's versions, or None (missing, damaged, other)."""
    with suppress(OSError, SessionStoreError, orjson.JSONDecodeError):
        home = store.top / WINDOWS_FILE.parent.name
        data = orjson.loads(read_regular(home.check() / WINDOWS_FILE.name, what=str(WINDOWS_FILE)))
        windows = data.get("windows") if isinstance(data, dict) else None
        if isinstance(windows, dict) and data.get("versions") == _versions():
            return windows
    return None


def load(store: StoreLayout) -> None:
    """Seed this process's window lookups from the store's file (once per store per process)."""
    key = str(store.root)
    if key in _loaded or store.on_object_storage:
        return
    _loaded.add(key)
    windows = _read(store) or {}
    thresholds.seed_capacities(windows)
    _saved[key] = set(windows)


def _unsaved(store: StoreLayout, model: Any) -> dict[str, int | None]:
    """`{model: window}` when this process looked up the window of `model` (the model a commit of
    this store names) and the store's file lacks it; else {} (always on object storage)."""
    looked = thresholds.looked_up()
    if store.on_object_storage or not isinstance(model, str) or model not in looked:
        return {}
    return {} if model in _saved.get(str(store.root), ()) else {model: looked[model]}


def before_commit(store: StoreLayout, model: Any) -> None:
    """Look up `model`'s window now, before a commit is written; when the file will have to record
    it, refuse a linked `index/` here (`StorePathError`), while nothing of the commit is written."""
    thresholds.model_capacity(model)
    if _unsaved(store, model):
        (store.top / WINDOWS_FILE.parent.name).check()


def save(store: StoreLayout, model: Any) -> None:
    """Add `model`'s window to the store's file when this process looked it up and the file lacks
    it (never raises)."""
    looked = _unsaved(store, model)
    if not looked:
        return
    key = str(store.root)
    with suppress(OSError, SessionStoreError, TypeError):
        windows = {**(_read(store) or {}), **looked}
        directory = (store.top / WINDOWS_FILE.parent.name).make()
        if not os.path.lexists(directory / ".gitignore"):
            atomic_replace(directory / ".gitignore", b"*\n")
        data = {"versions": _versions(), "windows": dict(sorted(windows.items()))}
        atomic_replace(directory / WINDOWS_FILE.name, orjson.dumps(data, option=orjson.OPT_INDENT_2))
        _saved[key] = set(windows)
