"""The offline, deterministic summarizer: the skeleton filled by typed extraction, no model at all.

It is what `model = "extractive"` (the default) uses, so compaction works without an API key. The
replaced messages go through `extraction.extract` (constraints, facts, decisions, conclusions, open
questions, blocked and done work, the goal chosen by content), corrections are resolved (latest value
wins, the superseded one marked), and `render` writes the skeleton most important first within
`max_tokens` (the `summary_max_tokens` setting, or the smaller share full.py allows). A previous
summary at the head of `messages` is parsed and merged section by section, so successive compactions
keep what earlier ones kept. The second line always says the summary is offline and extractive.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import CompactionPart, ModelMessage

from sessionstore.summary.extraction import Extraction, extract, resolve
from sessionstore.summary.render import EXTRACTIVE_MARKER, parse_summary, render
from sessionstore.summary.skeleton import is_summary_request

__all__ = ["DEFAULT_MAX_TOKENS", "EXTRACTIVE_MARKER", "MAX_SUMMARY_TOKENS", "collect", "summarize_extractive"]

DEFAULT_MAX_TOKENS = 4000
"""The `summary_max_tokens` default (DESIGN §10), for callers without settings (tier 3, resume)."""
MAX_SUMMARY_TOKENS = DEFAULT_MAX_TOKENS


def collect(messages: Sequence[ModelMessage], later: Sequence[ModelMessage] = ()) -> Extraction:
    """The resolved items of `messages`; a leading summary request is parsed and merged first.

    `later` is what stays verbatim after them (the tail): it is read only to resolve corrections, so
    a value the tail corrects is marked superseded in the summary instead of standing as current. The
    LLM path's check (summarizer.py) uses the same function, so both summarizers are held to the same
    list of what must be kept.
    """
    body = list(messages)
    ex = Extraction()
    if body and is_summary_request(body[0]):
        for part in body[0].parts:
            if isinstance(part, CompactionPart) and part.content:
                previous = parse_summary(part.content)
                previous.messages = max(previous.messages, 1)  # a foreign summary still stood for something
                ex = previous
        body = body[1:]
    extract(body, into=ex)
    if not later:
        return resolve(ex)
    mine = len(ex.items)
    messages, requests = ex.messages, list(ex.requests)
    goal, earlier = ex.goal, list(ex.earlier_goals)
    lists = (list(ex.files), list(ex.commands), list(ex.identifiers), list(ex.pasted))
    extract(later, into=ex)
    tail = {id(i) for i in ex.items[mine:]}
    resolve(ex)
    ex.items = [i for i in ex.items if id(i) not in tail]
    ex.messages, ex.requests, ex.goal, ex.earlier_goals = messages, requests, goal, earlier
    ex.files, ex.commands, ex.identifiers, ex.pasted = lists
    return ex


def summarize_extractive(
    messages: Sequence[ModelMessage],
    *,
    focus: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    later: Sequence[ModelMessage] = (),
) -> str:
    """A skeleton summary of `messages` built by extraction, within `max_tokens`; line 2 says so.

    `later` (the verbatim tail) only marks values it corrects as superseded; it is not summarized."""
    return render(collect(messages, later), max_tokens=max_tokens, focus=focus)
