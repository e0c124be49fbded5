"""Object storage (S3, GCS, Azure, MinIO, obstore's in-memory store) as a store's backend (DESIGN §13).

The store's design maps onto a bucket unchanged, under the URL's prefix:

    VERSION                                  the store's format, created once
    objects/ab/cdef...                       a blob, PUT only if absent (content-addressed: idempotent)
    logs/<session>/<seq, 12 digits>          one commit line each, created only if absent
    refs/checkpoints/<session>/<k>           write-once: `<commit id> <seq>\\n`, created only if absent
    heads/<session>                          the head commit's line: a hint for listing, never trusted

Every create is a conditional PUT (`If-None-Match: *`, obstore's `mode="create"`), which S3, GCS,
Azure and MinIO honour: of two writers creating one key exactly one succeeds. So the lockstep of
DESIGN §3 is the create of the next commit object, with no lock server or lease, and a loser gets the
`StaleSessionError` a second writer gets on files. A PUT is atomic (an object is whole or absent), so
object storage has no torn tails. Credentials, region and endpoint come from the environment by
obstore's own conventions (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...; docs/object-storage.md).

Every request goes through `bucket.Bucket`, which counts them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any

from ..errors import NotAStoreError, SessionStoreError
from .bucket import Bucket
from .names import SCHEMES, is_valid_name
from .object_blobs import ObjectBlobs
from .object_logs import ObjectLog
from .object_refs import ObjectRefs


class ObjectRoot(str):
    """The root of a store on object storage: its URL, as text. Code that still reaches for a file
    under a store's root (a local cache, the trash of `rm`, a lock file) gets a one-line
    `SessionStoreError` naming what is not available on object storage, never a local directory
    named after the URL."""

    def __truediv__(self, part: object) -> Any:
        raise SessionStoreError(
            f"{self}: {part} is a file of a store directory, which a store on object storage does not "
            "have (yet): use a store directory for this command"
        )

    def resolve(self) -> ObjectRoot:
        return self


class ConditionalCreate:
    """Exclusion on object storage: the conditional create of a session's next commit object, which
    `ObjectLog.append` makes. Nothing is held around a commit, so a session's lock is empty."""

    def session(self, name: str, timeout: float) -> nullcontext[None]:
        return nullcontext()


FORMAT_KEY = "VERSION"


class ObjectBackend:
    """A store on object storage: `backend.Backend` over one `Bucket`."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket
        self.objects = ObjectBlobs(bucket)
        self.refs = ObjectRefs(bucket)
        self.exclusion = ConditionalCreate()

    @property
    def url(self) -> str:
        return self.bucket.url

    @property
    def root(self) -> ObjectRoot:
        return ObjectRoot(self.bucket.url)

    @property
    def top(self) -> Any:
        """The store directory every file path starts from (`storedir.StoreDir`): none here."""
        return self.root / "its directories (trash, titles, index)"

    @property
    def logs(self) -> Any:
        return self.root / "logs"

    @property
    def locks(self) -> Any:
        return self.root / "locks"

    @property
    def logs_dir(self) -> Any:
        return self.root / "logs"

    @property
    def locks_dir(self) -> Any:
        return self.root / "locks"

    def log(self, session: str) -> ObjectLog:
        return ObjectLog(self.bucket, session)

    def sessions(self) -> list[str]:
        return sorted(n for n in self.bucket.folders("logs/") if is_valid_name(n))

    def heads(self) -> dict[str, tuple[Any, int]]:
        """(head commit, checkpoint count) of every session: `object_heads.read_heads`."""
        from .object_heads import read_heads

        return read_heads(self.bucket)

    def check(self, *, create: bool, version: str) -> None:
        """Make sure the bucket prefix holds a store of format `version`, creating it when `create`."""
        found = self.bucket.get(FORMAT_KEY)
        if found is None:
            if not create:
                raise NotAStoreError(
                    f"{self.url} is not a session store: run `session init` (or pass --store)"
                )
            self.bucket.create(FORMAT_KEY, f"{version}\n".encode())  # a racing creator wrote the same
            found = self.bucket.get(FORMAT_KEY) or b""
        if found.decode("ascii", "replace").strip() != version:
            raise NotAStoreError(
                f"{self.url} has store format {found.decode('ascii', 'replace').strip()!r}, this "
                f"sessionstore reads {version!r}: upgrade it"
            )


def open_url(url: str, *, options: Iterable[tuple[str, Any]] = ()) -> ObjectBackend:
    """The backend of the store at `url` (`s3://bucket/prefix`, `gs://`, `az://`, `memory:///`), its
    credentials and endpoint from the environment (obstore's conventions); a one-line
    `SessionStoreError` for a scheme that holds no store or a missing `s3` extra."""
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise SessionStoreError(
            f"{url}: a store is a directory or an object-storage URL ({known}); {scheme}:// is neither"
        )
    try:
        from obstore.store import from_url
    except ImportError:
        raise SessionStoreError(
            f"{url}: a store on object storage needs obstore: pip install 'sessionstore[s3]'"
        ) from None
    extra = dict(options)
    if scheme != "memory" and os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        extra.setdefault("client_options", {"allow_http": True})  # a local S3 API (MinIO, moto)
    try:
        store = from_url(url, **extra)
    except Exception as err:
        raise SessionStoreError(f"cannot open the store at {url}: {str(err).splitlines()[0][:300]}") from None
    return ObjectBackend(Bucket(store, url))
