"""A turn's blob on its way to disk (porcelain/session/turn_blobs.py): named before it lands, counted
meanwhile, refused before anything is stored when it would not read back, never left in flight on
an error."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart

from helpers.messages import tagged_turn
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.plumbing import codec
from sessionstore.plumbing.objects import ObjectStore, hash_bytes
from sessionstore.porcelain.session import turn_blobs
from sessionstore.porcelain.session.turn_blobs import settle, stage_turn


def test_a_staged_turn_is_named_at_once_counted_and_durable_once_landed(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    turn = tagged_turn(1, 0, size=3)
    staged = stage_turn(objects, turn)
    assert staged.blob == hash_bytes(codec.encode(turn))  # the id is the hash of the stored bytes
    assert staged.sizes == estimate_messages(turn)
    assert staged.landed() == staged.blob
    assert codec.decode(objects.read(staged.blob).splitlines(keepends=True)) == turn
    given = stage_turn(objects, tagged_turn(1, 1), sizes=[5, 6])  # a caller's counts are taken as they are
    assert given.sizes == [5, 6] and given.landed() == given.blob


def test_a_turn_that_would_not_read_back_is_refused_at_staging_and_nothing_is_stored(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    deep: object = "leaf"
    for _ in range(300):
        deep = {"k": deep}
    turn = [ModelRequest.user_text_prompt("go"), ModelResponse(parts=[ToolCallPart("t", {"a": deep})])]
    with pytest.raises(codec.UnreadableMessages):
        stage_turn(objects, turn)
    assert list(objects) == [] and not list(objects.stray_temps())


def test_a_count_that_fails_waits_for_the_landing_before_it_raises(tmp_path, monkeypatch) -> None:
    objects = ObjectStore(tmp_path)

    def broken(messages: object) -> list[int]:
        raise RuntimeError("counter broke")

    monkeypatch.setattr(turn_blobs, "estimate_messages", broken)
    turn = tagged_turn(2, 0)
    with pytest.raises(RuntimeError, match="counter broke"):
        stage_turn(objects, turn)
    assert list(objects) == [hash_bytes(codec.encode(turn))]  # landed (an orphan for gc), not in flight
    assert not list(objects.stray_temps())


def test_settle_waits_and_drops_the_landings_own_error() -> None:
    calls: list[str] = []

    def failing() -> object:
        calls.append("waited")
        raise OSError(28, "No space left on device")

    settle(failing)
    settle(None)
    assert calls == ["waited"]
