"""Object storage benchmark (issue 32): a store at `s3://bucket/prefix` on a real S3 API server.

    .venv/bin/python benchmarks/bench_object_store.py [--turns 40] [--sessions 1000]

The server is moto in server mode on 127.0.0.1 (tests/helpers/s3_server.py), started and stopped here.
Four measurements, each against the simplest honest baseline in the same run:

- append: `Session.append` of a real-sized turn (about 24 KB of new text every turn: a user question and
  a tool-heavy answer) vs one bare `obstore.put` of the same number of bytes to the same server, the two
  interleaved turn by turn; goal: the append's median <= 2.5x the PUT's (a turn is a blob and a commit).
- conversation save: `FileConversationStore.save` of each run's result, a conversation growing by one
  such turn a run, vs one bare PUT of the turn's bytes, interleaved; the same goal.
- replay: opening a session of 200 turns whose newest checkpoint came 10 turns ago, vs one without a
  checkpoint: requests made (O(tail) vs O(log)) and time.
- list: `SessionStore.infos()` (what `session list` reads) at `--sessions` sessions: requests made,
  cold (no heads index yet: a read per hint) and warm (O(sessions / 1000)), and time.

Requests are counted by the store's `Bucket` (by kind) and, as a cross-check, from the server's own log.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from common import machine_line

from helpers.s3_server import moto_server


def _turn(i: int):
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart

    words = [f"w{i}x{j}" for j in range(2000)]
    return [
        ModelRequest(parts=[UserPromptPart(content=f"question {i}: " + " ".join(words[:300]))]),
        ModelResponse(
            parts=[
                ToolCallPart(tool_name="read_file", args={"path": f"src/m{i}.py"}),
                TextPart(content=f"answer {i}: " + " ".join(words)),
            ],
            model_name="test",
        ),
    ]


def bench_append(url: str, turns: int) -> dict[str, float]:
    import obstore

    from sessionstore.plumbing import codec
    from sessionstore.porcelain.store import SessionStore

    store = SessionStore.open(url, warm=False)
    session = store.session("bench")
    session.append(_turn(-1))  # first-request costs (connections, imports) out of the figures
    put_times, append_times = [], []
    for i in range(turns):
        messages = _turn(i)
        size = len(codec.encode(messages))
        payload = os.urandom(size)
        start = time.perf_counter()
        obstore.put(store.backend.bucket.store, f"bare/{i}", payload)
        put_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        session.append(messages)
        append_times.append(time.perf_counter() - start)
    put, append = statistics.median(put_times), statistics.median(append_times)
    return {"put_ms": put * 1e3, "append_ms": append * 1e3, "ratio": append / put, "bytes": size}


def bench_conversation_save(url: str, turns: int) -> dict[str, float]:
    """`FileConversationStore.save` of each run's result (a conversation growing by one real-sized turn
    a run, the product path of an app on the Vercel AI or AG-UI adapter) vs one bare PUT of the turn's
    bytes, interleaved; only the save and the PUT are timed, not the run."""
    import asyncio

    import obstore
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from sessionstore import FileConversationStore
    from sessionstore.plumbing import codec

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        reply = _turn(turn)[1]  # its text (the agent has no tools to call)
        return ModelResponse(parts=[p for p in reply.parts if p.part_kind == "text"], model_name="test")

    agent = Agent(FunctionModel(answer))
    store = FileConversationStore(url)
    bucket = store.store.backend.bucket
    put_times, save_times = [], []

    async def go() -> int:
        conversation = Conversation(conversation_id="bench-conversation")
        size = 0
        for i in range(-1, turns):  # the first run's save (connections, imports) is not timed
            result = await agent.run(_turn(i)[0].parts[0].content, conversation=conversation)
            size = len(codec.encode(result.new_messages()))
            payload = os.urandom(size)
            start = time.perf_counter()
            obstore.put(bucket.store, f"bare-save/{i}", payload)
            put = time.perf_counter() - start
            start = time.perf_counter()
            await store.save(result)
            save = time.perf_counter() - start
            if i >= 0:
                put_times.append(put)
                save_times.append(save)
            conversation = result.conversation
        return size

    size = asyncio.run(go())
    put, save = statistics.median(put_times), statistics.median(save_times)
    return {"put_ms": put * 1e3, "save_ms": save * 1e3, "ratio": save / put, "bytes": size}


def bench_replay(url: str) -> dict[str, dict[str, float]]:
    from sessionstore.plumbing.commits import make_line
    from sessionstore.plumbing.object_logs import flush_hints
    from sessionstore.porcelain.store import SessionStore

    store = SessionStore.open(url, warm=False)
    out = {}
    for name, checkpoint in (("with-checkpoint", True), ("without", False)):
        log, head = store.log(name), None
        for i in range(200):  # built through the plumbing (faster than 200 appends), then replayed
            blob = store.objects.write(f'[{{"parts":[],"kind":"request","n":{i}}}]\n'.encode())
            reset = checkpoint and i == 189
            extra = {"sizes": [1], **({"blobs": [blob], "tier": 2, "checkpoint": 1} if reset else {})}
            line, body = make_line(parent=head, kind="compaction" if reset else "turn", blob=blob,
                                   count=1 if reset else (head.count if head else 0) + 1, tokens=1,
                                   usage=None, extra=extra)  # fmt: skip
            head = log.append(line, body, head)
            if reset:
                store.refs.create(name, 1, head.id, head.offset)
        flush_hints()
        bucket = store.backend.bucket
        before = dict(bucket.requests)
        start = time.perf_counter()
        commits, _ = store.log(name).scan(since_reset=True)
        took = time.perf_counter() - start
        spent = {k: n - before.get(k, 0) for k, n in bucket.requests.items() if n != before.get(k, 0)}
        out[name] = {"commits_read": len(commits), "requests": sum(spent.values()), **spent, "ms": took * 1e3}
    return out


def bench_list(url: str, sessions: int) -> dict[str, dict[str, float]]:
    from sessionstore.plumbing.commits import make_line
    from sessionstore.porcelain.store import SessionStore

    store = SessionStore.open(url, warm=False)
    bucket = store.backend.bucket
    blob = store.objects.write(b'[{"parts":[],"kind":"request"}]\n')
    for n in range(sessions):  # one commit each, and its head hint, as an append leaves them
        line, _ = make_line(parent=None, kind="turn", blob=blob, count=1, tokens=1, usage=None,
                            extra={"sizes": [1]})  # fmt: skip
        bucket.create(f"logs/s{n:05d}/{1:012d}", line)
        bucket.put(f"heads/s{n:05d}", line)
    out = {}
    for phase in ("cold", "warm"):
        before = dict(bucket.requests)
        start = time.perf_counter()
        infos = store.infos()
        took = time.perf_counter() - start
        assert len(infos) == sessions and all(i.count == 1 for i in infos)
        spent = {k: n - before.get(k, 0) for k, n in bucket.requests.items() if n != before.get(k, 0)}
        out[phase] = {"requests": sum(spent.values()), **spent, "ms": took * 1e3}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--only", default="append,save,replay,list", help="which measurements (comma-separated)"
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(machine_line())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with moto_server(Path(tempfile.mkdtemp())) as server:
        os.environ.update(server.env)
        if "append" in only:
            append = bench_append(f"s3://{server.bucket()}/a", args.turns)
            print(
                f"append: Session.append median {append['append_ms']:.1f} ms vs bare PUT of the same "
                f"{append['bytes']} bytes {append['put_ms']:.1f} ms: {append['ratio']:.2f}x (goal <= 2.5x)"
            )
        if "save" in only:
            save = bench_conversation_save(f"s3://{server.bucket()}/c", args.turns)
            print(
                f"conversation save: FileConversationStore.save median {save['save_ms']:.1f} ms vs bare "
                f"PUT of the turn's {save['bytes']} bytes {save['put_ms']:.1f} ms: {save['ratio']:.2f}x "
                "(goal <= 2.5x)"
            )
        if "replay" in only:
            for name, row in bench_replay(f"s3://{server.bucket()}/r").items():
                print(f"replay {name}: {row}")
        if "list" in only:
            for phase, row in bench_list(f"s3://{server.bucket()}/l", args.sessions).items():
                print(f"list at {args.sessions} sessions, {phase}: {row}")
        print(f"server log: {server.requests_logged()} requests in all")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
