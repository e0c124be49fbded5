"""FileConversationStore benchmark (issue 6): save after each turn and load of a 10,000-message conversation.

    /work/benchvenv/bin/python benchmarks/bench_conversation_store.py [--messages 10000] [--write]

Contenders, each on a file in the same temp dir (so the same filesystem and fsync costs):
- raw: the baseline: serialize the new messages, one append, one fdatasync; load = read the file and
  one `ModelMessagesTypeAdapter.validate_json`.
- FileConversationStore, and InMemoryConversationStore (the reference, not durable), both through
  pydantic-ai's own `load`/`save`.
- OpenAI Agents SDK `SQLiteSession` (package openai-agents) and LangGraph `SqliteSaver` (packages
  langgraph, langgraph-checkpoint-sqlite) on a file database, when importable: install them in a
  separate venv, never as project dependencies. Each stores the same message JSON and loads it back
  into pydantic-ai messages. LangGraph checkpoints the whole `messages` channel on every step, as its
  `add_messages` state does, so its conversation is preloaded in one checkpoint and only the timed turns
  are saved one by one (building it turn by turn is quadratic).

Workload: the real Claude Code transcript (as in bench_store.py) replicated to `--messages` messages,
saved turn by turn. Reported: per-save time over the whole build, per-save time of the last 20 turns
(at ~10k messages: the comparison every store takes part in), and a cold load (a new store object).
All figures are ratios against the raw baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_store import real_turns, replicate
from common import fmt_time, machine_line, write_section
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore, InMemoryConversationStore
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from sessionstore.accounting.tokens import estimate_messages
from sessionstore.integrations.conversation_store import FileConversationStore
from sessionstore.plumbing import codec, fsutil

LAST = 20
"""Turns saved one by one at the end, on the full-size conversation."""


class Contender:
    """One store: `save(new messages)` after each turn, and a cold `load()` of everything."""

    name = ""
    durable = True

    def __init__(self, work: Path) -> None:
        self.work = work

    def preload(self, turns: list[list[ModelMessage]]) -> None:
        for turn in turns:
            self.save(turn)

    def save(self, turn: list[ModelMessage]) -> None:
        raise NotImplementedError

    def load(self) -> list[ModelMessage]:
        raise NotImplementedError


class Raw(Contender):
    name = "raw append+fdatasync"

    def __init__(self, work: Path) -> None:
        super().__init__(work)
        self.path = work / "raw.jsonl"

    def save(self, turn: list[ModelMessage]) -> None:
        data = codec.encode(turn)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, data)
            fsutil._datasync(fd)
        finally:
            os.close(fd)

    def load(self) -> list[ModelMessage]:
        return codec.decode([self.path.read_bytes()])


class RawTokens(Raw):
    name = "raw append+fdatasync, plus the tiktoken estimate"

    def __init__(self, work: Path) -> None:
        super().__init__(work)
        self.path = work / "raw-tokens.jsonl"

    def save(self, turn: list[ModelMessage]) -> None:
        estimate_messages(turn)
        super().save(turn)


class PydanticStore(Contender):
    """A pydantic-ai `ConversationStore`, used as its docs say: load once, append, save after each turn."""

    def __init__(self, work: Path, make: Callable[[], ConversationStore]) -> None:
        super().__init__(work)
        self.make = make
        self.store = make()
        self.loop = asyncio.new_event_loop()
        self.conversation = Conversation(conversation_id="bench")

    def save(self, turn: list[ModelMessage]) -> None:
        self.conversation.messages.extend(turn)
        self.loop.run_until_complete(self.store.save(self.conversation))

    def load(self) -> list[ModelMessage]:
        store = self.store if isinstance(self.store, InMemoryConversationStore) else self.make()
        loaded = self.loop.run_until_complete(store.load("bench"))
        assert loaded is not None
        return loaded.messages


class OpenAISQLite(Contender):
    name = "openai-agents SQLiteSession (file)"

    def __init__(self, work: Path) -> None:
        from agents import SQLiteSession

        super().__init__(work)
        self.make = lambda: SQLiteSession("bench", str(work / "openai.db"))
        self.session = self.make()
        self.loop = asyncio.new_event_loop()

    def save(self, turn: list[ModelMessage]) -> None:
        items = codec.to_jsonable(turn)
        self.loop.run_until_complete(self.session.add_items(items))  # type: ignore[arg-type]

    def load(self) -> list[ModelMessage]:
        items = self.loop.run_until_complete(self.make().get_items())
        return ModelMessagesTypeAdapter.validate_python(items)


class LangGraphSQLite(Contender):
    name = "langgraph SqliteSaver (file)"

    def __init__(self, work: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        super().__init__(work)
        self.path = work / "langgraph.db"
        self.saver = SqliteSaver(sqlite3.connect(self.path, check_same_thread=False))
        self.saver.setup()
        self.config: dict[str, Any] = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        self.messages: list[Any] = []
        self.step = 0

    def preload(self, turns: list[list[ModelMessage]]) -> None:
        self.save([m for turn in turns for m in turn])

    def save(self, turn: list[ModelMessage]) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.messages = [*self.messages, *codec.to_jsonable(turn)]
        self.step += 1
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": self.messages}
        checkpoint["channel_versions"] = {"messages": self.step}
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        self.config = self.saver.put(self.config, checkpoint, metadata, {"messages": self.step})  # type: ignore[arg-type]

    def load(self) -> list[ModelMessage]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        saver = SqliteSaver(sqlite3.connect(self.path, check_same_thread=False))
        found = saver.get_tuple({"configurable": {"thread_id": "bench", "checkpoint_ns": ""}})
        assert found is not None
        return ModelMessagesTypeAdapter.validate_python(found.checkpoint["channel_values"]["messages"])


def contenders(work: Path) -> tuple[list[Contender], list[str]]:
    made: list[Contender] = [Raw(work), RawTokens(work)]
    file_store = PydanticStore(work, lambda: FileConversationStore(work / "sessions"))
    file_store.name = "FileConversationStore"
    memory = PydanticStore(work, InMemoryConversationStore)
    memory.name, memory.durable = "InMemoryConversationStore (reference, not durable)", False
    made += [file_store, memory]
    skipped = []
    for peer in (OpenAISQLite, LangGraphSQLite):
        try:
            made.append(peer(work))
        except ImportError as err:
            skipped.append(f"{peer.name}: skipped, not importable here ({err})")
    return made, skipped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--write", action="store_true", help="replace the issue 6 section of RESULTS.md")
    args = parser.parse_args()
    turns = replicate(real_turns(), args.messages)
    head, tail = turns[:-LAST], turns[-LAST:]
    work = Path(tempfile.mkdtemp(prefix="bench-conv-", dir=args.dir))
    lines: list[str] = []
    try:
        made, skipped = contenders(work)
        builds: dict[str, float | None] = {}
        for c in made:
            print(f"{c.name}: saving {len(head):,} turns ...", flush=True)
            start = time.perf_counter()
            c.preload(head)
            builds[c.name] = (
                None if isinstance(c, LangGraphSQLite) else (time.perf_counter() - start) / len(head)
            )
        # The timed parts alternate between the contenders, so machine load drifts hit all alike.
        saves: dict[str, list[float]] = {c.name: [] for c in made}
        for turn in tail:
            for c in made:
                start = time.perf_counter()
                c.save(turn)
                saves[c.name].append(time.perf_counter() - start)
        # Rotate the order every round: whoever runs right after the largest load pays for freeing it.
        loads = {c.name: float("inf") for c in made}
        for r in range(2 * len(made)):
            for c in made[r % len(made) :] + made[: r % len(made)]:
                start = time.perf_counter()
                c.load()
                loads[c.name] = min(loads[c.name], time.perf_counter() - start)
        for c in made:
            assert len(c.load()) == args.messages, c.name
        rows = {c.name: (builds[c.name], sorted(saves[c.name])[LAST // 2], loads[c.name]) for c in made}
        base = rows[Raw.name]
        lines.append(machine_line())
        lines.append(
            f"{args.messages:,} messages in {len(turns):,} turns (real Claude Code turns, replicated); "
            f"temp dir on the filesystem of {work.parent}."
        )
        lines.append("")
        lines.append(
            "| store | save per turn, whole build | save per turn at ~10k msgs (median of last "
            f"{LAST}) | cold load of {args.messages:,} msgs |"
        )
        lines.append("|---|---|---|---|")
        for name, (build, last, load) in rows.items():
            b = (
                f"{fmt_time(build)} ({build / base[0]:.2f}×)"
                if build is not None and base[0]
                else "not built turn by turn"
            )
            lines.append(
                f"| {name} | {b} | {fmt_time(last)} ({last / base[1]:.2f}×) "
                f"| {fmt_time(load)} ({load / base[2]:.2f}×) |"
            )
        lines += [
            "",
            *verdict(rows, [c.name for c in made if c.durable and not isinstance(c, Raw)]),
            *skipped,
        ]
        lines += ["", *NOTES]
        lines += ["", *phases(work, turns)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines)
    print("\n" + text)
    if args.write:
        write_results(text)


NOTES = [
    "Why a save costs what it does: the on-disk design (DESIGN §2) gives each save a content-addressed",
    "blob file (data fdatasync + a directory fsync for its new name) and a log line (fdatasync): three",
    "syncs against the baseline's one, each appending to a growing file, so each forces a journal",
    "commit. Each commit also carries tiktoken estimates of the new messages (`sizes`, `tokens`: what",
    "`session list`/`gauge` show); on these real turns tokenizing alone costs more than the baseline's",
    "whole save. The estimate runs while the blob is written on a worker thread (the syncs release",
    "the GIL), so the step times above overlap and their sum exceeds the total.",
    "The SQLite peers run in WAL mode (synchronous=FULL, so durable per commit): one WAL sync, and once",
    "the WAL has grown they overwrite it in place, which syncs no file metadata; that is why",
    "SQLiteSession's save costs about what the raw append does. LangGraph stores the whole `messages`",
    "channel per checkpoint, so its save grows with the conversation. A load is dominated everywhere",
    "by validating the 10,000 messages, so load ratios sit near 1 and move with machine load (2",
    "shared CPUs here, other jobs running): see the noise check above.",
]


def verdict(rows: dict[str, tuple[float | None, float, float]], durable: list[str]) -> list[str]:
    """Whether FileConversationStore met the goal: the fastest durable store, within 1.5x of raw."""
    ours, base = rows["FileConversationStore"], rows[Raw.name]
    out = []
    for label, i in (("save per turn at ~10k messages", 1), ("cold load", 2)):
        fastest = min(durable, key=lambda name: rows[name][i])
        r = ours[i] / base[i]
        met = fastest == "FileConversationStore" and r <= 1.5
        out.append(
            f"Goal for {label} (fastest durable store, ≤ 1.5× raw): {'met' if met else 'MISSED'}: "
            f"{r:.2f}× raw; fastest durable: {fastest} ({rows[fastest][i] / base[i]:.2f}× raw)."
        )
    twin = rows[RawTokens.name][2] / base[2]
    out.append(
        f"Noise check: both raw baselines load the same file format the same way; their loads differ "
        f"by {max(twin, 1 / twin):.2f}× in this run, so smaller load differences are not significant."
    )
    return out


def phases(work: Path, turns: list[list[ModelMessage]]) -> list[str]:
    """Where a FileConversationStore save spends its time (one pass of 200 turns, wrapped functions)."""
    from sessionstore.integrations import conversation_store as cs
    from sessionstore.plumbing import fsutil, logs, objects
    from sessionstore.porcelain.session import writer

    targets = [
        (cs.codec, "encode_unchecked", "encode messages (pydantic dump)"),
        (cs.codec, "check_decodable", "read-back check"),
        (writer, "estimate_messages", "token estimate"),
        (fsutil.StagedTemp, "sync", "blob temp file fdatasync"),
        (objects, "fsync_dir", "blob directory fsync"),
        (logs, "append_durable", "log line write + fdatasync"),
        (cs, "record_to_json", "record to JSON (pydantic)"),
    ]
    spent: dict[str, float] = {}
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in targets]

    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

        return timed

    store = PydanticStore(work, lambda: FileConversationStore(work / "phases"))
    sample = turns[:200]
    for (mod, name, label), (_, _, fn) in zip(targets, saved, strict=True):
        setattr(mod, name, wrap(fn, label))
    try:
        start = time.perf_counter()
        for turn in sample:
            store.save(turn)
        total = time.perf_counter() - start
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
    out = [
        f"Where a FileConversationStore save goes ({len(sample)} turns, "
        f"{fmt_time(total / len(sample))} each; steps overlap, since the blob is written on a thread):",
        "",
    ]
    out += ["| step | per save | share |", "|---|---|---|"]
    spent["other (pydantic-ai save logic, lock, thread hop, log checks)"] = total - sum(spent.values())
    for label, seconds in spent.items():
        out.append(f"| {label} | {fmt_time(seconds / len(sample))} | {100 * seconds / total:.0f}% |")
    return out


def write_results(text: str) -> None:
    title = "## FileConversationStore (issue 6)"
    write_section(
        title,
        f"{title}\n\n`/work/benchvenv/bin/python benchmarks/bench_conversation_store.py --write`; {text}\n",
    )


if __name__ == "__main__":
    main()
