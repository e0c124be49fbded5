"""FileConversationStore conversations in the CLI: `list` and `show` give the id and scope, the id
names the session, and a long id does not widen every `list` row."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
from pydantic_ai.conversation import Conversation

from helpers.cli import run
from helpers.conversations import run_turn
from sessionstore import FileConversationStore, SessionStore

LONG_ID = "support/ticket 42: printer on fire, " + "x" * 80


def _save(root: Path, cid: str, scope: str | None) -> None:
    store = FileConversationStore(root)

    async def go() -> None:
        result = await run_turn(Conversation(conversation_id=cid), "hello")
        await store.save(result, scope=scope)

    asyncio.run(go())


def test_list_and_show_give_conversation_id_and_scope(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _save(root, LONG_ID, "user:7")
    SessionStore.open(root).session("plain").append(
        asyncio.run(run_turn(Conversation(conversation_id="p"), "hi")).new_messages(), compact=False
    )
    lines = run(root, "list").stdout.splitlines()
    conv = next(line for line in lines if "conversation" in line)
    assert "[user:7]" in conv and "support/ticket 42" in conv
    plain = next(line for line in lines if line.split()[0] == "plain")
    assert len(plain) < 120  # the conversation's 117-character id widens no row
    records = orjson.loads(run(root, "list", "--json").stdout)
    (record,) = [r for r in records if r["conversation"]]
    assert record["conversation"] == {"id": LONG_ID, "scope": "user:7"} and record["name"].startswith("c-")
    shown = run(root, "show", LONG_ID)
    assert shown.exit_code == 0, shown.output
    assert f"conversation {LONG_ID!r} (scope user:7)" in shown.stdout.splitlines()[1]
    document = orjson.loads(run(root, "show", LONG_ID, "--json").stdout)
    assert document["conversation"] == {"id": LONG_ID, "scope": "user:7"}
    log = run(root, "log", LONG_ID).stdout
    assert f"Conversation: {LONG_ID!r} (scope user:7)" in log
    refused = run(root, "rename", record["name"], "nicer")
    assert refused.exit_code == 2 and "FileConversationStore conversation" in refused.stderr
