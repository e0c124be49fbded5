"""`index/windows.json`: a fresh process's first turn takes its model's window from the store's memo
instead of importing genai-prices' price table, the same window; other versions, damage or a linked
`index/` fall back to the lookup and never fail a commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from sessionstore import SessionStore
from sessionstore.accounting import thresholds
from sessionstore.porcelain.session.model_windows import WINDOWS_FILE

MODEL = "anthropic:claude-sonnet-4-5"

FIRST_TURN = f"""
import json, sys
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from sessionstore import SessionStore
reply = ModelResponse(parts=[TextPart(content="hello")], model_name="claude-sonnet-4-5")
turn = [ModelRequest(parts=[UserPromptPart(content="hi")]), reply]
session = SessionStore.open(sys.argv[1], warm=False).session(sys.argv[2])
session.model = {MODEL!r}
session.append(turn, compact=False)
print(json.dumps([session.head.extra.get("capacity"), "genai_prices.data" in sys.modules]))
"""


def first_turn(root: Path, name: str) -> tuple[int | None, bool]:
    """(the window the commit recorded, whether the price table was imported) in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", FIRST_TURN, str(root), name], capture_output=True, text=True, check=True
    )
    capacity, imported = orjson.loads(out.stdout)
    return capacity, imported


def test_a_fresh_process_takes_the_window_the_store_looked_up_before(tmp_path: Path) -> None:
    root = tmp_path / "s"
    looked, _ = first_turn(root, "a")
    assert looked == thresholds.model_capacity(MODEL) and looked is not None
    memo = orjson.loads((root / WINDOWS_FILE).read_bytes())
    assert memo["windows"] == {MODEL: looked}
    assert first_turn(root, "b") == (looked, False)  # the same window, no price table imported


def test_a_memo_under_other_versions_is_looked_up_again_and_rewritten(tmp_path: Path) -> None:
    root = tmp_path / "s"
    first_turn(root, "a")
    path = root / WINDOWS_FILE
    memo = orjson.loads(path.read_bytes())
    wrong = {"versions": ["0.0.1", "0.0.1"], "windows": {MODEL: 12_345}}
    path.write_bytes(orjson.dumps(wrong))
    capacity, imported = first_turn(root, "b")
    assert capacity == memo["windows"][MODEL] and imported
    assert orjson.loads(path.read_bytes()) == memo


REPLY = ModelResponse(parts=[TextPart(content="yo")])
DAMAGE = [b"", b"{not json", b'{"versions": 3}', b"\x00" * 40, b"[1, 2]", b'{"windows": {"x": "y"}}']


def test_a_damaged_memo_is_looked_up_again_and_rewritten_never_an_error(tmp_path: Path) -> None:
    for i, damage in enumerate(DAMAGE):
        root = tmp_path / f"s{i}"
        SessionStore.open(root)
        (root / "index").mkdir(exist_ok=True)
        (root / WINDOWS_FILE).write_bytes(damage)
        session = SessionStore.open(root).session("a")
        session.model = MODEL
        session.append(
            [
                ModelRequest(parts=[UserPromptPart(content="hi")]),
                ModelResponse(parts=[TextPart(content="yo")]),
            ],
            compact=False,
        )
        assert session.head.extra["capacity"] == thresholds.model_capacity(MODEL), damage
        memo = orjson.loads((root / WINDOWS_FILE).read_bytes())
        assert memo["windows"][MODEL] == thresholds.model_capacity(MODEL), damage


def test_a_linked_memo_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    root = tmp_path / "s"
    SessionStore.open(root)
    outside = tmp_path / "outside.json"
    planted = orjson.dumps({"versions": first_versions(), "windows": {MODEL: 1}})
    outside.write_bytes(planted)
    (root / "index").mkdir(exist_ok=True)
    os.symlink(outside, root / WINDOWS_FILE)
    capacity, imported = first_turn(root, "a")
    assert capacity == thresholds.model_capacity(MODEL) and imported  # not the planted 1
    assert outside.read_bytes() == planted
    assert not (root / WINDOWS_FILE).is_symlink()  # replaced by the store's own file


def first_versions() -> list[str]:
    from sessionstore.porcelain.session import model_windows

    return model_windows._versions()


def test_an_unknown_model_is_remembered_as_unknown(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s")
    session = store.session("a")
    session.model = "anthropic:no-such-model-9"
    session.append(
        [ModelRequest(parts=[UserPromptPart(content="hi")]), ModelResponse(parts=[TextPart(content="yo")])],
        compact=False,
    )
    assert "capacity" not in session.head.extra
    memo = orjson.loads((tmp_path / "s" / WINDOWS_FILE).read_bytes())
    assert memo["windows"]["anthropic:no-such-model-9"] is None
