"""`session diff REV1 REV2`: which messages one state has that the other has not, and what compactions did.

Messages are compared as stored: a blob line is the canonical JSON of one message, so equal bytes are
the same message, and the alignment is difflib's longest matching blocks over those lines (the
messages both states share stay in order). Token counts are the per-message estimates the log already
holds (`sizes`), never re-tokenized. For every compaction commit between the two revisions of one
session, the summary report says what the summary replaced (messages and tokens), what it kept
verbatim and the summary itself. Reads blobs with orjson; no pydantic-ai import.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.plumbing.commits import Commit
from sessionstore.porcelain.history.search import part_texts
from sessionstore.porcelain.session.writer import state_at

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

LINE_CHARS = 100
"""Characters of a message's one-line preview."""


@dataclass(frozen=True)
class Message:
    """One message of a state: where it sits, its local token estimate, and a readable preview."""

    index: int
    tokens: int
    role: str
    preview: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "tokens": self.tokens, "role": self.role, "text": self.text}


@dataclass(frozen=True)
class Compaction:
    """What one compaction commit did: messages it replaced by its summary, kept, and the summary."""

    commit: Commit
    replaced: list[Message]
    kept: int
    summary: list[Message]

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit.id,
            "rev": f"{self.commit.session}@{self.commit.seq}",
            "tier": self.commit.tier,
            "checkpoint": self.commit.extra.get("checkpoint"),
            "replaced_messages": len(self.replaced),
            "replaced_tokens": sum(m.tokens for m in self.replaced),
            "kept_messages": self.kept,
            "summary_messages": len(self.summary),
            "summary_tokens": sum(m.tokens for m in self.summary),
            "summary": "\n\n".join(m.text for m in self.summary),
        }


@dataclass
class Diff:
    old: Commit
    new: Commit
    removed: list[Message] = field(default_factory=list)
    added: list[Message] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def side(c: Commit) -> dict[str, Any]:
            return {"rev": f"{c.session}@{c.seq}", "commit": c.id, "messages": c.count, "tokens": c.tokens}

        return {
            "from": side(self.old),
            "to": side(self.new),
            "removed": [m.to_json() for m in self.removed],
            "added": [m.to_json() for m in self.added],
            "compactions": [c.to_json() for c in self.compactions],
        }


def _describe(line: bytes) -> tuple[str, str, str]:
    """(role, one-line preview, full text) of one stored message line."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return "?", "(unreadable message)", ""
    parts = list(part_texts(message)) if isinstance(message, dict) else []
    if not parts:
        return "?", "(no text)", ""
    shown = [
        f"{p.tool}({p.text})" if p.kind.endswith("tool-call") else f"{p.tool} -> {p.text}"
        if p.kind.endswith("tool-return") else p.text
        for p in parts
    ]  # fmt: skip
    text = "\n".join(shown)
    flat = " ".join(" · ".join(shown).split())
    preview = flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"
    return parts[-1].role if parts[0].role == "system" else parts[0].role, preview, text


def _state(store: SessionStore, commit: Commit) -> tuple[list[bytes], list[int]]:
    blobs, sizes = state_at(store, commit)
    lines = [line for blob in blobs for line in store.objects.read(blob).splitlines() if line]
    return lines, sizes


def _messages(lines: list[bytes], sizes: list[int], start: int, end: int) -> list[Message]:
    out = []
    for i in range(start, end):
        role, preview, text = _describe(lines[i])
        out.append(Message(i, sizes[i] if i < len(sizes) else 0, role, preview, text))
    return out


def _compare(a: tuple[list[bytes], list[int]], b: tuple[list[bytes], list[int]]) -> tuple[list, list, int]:
    """(removed from a, added in b, messages kept) aligning the two message lists."""
    matcher = difflib.SequenceMatcher(None, a[0], b[0], autojunk=False)
    removed: list[Message] = []
    added: list[Message] = []
    kept = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            kept += i2 - i1
            continue
        removed += _messages(a[0], a[1], i1, i2)
        added += _messages(b[0], b[1], j1, j2)
    return removed, added, kept


def diff(store: SessionStore, old: Commit, new: Commit) -> Diff:
    """Messages removed and added going from state `old` to state `new` (any two commits), plus, when
    both are commits of one session, each compaction in between (oldest first)."""
    old_state, new_state = _state(store, old), _state(store, new)
    removed, added, _ = _compare(old_state, new_state)
    result = Diff(old, new, removed, added)
    if old.session == new.session:
        low, high = sorted((old.seq, new.seq))
        commits, _ = store.log(new.session).scan(since_reset=False)
        by_seq = {c.seq: c for c in commits}
        for c in commits:
            if c.kind == "compaction" and low < c.seq <= high and (parent := by_seq.get(c.seq - 1)):
                replaced, summary, kept = _compare(_state(store, parent), _state(store, c))
                result.compactions.append(Compaction(c, replaced, kept, summary))
    return result
