"""FileConversationStore on object storage (DESIGN §13), against a real S3 API server (moto on 127.0.0.1).

The end-to-end case is the one issue 32 names: two HTTP server processes running pydantic-ai's Vercel
AI adapter, each with `FileConversationStore("s3://...")` and nothing shared but the endpoint, one
conversation continued alternately on each: every turn is there, in order, and each server's model saw
the whole history the other one saved.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict
from pydantic_ai.messages import ModelRequest

from helpers.conversations import prompts, run_turn
from helpers.procs import spawn, stop
from helpers.s3_server import S3Server, free_port
from sessionstore import FileConversationStore
from sessionstore.integrations.conversation_store import DeleteNotSupported
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def url(s3_env: S3Server) -> str:
    return f"s3://{s3_env.bucket()}/app"


def test_a_conversation_saved_on_one_instance_continues_on_another(
    url: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)

    async def scenario() -> None:
        a, b = FileConversationStore(url), FileConversationStore(url)
        await a.save(await run_turn(Conversation(conversation_id="c1"), "one"))
        await b.save(await run_turn(await b.load("c1"), "two"))  # b reads what a saved
        await a.save(await run_turn(await a.load("c1"), "three"))  # a catches up with b's save
        assert prompts(await FileConversationStore(url).load("c1")) == ["one", "two", "three"]
        await b.save(await run_turn(Conversation(conversation_id="c2"), "other"), scope="u")
        listed = await a.list_conversations()
        assert [r.conversation_id for r in listed] == ["c2", "c1"]  # newest first
        assert [r.conversation_id for r in await a.list_conversations(scope="u")] == ["c2"]

    asyncio.run(scenario())
    store = SessionStore.open(url, warm=False)
    assert store.sessions() == ["c1", "c2"] and store.session("c1").persisted_count == 6
    assert store.fsck().ok
    assert list(tmp_path.iterdir()) == []  # nothing local


def test_two_instances_that_loaded_one_revision_exactly_one_saves(url: str) -> None:
    async def scenario() -> None:
        a, b = FileConversationStore(url), FileConversationStore(url)
        await a.save(await run_turn(Conversation(conversation_id="c"), "first"))
        loaded_a, loaded_b = await a.load("c"), await b.load("c")
        await a.save(await run_turn(loaded_a, "from a"))
        with pytest.raises(ConversationConflict):  # the conditional create of the next commit refused b
            await b.save(await run_turn(loaded_b, "from b"))
        assert prompts(await b.load("c")) == ["first", "from a"]
        stale = await a.load("c")
        await b.save(await run_turn(await b.load("c"), "b again"))
        with pytest.raises(ConversationConflict):  # a saves on the revision it wrote, b moved on since
            await a.save(await run_turn(stale, "a on a stale tab"))
        assert prompts(await FileConversationStore(url).load("c")) == ["first", "from a", "b again"]

    asyncio.run(scenario())


def test_delete_is_refused_in_one_line_with_nothing_changed(url: str) -> None:
    async def scenario() -> None:
        store = FileConversationStore(url)
        await store.save(await run_turn(Conversation(conversation_id="keep"), "hello"))
        with pytest.raises(DeleteNotSupported, match="cannot be deleted on object storage") as err:
            await store.delete("keep")
        assert "\n" not in str(err.value)
        assert prompts(await FileConversationStore(url).load("keep")) == ["hello"]

    asyncio.run(scenario())


# -- two HTTP servers (pydantic-ai's Vercel AI adapter) on one bucket --------------------------------


@pytest.fixture
def two_servers(s3_env: S3Server, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """Two app processes on one store URL, each in its own empty directory with only the endpoint's
    environment: (store URL, [base URL of each])."""
    url = f"s3://{s3_env.bucket()}/web"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **s3_env.env}
    procs, bases = [], []
    try:
        for name in ("A", "B"):
            port = free_port()
            home = tmp_path / name
            home.mkdir()
            procs.append(spawn("vercel_app.py", url, port, name, env={**env, "PWD": str(home)}, cwd=home))
            bases.append(f"http://127.0.0.1:{port}")
        for base, proc in zip(bases, procs, strict=True):
            _wait_until_up(base, proc)
        yield url, bases
    finally:
        for proc in procs:
            stop(proc)


def _wait_until_up(base: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the app server exited"
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{base} did not answer")


def _chat(base: str, cid: str, turn: int) -> tuple[str, list[dict]]:
    """One `useChat` submit of `turn <turn>` (only the new message: the store holds the history); the
    streamed text and every data chunk of the answer."""
    body = {
        "trigger": "submit-message",
        "id": cid,
        "messages": [{"id": f"m{turn}", "role": "user", "parts": [{"type": "text", "text": f"turn {turn}"}]}],
    }
    request = urllib.request.Request(
        f"{base}/chat", data=orjson.dumps(body), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200
        stream = answer.read().decode()
    chunks = [orjson.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
    text = "".join(c["delta"] for c in chunks if c.get("type") == "text-delta")
    errors = [c for c in chunks if c.get("type") == "error"]
    assert not errors, errors
    return text, [c for c in chunks if c.get("type", "").startswith("data-")]


@pytest.mark.slow
def test_two_app_servers_continue_one_conversation_alternately(two_servers: tuple[str, list[str]]) -> None:
    url, bases = two_servers
    turns = 8
    for turn in range(turns):
        name, base = "AB"[turn % 2], bases[turn % 2]
        text, data = _chat(base, "support-42", turn)
        seen = " | ".join(f"turn {t}" for t in range(turn + 1))
        assert text == f"{name} saw {turn + 1} prompts: {seen}"  # the other server's turns were loaded
        assert any(d["type"] == "data-conversation-saved" for d in data)  # saved before the stream ended
    stored = asyncio.run(FileConversationStore(url).load("support-42"))
    assert prompts(stored) == [f"turn {t}" for t in range(turns)]  # every turn there, in order
    replies = [m.parts[0].content for m in stored.messages if not isinstance(m, ModelRequest)]
    assert [r.split(" ", 1)[0] for r in replies] == ["A", "B"] * (turns // 2)
    log = SessionStore.open(url, warm=False).session("support-42").log()
    assert [c.seq for c in log] == list(range(turns, 0, -1))  # one commit per turn, one chain
