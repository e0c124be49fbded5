"""`Session.recall` (porcelain/recall.py): the whole log searched, each message once, verbatim, ranked
by the query's rarer words; summaries and instructions left out."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from sessionstore import SessionStore
from sessionstore.porcelain.session.recall import query_terms


def turn(prompt: str, answer: str) -> list:
    return [
        ModelRequest(parts=[UserPromptPart(prompt)], instructions="be brief"),
        ModelResponse(parts=[TextPart(answer)]),
    ]


def test_words_and_their_weight(tmp_path: Path) -> None:
    s = SessionStore.open(tmp_path).session("s")
    for i in range(6):
        s.append(turn(f"the task {i} is the usual", f"done with the task {i}"), compact=False)
    s.append(turn("the staging database port is 6543", "noted the port"), compact=False)
    [best, second] = s.recall("what is the staging port", limit=2)
    assert best.message.parts[0].content == "the staging database port is 6543" and best.revision == "s@7"
    assert second.message.parts[0].content == "noted the port", "rarer words decide, 'the' and 'is' do not"
    assert query_terms("What is THE port, the PORT?") == ["what", "is", "the", "port"]
    assert query_terms("a b") == ["a", "b"], "single letters only when nothing longer is given"
    assert s.recall("brief") == [], "instructions repeat on every request: never searched"


def test_the_whole_log_each_message_once_summaries_aside(tmp_path: Path) -> None:
    s = SessionStore.open(tmp_path).session("s")
    s.append(turn("remember the vault path secret/deploy/k7", "ok"), compact=False)
    for i in range(3):
        s.append(turn(f"step {i}", f"did step {i}"), compact=False)
    s.compact()
    s.compact()  # the tail is copied into each checkpoint's blob, byte for byte
    hits = s.recall("vault deploy", limit=10)
    assert [h.revision for h in hits] == ["s@1"], "found once, under the commit that first stored it"
    assert all(p.part_kind != "compaction" for h in s.recall("step", limit=20) for p in h.message.parts)
    fork = s.store.fork("s@2", "f")
    assert [h.revision for h in fork.recall("vault")] == ["f@1"], "a fork's history is its own"
