"""Shared fixtures: a fresh store on tmp_path and the real data directory (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionstore.porcelain.store import SessionStore

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.open(tmp_path / "store")


@pytest.fixture
def realdata() -> Path:
    path = TESTS.parents[1] / "shared" / "realdata"
    if not path.is_dir():
        pytest.skip(f"real data not found at {path}")
    return path
