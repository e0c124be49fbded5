"""Checkpoint refs: `refs/checkpoints/<session>/<k>`, write-once, content `<commit-id> <offset>\\n`.

A ref names the compaction commit a resumed session replays from and the byte offset of its log line,
so reaching a checkpoint is one seek. Refs are derivable from the logs (fsck checks and repairs them)
and are never rewritten: a second create raises `ImmutableRefError` and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import CorruptObjectError, ImmutableRefError
from .fsutil import create_exclusive, fsync_dir
from .names import check_name


@dataclass(frozen=True)
class CheckpointRef:
    session: str
    k: int
    commit_id: str
    offset: int

    @property
    def name(self) -> str:
        return f"checkpoints/{self.session}/{self.k}"


class RefStore:
    """The `refs/checkpoints` tree of one store."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "refs" / "checkpoints"

    def _session_dir(self, session: str) -> Path:
        return self.dir / check_name(session)

    def create(self, session: str, k: int, commit_id: str, offset: int) -> CheckpointRef:
        """Create checkpoint `k` of `session` exactly once (atomic, durable)."""
        if k < 1:
            raise ValueError(f"checkpoint numbers start at 1, got {k}")
        directory = self._session_dir(session)
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            fsync_dir(directory.parent)
        ref = CheckpointRef(session, k, commit_id, offset)
        if not create_exclusive(directory / str(k), f"{commit_id} {offset}\n".encode()):
            raise ImmutableRefError(
                f"checkpoint ref {ref.name} already exists and refs are write-once: "
                "compaction numbers checkpoints itself; nothing was changed"
            )
        return ref

    def read(self, session: str, k: int) -> CheckpointRef:
        path = self._session_dir(session) / str(k)
        try:
            text = path.read_text("ascii")
        except FileNotFoundError:
            raise LookupError(f"checkpoints/{session}/{k}") from None
        parts = text.split()
        if len(parts) != 2 or not parts[1].isdigit() or not text.endswith("\n"):
            raise CorruptObjectError(
                f"checkpoint ref checkpoints/{session}/{k} is malformed: run `session fsck`"
            )
        return CheckpointRef(session, k, parts[0], int(parts[1]))

    def list(self, session: str) -> list[CheckpointRef]:
        """All checkpoints of `session`, by number."""
        directory = self._session_dir(session)
        if not directory.is_dir():
            return []
        ks = sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())
        return [self.read(session, k) for k in ks]

    def sessions(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir() if p.is_dir())
