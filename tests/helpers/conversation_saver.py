"""Child process for the FileConversationStore process tests.

conversation_saver.py race STORE CID    load CID, print `loaded`, wait for a line on stdin, run one
                                       turn and save it; print `saved` or `conflict`
conversation_saver.py crash STORE CID  fork server: per round number read from stdin, print `pid P`,
                                       then the victim prints `ack ROUND I` after each save returned
                                       (its prompt was `ROUND I`) until it is killed; `dead P` last
"""

from __future__ import annotations

import asyncio
import os
import sys

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict

from helpers.conversations import run_turn
from sessionstore.integrations.conversation_store import FileConversationStore


async def race(root: str, cid: str) -> None:
    store = FileConversationStore(root)
    conversation = await store.load(cid)
    assert conversation is not None
    print("loaded", flush=True)
    sys.stdin.readline()
    result = await run_turn(conversation, f"racer {os.getpid()}")
    try:
        await store.save(result)
    except ConversationConflict:
        print("conflict", flush=True)
    else:
        print("saved", flush=True)


async def victim(root: str, cid: str, rnd: int) -> None:
    store = FileConversationStore(root)  # a fresh open, like a restarted program
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    i = 0
    while True:
        result = await run_turn(conversation, f"{rnd} {i}")
        await store.save(result)
        os.write(1, f"ack {rnd} {i}\n".encode())
        conversation = result.conversation
        i += 1


def crash(root: str, cid: str) -> None:
    asyncio.run(run_turn(Conversation(), "warm up"))  # import and build everything before forking
    print("ready", flush=True)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                asyncio.run(victim(root, cid, int(line)))
            finally:
                os._exit(1)
        print(f"pid {pid}", flush=True)
        os.waitpid(pid, 0)
        print(f"dead {pid}", flush=True)


if __name__ == "__main__":
    mode, root, cid = sys.argv[1:4]
    if mode == "race":
        asyncio.run(race(root, cid))
    else:
        crash(root, cid)
