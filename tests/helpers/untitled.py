"""Logs as code before the `title` field wrote them (porcelain/session/first_request.py): commits made
inside `written_before_titles()` carry no `title`, exactly as every line written before it existed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from sessionstore.porcelain.session import writer


@contextmanager
def written_before_titles() -> Iterator[None]:
    """Commits written in this block (in this process) record no title: their readers read the blobs."""
    with mock.patch.object(writer, "title_field", lambda *args: {}):
        yield
