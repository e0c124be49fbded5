"""`Bucket`: the one door to obstore, for a store on object storage (object_storage.py).

The requests this package makes of a bucket under the store's prefix, each counted by kind
(`requests`, which the benchmarks and tests read to check what an operation costs). A conditional
create is a PUT with `If-None-Match: *` (obstore's `mode="create"`): of two creates of one key exactly
one succeeds. Errors other than "absent" and "already there" become a one-line `SessionStoreError`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple, TypeVar

from ..errors import SessionStoreError

T = TypeVar("T")
PAGE = 1000
"""Keys per LIST request (S3's page): `requests["list"]` counts pages."""
_FETCHERS = 16
"""Requests one process keeps in flight to read many objects (a replay's commits and blobs)."""


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_FETCHERS, thread_name_prefix="sessionstore-bucket")


if hasattr(os, "register_at_fork"):  # a forked child has none of its parent's threads: start afresh
    os.register_at_fork(after_in_child=_pool.cache_clear)


class Meta(NamedTuple):
    """What a HEAD or LIST tells of an object."""

    key: str
    size: int
    time: float
    """Last modified, epoch seconds (gc's grace counts from it)."""


def _meta(prefix_len: int, row: dict[str, Any]) -> Meta:
    when: datetime = row["last_modified"]
    return Meta(row["path"][prefix_len:], row["size"], when.timestamp())


class Bucket:
    """An obstore store under a prefix, with the requests this package makes of it, counted."""

    def __init__(self, store: Any, url: str) -> None:
        import obstore  # the `s3` extra: only a store on object storage needs it

        self._obstore = obstore
        self.store = store
        self.url = url if url.rstrip("/").endswith(":") else url.rstrip("/")  # memory:/// stays whole
        self.requests: Counter[str] = Counter()
        """Requests made, by kind: put, get, head, list (pages of `PAGE` keys), delete."""

    def _failed(self, err: Exception, what: str) -> SessionStoreError:
        return SessionStoreError(f"{what} at {self.url} failed: {str(err).splitlines()[0][:300]}")

    def create(self, key: str, data: bytes) -> bool:
        """PUT `data` at `key` only if no object is there (atomic); False when one was."""
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        self.requests["put"] += 1
        try:
            self._obstore.put(self.store, key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        except Exception as err:
            raise self._failed(err, f"writing {key}") from None
        return True

    def put(self, key: str, data: bytes) -> None:
        """PUT `data` at `key`, replacing what is there (atomic: readers see the old or the new)."""
        self.requests["put"] += 1
        try:
            self._obstore.put(self.store, key, data)
        except Exception as err:
            raise self._failed(err, f"writing {key}") from None

    def get(self, key: str) -> bytes | None:
        """The bytes at `key`, None when absent."""
        self.requests["get"] += 1
        try:
            return bytes(self._obstore.get(self.store, key).bytes())
        except FileNotFoundError:  # obstore's NotFoundError
            return None
        except Exception as err:
            raise self._failed(err, f"reading {key}") from None

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """`get` of each key, `_FETCHERS` in flight at once (the waits overlap, the count is the same)."""
        if len(keys) <= 1:
            return [self.get(k) for k in keys]
        return list(_pool().map(self.get, keys))

    def head(self, key: str) -> Meta | None:
        self.requests["head"] += 1
        try:
            return _meta(0, self._obstore.head(self.store, key))
        except FileNotFoundError:
            return None
        except Exception as err:
            raise self._failed(err, f"reading {key}") from None

    def delete(self, key: str) -> None:
        self.requests["delete"] += 1
        try:
            self._obstore.delete(self.store, key)
        except FileNotFoundError:
            pass
        except Exception as err:
            raise self._failed(err, f"deleting {key}") from None

    def list(self, prefix: str, *, after: str | None = None) -> list[Meta]:
        """Every object whose key starts with `prefix` (a folder, ending in "/"), in key order, those
        after key `after` only when given; keys are returned relative to `prefix`."""
        try:
            rows = [
                _meta(len(prefix), row)
                for chunk in self._obstore.list(self.store, prefix, offset=after, chunk_size=PAGE)
                for row in chunk
            ]
        except Exception as err:
            raise self._failed(err, f"listing {prefix}") from None
        self.requests["list"] += max(1, -(-len(rows) // PAGE))
        return rows

    def folders(self, prefix: str) -> list[str]:
        """The names of the folders directly under `prefix` (which ends in "/")."""
        try:
            found = self._obstore.list_with_delimiter(self.store, prefix)
        except Exception as err:
            raise self._failed(err, f"listing {prefix}") from None
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]
        self.requests["list"] += max(1, -(-(len(names) + len(found["objects"])) // PAGE))
        return names

    def in_background(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` on this process's request threads; its `Future`."""
        return _pool().submit(work)
