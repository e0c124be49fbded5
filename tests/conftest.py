"""Shared fixtures: a fresh store on tmp_path and the real data directory (skipped when absent)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.realdata import MISSING, REALDATA, needs_realdata
from helpers.s3_server import S3Server, moto_server
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


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3 API server (moto) on 127.0.0.1, one per test worker, stopped at the end."""
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """`s3_server` with this process's environment pointing at it, as obstore reads it."""
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    return s3_server


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.open(tmp_path / "store")


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(MISSING)
    return REALDATA
