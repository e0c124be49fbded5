"""FileConversationStore as pydantic-ai's UI adapters use it (issue 13, item 13): names that are taken
answer with a `UserError`, lone surrogates are refused clearly with nothing stored, values come back in
their JSON form, and a hand-built conversation over its loaded history extends it (no new branch)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import InMemoryConversationStore
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.messages import tagged_turn
from sessionstore import FileConversationStore
from sessionstore.errors import InvalidSessionName
from sessionstore.integrations.conversation_store import ConversationNameTaken, UnstorableText

WHEN = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def history() -> list:
    return [
        ModelRequest(parts=[UserPromptPart("what time is it?")]),
        ModelResponse(parts=[ToolCallPart("now", {}, tool_call_id="t1")]),
        ModelRequest(parts=[ToolReturnPart("now", WHEN, tool_call_id="t1")]),  # a datetime, not a str
        ModelResponse(parts=[TextPart("half past twelve")]),
    ]


@pytest.fixture
def cstore(tmp_path: Path) -> FileConversationStore:
    return FileConversationStore(tmp_path / "store")


def test_an_id_taken_by_a_plain_session_is_a_user_error_naming_the_fix(cstore: FileConversationStore) -> None:
    cstore.store.session("chat-1").append(tagged_turn(0, 0))
    for attempt in range(2):  # retrying never helps, and says so the same way
        with pytest.raises(UserError, match="conversation id 'chat-1' is taken: this store has a plain"):
            asyncio.run(cstore.load("chat-1"))
        with pytest.raises(ConversationNameTaken, match="choose another conversation_id"):
            asyncio.run(cstore.save(Conversation(conversation_id="chat-1", messages=history())))
        assert attempt in (0, 1)
    assert issubclass(ConversationNameTaken, InvalidSessionName)  # still the store's own error too
    assert cstore.store.session("chat-1").persisted_count == 2  # the plain session is untouched


def test_a_lone_surrogate_is_refused_with_nothing_stored(cstore: FileConversationStore) -> None:
    bad_text = [ModelRequest(parts=[UserPromptPart("broken \ud800 text")])]
    with pytest.raises(UnstorableText, match=r"conversation 'c1' cannot be saved: a message holds a lone"):
        asyncio.run(cstore.save(Conversation(conversation_id="c1", messages=bad_text)))
    with pytest.raises(UserError, match=r"its record \(id, scope or metadata\) holds a lone surrogate"):
        asyncio.run(cstore.save(Conversation(conversation_id="id-\udc00", messages=history())))
    assert asyncio.run(cstore.list_conversations()) == []
    assert cstore.store.sessions() == []  # no log was started for either
    # the same conversations, once cleaned as the message suggests, save fine
    clean = "broken \ud800 text".encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    fixed = [ModelRequest(parts=[UserPromptPart(clean)])]
    asyncio.run(cstore.save(Conversation(conversation_id="c1", messages=fixed)))
    assert [r.conversation_id for r in asyncio.run(cstore.list_conversations())] == ["c1"]


def test_stored_values_come_back_in_their_json_form(cstore: FileConversationStore) -> None:
    asyncio.run(cstore.save(Conversation(conversation_id="c", messages=history())))
    loaded = asyncio.run(cstore.load("c"))
    assert loaded is not None
    returned = loaded.messages[2].parts[0]
    assert returned.content == "2026-03-01T12:30:00Z"  # a datetime comes back as its JSON string


def _hand_built_save(store, mine: list) -> tuple[list, list[str]]:
    asyncio.run(store.save(Conversation(conversation_id="c", messages=mine)))
    loaded = asyncio.run(store.load("c"))
    more = ModelRequest(parts=[UserPromptPart("and the date?")])
    # an app that keeps its own objects (the datetime one) and rebuilds the conversation by hand
    rebuilt = Conversation(conversation_id="c", messages=[*mine, more], revision=loaded.revision)
    entries = asyncio.run(store.save(rebuilt))
    record = asyncio.run(store.read_record("c"))
    return entries, record.branches


def test_a_hand_built_conversation_over_its_history_is_not_stored_again(
    cstore: FileConversationStore,
) -> None:
    mine = history()
    entries, branches = _hand_built_save(cstore, mine)
    ref_entries, ref_branches = _hand_built_save(InMemoryConversationStore(), mine)
    assert (len(entries), branches) == (len(ref_entries), ref_branches) == (1, [])
    again = asyncio.run(cstore.load("c"))
    assert again is not None and len(again.messages) == 5
    head = cstore.store.log("c").head()
    assert head is not None and head.kind == "turn" and head.count == 5  # appended, not a reset point


def test_a_really_rewritten_history_still_branches(cstore: FileConversationStore) -> None:
    mine = history()
    asyncio.run(cstore.save(Conversation(conversation_id="c", messages=mine)))
    loaded = asyncio.run(cstore.load("c"))
    changed = [*mine[:3], ModelResponse(parts=[TextPart("a different answer")])]
    entries = asyncio.run(
        cstore.save(Conversation(conversation_id="c", messages=changed, revision=loaded.revision))
    )
    record = asyncio.run(cstore.read_record("c"))
    assert len(record.branches) == 1  # the old answer is kept as a branch, as pydantic-ai does
    # It branches at the answer, not at the tool return before it: that one (the app's datetime)
    # differs from the stored one only in its JSON form, so it is shared, as in InMemory's store.
    assert [e.message for e in entries] == changed[3:]
    ref = InMemoryConversationStore()
    asyncio.run(ref.save(Conversation(conversation_id="c", messages=mine)))
    ref_loaded = asyncio.run(ref.load("c"))
    ref_entries = asyncio.run(
        ref.save(Conversation(conversation_id="c", messages=changed, revision=ref_loaded.revision))
    )
    assert len(ref_entries) == len(entries) == 1
    again = asyncio.run(cstore.load("c"))
    assert again is not None and again.messages[3] == changed[3] and len(again.messages) == 4


def test_opening_the_store_warms_up_in_the_background(tmp_path: Path) -> None:
    """A server's first save must not wait for the tokenizer or pydantic's serializers to load."""
    code = (
        "import sys, threading\n"
        "failed = []\n"
        "threading.excepthook = failed.append  # a warm-up that raises would go unnoticed otherwise\n"
        "from sessionstore import FileConversationStore\n"
        "from sessionstore.accounting import tokenizer\n"
        "from sessionstore.accounting import tokens\n"
        f"FileConversationStore({str(tmp_path / 'a')!r}); FileConversationStore({str(tmp_path / 'b')!r})\n"
        "assert tokens.wait_preloaded(60)\n"
        "from sessionstore.integrations.conversation_records import record_adapter\n"
        "assert record_adapter.cache_info().currsize == 1  # the record serializer is built\n"
        "assert tokenizer._loaded and tokenizer._counter is not None\n"
        "assert 'sessionstore.plumbing.locks' in sys.modules and not failed, failed\n"
        "assert not tokens.preload_errors, tokens.preload_errors\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
