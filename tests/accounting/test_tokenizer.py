"""The tokenizer backends: exact equality with tiktoken, choice, background loading, and the cache."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sessionstore.accounting import tokenizer

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A tokenizer state of its own: reset before and after (the suite shares one process)."""
    tokenizer.reset()
    yield
    monkeypatch.undo()
    tokenizer.reset()


@cache
def _tiktoken() -> tokenizer.Counter:
    return tokenizer.load_backend("tiktoken")


def _bpe() -> tokenizer.Counter:
    if importlib.util.find_spec("bpe_openai") is None:
        pytest.skip("bpe-openai (the optional `fast` extra) is not installed")
    return _bpe_loaded()


@cache
def _bpe_loaded() -> tokenizer.Counter:
    return tokenizer.load_backend("bpe-openai")


def _strings(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)


def _realdata_strings() -> list[str]:
    if not REALDATA.is_dir():
        pytest.skip(f"real data not found at {REALDATA}")
    out: list[str] = []
    for path in sorted(REALDATA.rglob("*.json*")):
        data = path.read_bytes()
        try:
            _strings(orjson.loads(data), out)
        except orjson.JSONDecodeError:  # JSONL
            for line in data.splitlines():
                try:
                    _strings(orjson.loads(line), out)
                except orjson.JSONDecodeError:
                    continue
    return out


def test_bpe_openai_counts_exactly_what_tiktoken_counts_on_real_data() -> None:
    bpe, tik = _bpe(), _tiktoken()
    texts = list(dict.fromkeys(_realdata_strings()))  # each distinct string once
    assert len(texts) > 1000
    differ = [t[:60] for t in texts if bpe.count(t) != tik.count(t)]
    assert not differ, f"{len(differ)} of {len(texts)} strings count differently, e.g. {differ[:3]}"


@hsettings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_bpe_openai_equals_tiktoken_on_any_text(text: str) -> None:
    # any code point, lone surrogates included (tiktoken replaces them; so must the other backend)
    assert _bpe().count(text) == _tiktoken().count(text)


def test_lone_surrogates_and_special_token_text_are_counted() -> None:
    for counter in (_tiktoken(), _bpe()):
        assert counter.count("abc\ud800def") == 3
        assert counter.count("<|endoftext|>") > 1  # counted as ordinary text, never refused


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="choose one of tiktoken, bpe-openai"):
        tokenizer.load_backend("sentencepiece")


@pytest.mark.usefixtures("fresh")
def test_environment_picks_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tokenizer.ENV, "tiktoken")
    counter = tokenizer.backend()
    assert counter is not None and counter.name == "tiktoken"
    tokenizer.reset()
    monkeypatch.setenv(tokenizer.ENV, "bpe-openai")
    _bpe()
    counter = tokenizer.backend()
    assert counter is not None and counter.name == "bpe-openai"


@pytest.mark.usefixtures("fresh")
def test_a_misspelt_backend_warns_and_uses_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tokenizer.ENV, "tikoken")
    with pytest.warns(RuntimeWarning, match="SESSIONSTORE_TOKENIZER='tikoken' is not a tokenizer backend"):
        assert tokenizer.backend() is not None


@pytest.mark.usefixtures("fresh")
def test_a_backend_that_fails_to_load_falls_back_to_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tokenizer.ENV, "bpe-openai")
    monkeypatch.setattr(tokenizer, "_bpe_bindings", lambda: __import__("no_such_module_bpe"))
    counter = tokenizer.backend()
    assert counter is not None and counter.name == "tiktoken"
    assert tokenizer.count("hello world") == 2


@pytest.mark.usefixtures("fresh")
def test_a_repeated_long_text_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = _tiktoken()
    monkeypatch.setattr(tokenizer, "_loaded", True)
    monkeypatch.setattr(
        tokenizer, "_counter", tokenizer.Counter("spy", lambda t: calls.append(len(t)) or real.count(t))
    )
    block = "Always answer in French. Never touch prod. " * 20  # an instruction block on every request
    first = tokenizer.count(block)
    assert [tokenizer.count("x" + block[1:]) for _ in range(3)]  # a different text is counted
    assert tokenizer.count(block) == first == real.count(block)
    assert calls == [len(block), len(block)]  # the block once, its variant once, then cache hits
    tokenizer.count("short")
    tokenizer.count("short")
    assert len(calls) == 4  # short texts are not cached: counting them is as cheap as a lookup


@pytest.mark.usefixtures("fresh")
def test_the_cache_is_bounded_and_drops_the_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer, "CACHE_MAX_CHARS", 3 * 1000)
    texts = [f"{i:04d}" + "y" * 996 for i in range(10)]
    counts = [tokenizer.count(t) for t in texts]
    assert tokenizer._cache_chars <= 3000
    assert list(tokenizer._cache) == texts[-3:]
    assert [tokenizer.count(t) for t in texts] == counts  # evicted ones are recounted, same answer


def test_preload_loads_in_the_background_and_import_loads_nothing() -> None:
    code = (
        "import sys, time\n"
        "from sessionstore.accounting import tokenizer\n"
        "assert not {'tiktoken', 'bpe_openai'} & set(sys.modules)\n"
        "tokenizer.preload(); tokenizer.preload()\n"
        "thread = tokenizer._preloading\n"
        "assert thread is not None and thread.daemon\n"
        "thread.join(30)\n"
        "assert tokenizer._loaded and tokenizer._counter is not None\n"
        "assert tokenizer.count('hello world') == 2\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
