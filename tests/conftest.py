"""Shared fixtures: a fresh store on tmp_path and the real data directory (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.realdata import MISSING, REALDATA, needs_realdata
from sessionstore.porcelain.store import SessionStore

TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    """A test that reads a real transcript skips, with the reason printed, when ../shared is absent."""
    try:
        return (yield)
    except Exception as err:  # a missing file, or an assertion on the error that names it
        if needs_realdata(err):
            pytest.skip(MISSING)
        raise


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.open(tmp_path / "store")


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(MISSING)
    return REALDATA
