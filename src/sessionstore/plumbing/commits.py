"""Commit lines: the canonical JSON of one commit, its id, and the `Commit` it reads back as.

A commit's `id` is the sha256 of its other fields as canonical JSON (sorted keys, no spaces), and
`parent` names the commit before it, so a log (`logs.Log`, which stores these lines) is a hash chain
like git's history. `make_line` is the one builder of a new line (the session writer,
`porcelain/session/writer.py`, is its one caller that commits); `parse_line` reads one back and returns None
unless its id verifies, so a reader never takes damage for a commit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

CORE_FIELDS = ("parent", "seq", "kind", "blob", "count", "tokens", "usage", "time")
"""The fields every commit line has besides its `id` (DESIGN §2); the others are `Commit.extra`."""


def canonical(obj: Any) -> bytes:
    """Canonical JSON: sorted keys, no spaces (what commit ids hash)."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Commit:
    """One log line. `extra` holds the kind-specific fields (`tier`, `target`, `blobs`, `sizes`, ...)."""

    id: str
    parent: str | None
    seq: int
    kind: str
    blob: str | None
    count: int
    tokens: int
    usage: dict[str, Any] | None
    time: str
    extra: dict[str, Any] = field(default_factory=dict)
    session: str = ""
    offset: int = -1
    """Byte offset of this commit's line in its log (not part of the id)."""
    size: int = 0
    """Length in bytes of the line, newline included."""

    @property
    def is_reset(self) -> bool:
        return "blobs" in self.extra

    @property
    def blobs(self) -> list[str]:
        """Blobs making the whole state (reset points only)."""
        return list(self.extra.get("blobs", ()))

    @property
    def named_blobs(self) -> list[str]:
        """The blobs this line names: the whole state's for a reset point, else its new one (if any)."""
        return self.blobs if self.is_reset else ([self.blob] if self.blob else [])

    def count_after(self, before: int, added: int) -> tuple[int, bool]:
        """(messages in the replayed history after this commit, whether its `count` and `sizes` say
        so), from the count `before` it and the messages its `named_blobs` hold (`added`): the one
        rule fsck and pull check a log's counts by."""
        count = added if self.is_reset else before + added
        return count, count == self.count and len(self.sizes) == (count if self.is_reset else added)

    @property
    def sizes(self) -> list[int]:
        """Per-message token estimates: of the new messages, or of the whole state for a reset point."""
        return list(self.extra.get("sizes", ()))

    @property
    def tier(self) -> int | None:
        return self.extra.get("tier")

    @property
    def target(self) -> str | None:
        return self.extra.get("target")

    @property
    def end(self) -> int:
        return self.offset + self.size

    def to_json(self) -> dict[str, Any]:
        """The commit as stored (plus `session`, the name of its log), for `--json` output."""
        body = {k: getattr(self, k) for k in CORE_FIELDS}
        # `session` last: a line written elsewhere may carry an extra field of that name (new lines
        # cannot: `make_line` refuses it), and the output names the session the line is in.
        return {"id": self.id, **body, **self.extra, "session": self.session}


def make_line(
    *,
    parent: Commit | None,
    kind: str,
    blob: str | None,
    count: int,
    tokens: int,
    usage: dict[str, Any] | None,
    extra: dict[str, Any],
    time: str | None = None,
) -> tuple[bytes, dict[str, Any]]:
    """Build the canonical line for a new commit after `parent`; returns (line bytes, parsed dict)."""
    clash = set(extra) & {*CORE_FIELDS, "id", "session"}
    if clash:
        raise ValueError(f"commit extra fields shadow core fields: {sorted(clash)}")
    body = {
        "parent": parent.id if parent else None,
        "seq": parent.seq + 1 if parent else 1,
        "kind": kind,
        "blob": blob,
        "count": count,
        "tokens": tokens,
        "usage": usage,
        "time": time or utc_now(),
        **extra,
    }
    body["id"] = hashlib.sha256(canonical(body)).hexdigest()
    return canonical(body) + b"\n", body


def verifies(fields: dict[str, Any]) -> bool:
    """Whether a line's parsed `fields` (its `id` included) hash to that id as `make_line` made it:
    the sha256 of the other fields as canonical JSON."""
    cid = fields.get("id")
    body = {k: v for k, v in fields.items() if k != "id"}
    return isinstance(cid, str) and hashlib.sha256(canonical(body)).hexdigest() == cid


def parse_line(line: bytes, session: str, offset: int) -> Commit | None:
    """The commit on `line`, or None when it does not parse or its id does not verify."""
    try:
        body = orjson.loads(line)
        cid = body.pop("id")
        if not isinstance(body, dict) or hashlib.sha256(canonical(body)).hexdigest() != cid:
            return None
        return _commit(cid, body, session, offset, len(line) + 1)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None


def from_body(body: dict[str, Any], *, session: str, offset: int, size: int) -> Commit:
    """The `Commit` of a line's parsed fields (`id` included), which are not checked here: for a line
    this process just built (`make_line`'s body) or verified (`parse_line`)."""
    rest = dict(body)
    return _commit(rest.pop("id"), rest, session, offset, size)


def _commit(cid: str, body: dict[str, Any], session: str, offset: int, size: int) -> Commit:
    """`Commit(id=cid, **core, extra=rest, ...)` of a line's fields less its id (`body`, emptied of the
    core fields, becomes `extra`), without the frozen dataclass's `__init__`: one `object.__setattr__`
    per field costs as much as the line's JSON parse, and every log reader makes one per line. The
    instance's `__dict__` is the one `__init__` would make (the same keys, in field order). Raises
    `KeyError` when a core field is missing."""
    pop = body.pop
    fields = {
        "id": cid, "parent": pop("parent"), "seq": pop("seq"), "kind": pop("kind"), "blob": pop("blob"),
        "count": pop("count"), "tokens": pop("tokens"), "usage": pop("usage"), "time": pop("time"),
        "extra": body, "session": session, "offset": offset, "size": size,
    }  # fmt: skip
    commit = _new(Commit)
    _set(commit, "__dict__", fields)
    return commit


_new = object.__new__
_set = object.__setattr__
