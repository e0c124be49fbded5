"""The collector pause: off inside the block, restored as it was after it, also on an error."""

from __future__ import annotations

import gc

import pytest

from sessionstore.plumbing.collector import paused_gc


def test_paused_inside_and_restored_after_also_on_error() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
