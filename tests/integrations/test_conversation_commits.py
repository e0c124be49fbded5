"""The commit a FileConversationStore write makes (integrations/conversation_commits.py).

End to end (branches, forks, deletes, conflicts) it is pinned through FileConversationStore in
test_conversation_store*.py; here, what each plan holds for a view, checked against the blobs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

from helpers.conversations import save_turns
from helpers.messages import tagged_turn
from sessionstore import FileConversationStore
from sessionstore.accounting.tokens import estimate_messages
from sessionstore.integrations.conversation_commits import reset_commit, turn_commit
from sessionstore.integrations.conversation_records import AFTER, COUNTS, IDS, ConversationLog
from sessionstore.plumbing import codec


def saved(store: FileConversationStore, cid: str, turns: int) -> ConversationLog:
    save_turns(store, cid, turns)
    view = ConversationLog(store.store.log(cid))
    view.refresh()
    return view


def entries(messages: list, parent: str | None) -> list[ConversationEntry]:
    out = []
    for message in messages:
        out.append(ConversationEntry(parent_id=parent, message=message))
        parent = out[-1].id
    return out


def test_a_turn_plan_stages_one_blob_of_the_new_messages_with_their_ids_sizes_and_totals(
    tmp_path: Path,
) -> None:
    store = FileConversationStore(tmp_path / "s")
    view = saved(store, "chat", 2)
    assert view.head is not None
    previous = view.owned_revision("chat")[1]  # type: ignore[index]
    new = entries(tagged_turn(1, 0, size=3), previous)
    plan = turn_commit(store.store.objects, view, new, previous)
    assert plan.landed is not None
    plan.landed()  # durable under its name before any line may name it
    messages = [entry.message for entry in new]
    assert plan.kind == "turn" and store.store.objects.read(plan.blob) == codec.encode(messages)
    assert plan.fields[IDS] == [entry.id for entry in new] and plan.fields[AFTER] == previous
    assert plan.fields["sizes"] == estimate_messages(messages)
    assert (plan.count, plan.tokens) == (view.head.count + 3, view.head.tokens + sum(plan.fields["sizes"]))
    empty = turn_commit(store.store.objects, view, [], previous)
    assert (empty.blob, empty.landed, empty.fields) == (None, None, {"sizes": []})
    assert (empty.count, empty.tokens) == (view.head.count, view.head.tokens)


def test_a_reset_plan_reuses_whole_blobs_and_slices_a_cut_blob_without_re_encoding(tmp_path: Path) -> None:
    store = FileConversationStore(tmp_path / "s")
    view = saved(store, "chat", 3)
    chain = view.chain(view.owned_revision("chat")[1])  # type: ignore[index]
    cut = chain[-2][0]  # the history cut one entry before the head: inside the last turn's blob
    added = entries(tagged_turn(2, 0), cut)
    record = ConversationRecord(conversation_id="chat", head_id=added[-1].id)
    plan = reset_commit(store.store.objects, view, record, added, lambda _: pytest.fail("no other log"), None)
    assert plan.kind == "checkout" and plan.fields["target"] == view.head.id  # type: ignore[union-attr]
    blobs, counts = plan.fields["blobs"], plan.fields[COUNTS]
    assert blobs[-1] == plan.blob and counts[-1] == len(added) and sum(counts) == len(chain) - 1 + len(added)
    stored = b"".join(store.store.objects.read(blob) for blob in blobs[:-1])
    originals = b"".join(
        store.store.objects.read(blob) for blob in dict.fromkeys(loc.blob for _, loc in chain)
    )
    assert originals.startswith(stored) and stored.count(b"\n") == len(chain) - 1  # a byte slice
    assert plan.fields[IDS] == [eid for eid, _ in chain[:-1]] + [entry.id for entry in added]
    assert plan.fields["sizes"][: len(chain) - 1] == [loc.size for _, loc in chain[:-1]]
    assert (plan.count, plan.tokens) == (len(plan.fields["sizes"]), sum(plan.fields["sizes"]))


def test_a_first_commit_from_another_log_is_a_fork_naming_its_source(tmp_path: Path) -> None:
    store = FileConversationStore(tmp_path / "s")
    source = saved(store, "chat", 2)
    head = source.owned_revision("chat")[1]  # type: ignore[index]
    empty = ConversationLog(store.store.log("copy"))
    empty.refresh()
    record = ConversationRecord(conversation_id="copy", head_id=head, forked_from="chat")
    asked: list[str] = []

    def find(entry_id: str) -> ConversationLog:
        asked.append(entry_id)
        return source

    plan = reset_commit(store.store.objects, empty, record, [], find, "chat")
    assert asked == [head] and plan.kind == "fork" and plan.blob is None
    assert plan.fields["from"] == "chat" and plan.fields["target"] == source.head.id  # type: ignore[union-attr]
    assert plan.fields[IDS] == [eid for eid, _ in source.chain(head)]
    unnamed = reset_commit(store.store.objects, empty, record, [], find, None)
    assert unnamed.fields["from"] == source.name
