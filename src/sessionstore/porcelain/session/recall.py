"""`Session.recall`: the messages of a session's whole log that match a query, verbatim.

Compaction replaces messages with a summary in what is sent, never in the log: every turn's blob stays
(DESIGN §2), so whatever a summary dropped is one search away. `recall` reads every blob any commit of
the session reached (`log_blobs.blob_origins`), each once, and each message once (a compaction's tail
repeats messages byte for byte: the first commit that stored one names it), and ranks the messages
by the query's words they contain, rarer words weighing more (a word most messages hold, "the", "is",
decides nothing). Summaries are left out (they are what the agent already has), and so are a request's
instructions (repeated on every request, they would match everything).

What a caller may rely on: every message returned is as stored (pydantic-ai objects, decoded from the
blob), with the revision that first stored it (`NAME@SEQ`: `session show NAME@SEQ` shows it in
context); the order is best match first, then oldest first; a query with no word matches nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.porcelain.session.log_blobs import blob_origins
from sessionstore.porcelain.session.message_text import part_texts

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

    from sessionstore.porcelain.session.layout import StoreLayout

__all__ = ["Recalled", "query_terms", "recall"]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Recalled:
    """One message `recall` found: the message as stored, the revision that first stored it
    (`NAME@SEQ`), that commit's id, and how well it matched (higher is better)."""

    message: ModelMessage
    revision: str
    commit: str
    score: float


def query_terms(query: str) -> list[str]:
    """The distinct words of `query`, lower-cased, in order (single characters only when nothing
    longer is given)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    longer = [w for w in words if len(w) > 1]
    return longer or words


def recall(store: StoreLayout, name: str, query: str, *, limit: int = 5) -> list[Recalled]:
    """The `limit` messages of session `name`'s whole log that best match `query` (see the module
    docstring). Refuses a query without a word and a limit below 1, in one line."""
    if not isinstance(query, str) or not query_terms(query):
        raise SessionStoreError(f"recall needs words to look for, not {query!r}: e.g. recall('staging port')")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise SessionStoreError(f"recall's limit is a number of messages, 1 or more, not {limit!r}")
    terms = query_terms(query)
    phrase = " ".join(_WORD.findall(query.lower()))
    seen: set[bytes] = set()
    total = 0
    found: list[tuple[set[str], bool, int, bytes, Any]] = []
    df = dict.fromkeys(terms, 0)
    for blob, commit in blob_origins(store, name, all_history=True):
        for line in store.objects.read(blob).split(b"\n"):
            if not line or line in seen:
                continue
            seen.add(line)
            total += 1
            raw = line.decode("utf-8", "replace").lower()  # a word never holds what JSON escapes
            if not any(t in raw for t in terms):
                continue  # holds none of the words: skipped unparsed
            message = orjson.loads(line)
            texts = [p.text for p in part_texts(message) if p.kind not in ("compaction", "instructions")]
            if not texts:
                continue
            text = " ".join(" ".join(_WORD.findall(t.lower())) for t in texts)
            words = set(text.split())
            hit = {t for t in terms if t in words}
            for t in hit:
                df[t] += 1
            if hit:
                found.append((hit, phrase in text, total, line, commit))
    scored = []
    for hit, whole, order, line, commit in found:
        score = sum(math.log((total + 1) / (df[t] + 0.5)) for t in hit) + (
            1.0 if whole and len(terms) > 1 else 0
        )
        scored.append((-score, order, line, commit))
    scored.sort(key=lambda s: (s[0], s[1]))
    return [
        Recalled(codec.decode([line + b"\n"])[0], f"{commit.session}@{commit.seq}", commit.id, -neg)
        for neg, _, line, commit in scored[:limit]
    ]
