"""Checkpoint refs on object storage: `refs/checkpoints/<session>/<k>`, created only if absent.

The same promises as `refs.RefStore` on files (`backend.CheckpointRefs`), the same content
(`<commit id> <position>\\n`, the position being the commit's seq here), parsed by the same
`refs.parse_ref`. A conditional create makes a ref write-once across machines: a second create,
from any process, raises `ImmutableRefError` and changes nothing.
"""

from __future__ import annotations

from ..errors import CorruptObjectError, ImmutableRefError
from .bucket import Bucket
from .names import check_name, is_valid_name
from .refs import CheckpointRef, RefListing, already_exists, parse_ref, ref_bytes


class ObjectRefs(RefListing):
    """The `refs/checkpoints/` folder of a bucket prefix."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket

    @staticmethod
    def _folder(session: str) -> str:
        return f"refs/checkpoints/{check_name(session)}/"

    def create(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef:
        """Create checkpoint `k` of `session` exactly once."""
        if k < 1:
            raise ValueError(f"checkpoint numbers start at 1, got {k}")
        ref = CheckpointRef(session, k, commit_id, offset)
        if not self.bucket.create(f"{self._folder(session)}{k}", ref_bytes(commit_id, offset)):
            raise already_exists(ref)
        return ref

    def read(self, session: str, k: int) -> CheckpointRef:
        """Checkpoint `k` of `session`; `LookupError` if absent, `CorruptObjectError` if malformed."""
        data = self.bucket.get(f"{self._folder(session)}{k}")
        if data is None:
            raise LookupError(f"checkpoints/{session}/{k}")
        return parse_ref(data, session, k)

    def numbers(self, session: str) -> list[int]:
        """The numbers of `session`'s checkpoints, ascending (one listing, no ref read)."""
        return sorted(int(m.key) for m in self.bucket.list(self._folder(session)) if m.key.isdigit())

    def rewrite_malformed(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef:
        """Replace a ref that does not parse by the value the log derives (fsck --repair only); a
        missing one is created, a well-formed one is never rewritten (`ImmutableRefError`)."""
        try:
            self.read(session, k)
        except CorruptObjectError:
            self.bucket.put(f"{self._folder(session)}{k}", ref_bytes(commit_id, offset))
            return CheckpointRef(session, k, commit_id, offset)
        except LookupError:
            return self.create(session, k, commit_id, offset)
        raise ImmutableRefError(
            f"checkpoint ref checkpoints/{session}/{k} is well-formed: refs are write-once"
        )

    def sessions(self) -> list[str]:
        return sorted(n for n in self.bucket.folders("refs/checkpoints/") if is_valid_name(n))
