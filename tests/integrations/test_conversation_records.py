"""ConversationLog (integrations/conversation_records.py): the cached view of one conversation's log.

Most of its behaviour is pinned through FileConversationStore in test_conversation_store*.py; here,
what a save reads from it directly."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from helpers.conversations import save_turns
from helpers.messages import tagged_turn
from sessionstore import FileConversationStore
from sessionstore.integrations.conversation_records import RECORD, ConversationLog
from sessionstore.integrations.conversation_store import ConversationNameTaken
from sessionstore.porcelain.session.writer import write_commit


@pytest.mark.parametrize("n", [1, 3])
def test_owned_revision_is_the_records_revision_and_head_without_building_it(tmp_path: Path, n: int) -> None:
    store = FileConversationStore(tmp_path / "s")
    save_turns(store, "chat", n)
    view = ConversationLog(store.store.log("chat"))
    view.refresh()
    record = view.owned_record("chat")
    assert record is not None and record.head_id is not None
    assert view.owned_revision("chat") == (record.revision, record.head_id)
    with pytest.raises(ConversationNameTaken, match="holds conversation 'chat'"):
        view.owned_revision("other")
    empty = ConversationLog(store.store.log("nothing-here"))
    empty.refresh()
    assert empty.owned_revision("nothing-here") is None and empty.owned_record("nothing-here") is None


def test_owned_revision_refuses_a_plain_session_and_names_a_malformed_record_as_validation_does(
    tmp_path: Path,
) -> None:
    store = FileConversationStore(tmp_path / "s")
    store.store.session("plain").append(tagged_turn(0, 0), compact=False)
    plain = ConversationLog(store.store.log("plain"))
    plain.refresh()
    with pytest.raises(ConversationNameTaken, match="plain session"):
        plain.owned_revision("plain")
    save_turns(store, "chat", 1)
    log = store.store.log("chat")
    view = ConversationLog(log)
    view.refresh()
    assert view.record_json is not None
    damaged = {**view.record_json, "revision": 5}
    with store.store.lock("chat"):  # a line from another writer, its record's revision not a string
        extra = {"sizes": [], "ids": [], "after": view.record_json["head_id"], RECORD: damaged}
        write_commit(log, view.head, kind="turn", blob=None, count=view.head.count, tokens=view.head.tokens,
                     extra=extra)  # fmt: skip
    fresh = ConversationLog(log)
    fresh.refresh()
    with pytest.raises(ValidationError) as by_record:
        fresh.owned_record("chat")
    with pytest.raises(ValidationError) as by_revision:
        fresh.owned_revision("chat")
    assert str(by_revision.value) == str(by_record.value)
