"""Tools an agent uses on its own session: `recall` what a summary replaced, `compact` on request.

    agent = Agent(model, toolsets=[SessionToolset(session)])      # or run_turn(..., toolsets=[...])

- `recall(query)`: the messages of the session's whole log that match `query` (`Session.recall`),
  verbatim, each with its revision, within `recall_tokens` (default `RECALL_TOKENS`, 2,000 tokens):
  when the matches are longer, each keeps an equal share, cut around its first matching word and
  marked, so the agent can ask again with narrower words.
- `compact(focus)`: asks for a checkpoint (a full compaction, `Session.request_checkpoint`) before the
  agent's next request; `SessionCapability` (and `run_turn`) writes it there, with the focus.

With the toolset present, every summary a compaction writes ends with `RECALL_NOTE`, telling the model
that what the summary replaced is one `recall` away (a line the session appends to the summary it
stores: `Session.summary_notes`; the summarizer itself is untouched).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic_ai.toolsets import FunctionToolset

from ..accounting.tokens import count_text
from ..errors import SessionStoreError
from ..porcelain.session.recall import query_terms

if TYPE_CHECKING:
    from ..porcelain.session.recall import Recalled
    from ..porcelain.session.session import Session

__all__ = ["RECALL_NOTE", "RECALL_TOKENS", "SessionToolset", "render_recalled"]

RECALL_TOKENS = 2_000
"""The most a `recall` tool result holds, in tokens (cl100k): a few messages, never a context's worth."""

RECALL_NOTE = (
    "Every message this summary replaced is kept word for word: call the `recall` tool with a few "
    "words of what you need (a name, a value, a file) to get the original messages back."
)

_CUT = "[… {n:,} characters cut: recall with narrower words for the rest …]"


def _texts(message: Any) -> list[str]:
    """The message's parts as the agent reads them: who, and what they said or did."""
    out = []
    for part in message.parts:
        kind = part.part_kind
        if kind == "tool-call":
            out.append(f"assistant called {part.tool_name}({part.args_as_json_str()})")
        elif kind in ("tool-return", "retry-prompt"):
            said = part.model_response_str() if kind == "tool-return" else part.model_response()
            out.append(f"{part.tool_name} returned: {said}")
        elif kind == "user-prompt":
            content = (
                part.content if isinstance(part.content, str) else " ".join(str(c) for c in part.content)
            )
            out.append(f"user: {content}")
        elif kind in ("text", "thinking"):
            out.append(f"assistant: {part.content}")
        elif kind == "system-prompt":
            out.append(f"system: {part.content}")
    return out


def _focus(text: str, terms: list[str], reach: int) -> int:
    """Where in `text` the most distinct query words occur within `reach` characters of each other
    (the earliest such place): the line that answers is where the words meet, not where one first
    appears. One pass of a sliding window over the words' positions."""
    lowered = text.lower()
    hits = sorted((m.start(), t) for t in terms for m in re.finditer(re.escape(t), lowered))
    inside: dict[str, int] = {}
    best, where, j = 0, 0, 0
    for i, (at, _) in enumerate(hits):
        while j < len(hits) and hits[j][0] <= at + reach:
            inside[hits[j][1]] = inside.get(hits[j][1], 0) + 1
            j += 1
        if len(inside) > best:
            best, where = len(inside), at
        term = hits[i][1]
        inside[term] -= 1
        if not inside[term]:
            del inside[term]
    return where


def _around(text: str, terms: list[str], chars: int) -> str:
    """`text` cut to about `chars` characters around where its query words meet, the cuts marked."""
    if len(text) <= chars:
        return text
    at = _focus(text, terms, max(chars // 3, 40))
    start = max(0, min(at - chars // 3, len(text) - chars))
    end = start + chars
    head = _CUT.format(n=start) + " " if start else ""
    tail = " " + _CUT.format(n=len(text) - end) if end < len(text) else ""
    return f"{head}{text[start:end]}{tail}"


def render_recalled(found: list[Recalled], query: str, budget: int) -> str:
    """The `recall` tool's answer: each message under its revision, the whole within `budget` tokens."""
    shown = query if len(query) <= 100 else query[:100] + "…"
    if not found:
        return f"No message of this session matches {shown!r}: try other words (a name, a value, a path)."
    terms = query_terms(query)
    entries = [(r.revision, "\n".join(_texts(r.message))) for r in found]
    head = f"{len(found)} message(s) of this session's log match {shown!r}, best first, verbatim:"

    def render(chars: int | None) -> str:
        lines = [head]
        for revision, text in entries:
            lines.append(f"[{revision}] {text if chars is None else _around(text, terms, chars)}")
        return "\n".join(lines)

    out = render(None)
    chars = max(sum(len(t) for _, t in entries) // len(entries), 200)
    while count_text(out) > budget and chars > 80:
        chars = int(chars * 0.7)
        out = render(chars)
    while count_text(out) > budget and len(entries) > 1:  # still over: fewer messages, best kept
        entries.pop()
        out = render(chars)
    return out


class SessionToolset(FunctionToolset[Any]):
    """`recall` and `compact` for an agent running on `session` (see the module docstring)."""

    def __init__(self, session: Session, *, recall_tokens: int = RECALL_TOKENS, limit: int = 5) -> None:
        if recall_tokens < 200:
            raise SessionStoreError(
                f"recall_tokens must leave room for a message (200 or more), not {recall_tokens}"
            )
        super().__init__()
        self.session = session
        self.recall_tokens = recall_tokens
        self.limit = limit
        if RECALL_NOTE not in session.summary_notes:
            session.summary_notes.append(RECALL_NOTE)
        self.add_function(self.recall, name="recall")
        self.add_function(self.compact, name="compact")

    def recall(self, query: str) -> str:
        """Get back, word for word, earlier messages of this conversation that a summary replaced.

        Args:
            query: a few words of what you need: a name, a value, a file path, an error.
        """
        try:
            found = self.session.recall(query, limit=self.limit)
        except SessionStoreError as err:
            return str(err)
        return render_recalled(found, query, self.recall_tokens)

    def compact(self, focus: str | None = None) -> str:
        """Ask for this conversation to be compacted (summarized, recent messages kept) before your next
        request, to free room; nothing is lost: `recall` gets any replaced message back.

        Args:
            focus: what the summary should keep above all, if anything.
        """
        self.session.request_checkpoint(focus)
        about = f" focused on {focus!r}" if focus else ""
        return (
            f"A checkpoint{about} will be written before your next request; recall reaches what it replaces."
        )
