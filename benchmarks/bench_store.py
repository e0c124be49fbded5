"""Store benchmarks (issue 2): durable append, CLI start-up, load, bytes on disk.

    /work/venv/bin/python benchmarks/bench_store.py [--dir DIR] [--sessions 1000] [--messages 10000]

Workload: the real Claude Code transcript codemie_session-3fe1b6bc.jsonl read with `read_transcript`,
replicated (each copy made distinct through `run_id`, so no blob is deduplicated) to 10,000 messages.
Every figure is a ratio against a baseline measured in the same run; timings are the min of N runs.
The store lives in a temp dir on the same filesystem as --dir (default: the system temp dir), since
fsync costs are the filesystem's.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import REALDATA, fmt_time, interleaved, machine_line, ratio
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, UserPromptPart

from sessionstore.accounting.tokens import estimate_messages
from sessionstore.formats.transcripts import read_transcript
from sessionstore.plumbing import codec, fsutil, logs, objects
from sessionstore.plumbing.objects import hash_bytes
from sessionstore.porcelain.session import writer as writer_mod
from sessionstore.porcelain.store import SessionStore

TRANSCRIPT = REALDATA / "claude_code" / "codemie_session-3fe1b6bc.jsonl"
SESSION_BIN = Path(sys.executable).with_name("session")


def real_turns() -> list[list[ModelMessage]]:
    return [step.messages for step in read_transcript(TRANSCRIPT).steps]


def copy_turn(turn: list[ModelMessage], k: int) -> list[ModelMessage]:
    """The same messages, made distinct (different bytes, so a different blob) by their run id."""
    return [dataclasses.replace(m, run_id=f"bench-copy-{k}") for m in turn]


def replicate(turns: list[list[ModelMessage]], target: int) -> list[list[ModelMessage]]:
    """Copies of the real turns, in order, cut to exactly `target` messages."""
    out: list[list[ModelMessage]] = []
    total = k = 0
    while total < target:
        for turn in turns:
            take = copy_turn(turn, k)[: target - total]
            if take:
                out.append(take)
                total += len(take)
        k += 1
    return out


# -- 1. durable append ------------------------------------------------------------------------------


def baseline_append(path: Path, turn: list[ModelMessage], *, tokens: bool) -> None:
    """What a plain durable store pays: serialize the turn, (tokenize it,) one append and one fsync."""
    data = ModelMessagesTypeAdapter.dump_json(turn) + b"\n"
    if tokens:
        estimate_messages(turn)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        fsutil._datasync(fd)
    finally:
        os.close(fd)


@contextmanager
def phase_timers(
    spent: dict[str, float], targets: list[tuple[Any, str, str]] | None = None
) -> Iterator[None]:
    """Attribute append time to its steps by wrapping the functions the real path calls
    (`targets`: (owner, attribute, label); default: the steps of a `Session.append`)."""
    targets = targets or [
        (codec, "encode_unchecked", "encode (pydantic dump)"),
        (codec, "check_decodable", "read-back check"),
        (writer_mod, "estimate_messages", "token estimate"),
        (fsutil.StagedTemp, "sync", "blob temp file fdatasync"),
        (objects, "fsync_dir", "blob directory fsync"),
        (logs, "append_durable", "log line write + fdatasync"),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in targets]

    def wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

        return timed

    for (mod, name, label), (_, _, fn) in zip(targets, saved, strict=True):
        setattr(mod, name, wrap(fn, label))
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def bench_append(work: Path, turns: list[list[ModelMessage]], rounds: int) -> None:
    print("\n## durable append of one turn (the 9 real turns of the transcript, each timed alone)")
    store = SessionStore.open(work / "append")
    session = store.session("append")
    session.append(copy_turn(turns[0], -1), compact=False)
    raw = work / "baseline.jsonl"
    ours = plain = with_tokens = float("inf")
    copy = 0
    for _ in range(rounds):
        t_ours = t_plain = t_tokens = 0.0
        for turn in turns:
            copy += 1
            fresh = copy_turn(turn, copy)  # new bytes every time: a real blob write, never a touch
            start = time.perf_counter()
            session.append(fresh, compact=False)
            t_ours += time.perf_counter() - start
            start = time.perf_counter()
            baseline_append(raw, fresh, tokens=False)
            t_plain += time.perf_counter() - start
            start = time.perf_counter()
            baseline_append(raw, fresh, tokens=True)
            t_tokens += time.perf_counter() - start
        ours, plain, with_tokens = min(ours, t_ours), min(plain, t_plain), min(with_tokens, t_tokens)
    n = len(turns)
    ratio("append vs serialize + tokenize + append+fsync (per turn)", ours / n, with_tokens / n, 3.0)
    ratio("append vs serialize + append+fsync (per turn)", ours / n, plain / n)

    spent: dict[str, float] = {}
    total = 0.0
    with phase_timers(spent):
        for turn in turns:
            copy += 1
            fresh = copy_turn(turn, copy)
            start = time.perf_counter()
            session.append(fresh, compact=False)
            total += time.perf_counter() - start
    print(f"where the time goes (one pass over the {n} turns, {fmt_time(total / n)} per turn):")
    spent["other (lock, stale check, ids, link)"] = total - sum(spent.values())
    for label, seconds in spent.items():
        print(f"  {label:40s} {fmt_time(seconds / n):>10s}  {100 * seconds / total:5.1f}%")


# -- 2. build the big store -----------------------------------------------------------------------


def build_store(root: Path, turns: list[list[ModelMessage]], messages: int, sessions: int) -> SessionStore:
    store = SessionStore.open(root)
    big = store.session("big")
    for turn in replicate(turns, messages):
        big.append(turn, compact=False)
    small = copy_turn(turns[0], 0) + copy_turn(turns[-1], 0)
    for i in range(1, sessions):
        store.session(f"s{i:04d}").append(copy_turn(small, i), compact=False)
    return store


# -- 3. start-up ----------------------------------------------------------------------------------


def bench_startup(store: SessionStore, runs: int) -> None:
    print(f"\n## start-up on a store of {len(store.sessions()):,} sessions (subprocess wall time)")
    if not SESSION_BIN.exists():
        print(f"no {SESSION_BIN}: install the package (pip install -e .) to measure the CLI")
        return

    # Installed packages have their bytecode cached; this environment may forbid writing it
    # (PYTHONDONTWRITEBYTECODE), which would charge every run for compiling our sources. Cache it
    # outside the tree, and warm each command once, so both sides start as an installed CLI does.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(store.root.parent / "pycache")

    def run(argv: list[str]) -> Callable[[], None]:
        call = lambda: subprocess.run(  # noqa: E731
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, env=env
        )
        call()
        return call

    root = str(store.root)
    commands = {" ".join(args): args for args in (["log", "big"], ["list"], ["gauge", "big"])}
    fns = {"click": run([sys.executable, "-c", "import click"])}
    fns |= {label: run([str(SESSION_BIN), "--store", root, *args]) for label, args in commands.items()}
    best = interleaved(fns, runs * 2)  # a process start is noisy: more runs, still the min
    for label, args in commands.items():
        ratio(f"session {label} vs python -c 'import click'", best[label], best["click"], 2.0)
        probe = (
            "import sys\n"
            f"sys.argv = ['session', '--store', {root!r}, *{args!r}]\n"
            "from sessionstore.cli.main import cli\n"
            "try:\n    cli(prog_name='session')\nexcept SystemExit:\n    pass\n"
            "heavy = {'pydantic_ai', 'pydantic', 'tiktoken'} & {m.split('.')[0] for m in sys.modules}\n"
            "print('heavy modules imported:', sorted(heavy) or 'none', file=sys.stderr)\n"
        )
        argv = [sys.executable, "-c", probe]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
        print("  " + out.stderr.strip().splitlines()[-1])


# -- 4. load --------------------------------------------------------------------------------------


def bench_load(store: SessionStore, turns: list[list[ModelMessage]], runs: int) -> None:
    # Nothing big stays alive while timing: a large live heap makes every full GC pass during a
    # load cost more, which would be charged to whichever side happened to trigger it.
    raw = ModelMessagesTypeAdapter.dump_json(store.session("big").history)
    count = store.session("big").persisted_count
    print(f"\n## load of a {count:,}-message session")
    gc.collect()
    best = interleaved(
        {
            "validate": lambda: ModelMessagesTypeAdapter.validate_json(raw),
            "load": lambda: SessionStore.open(store.root).session("big"),
        },
        runs,
    )
    ratio("Session load vs ModelMessagesTypeAdapter.validate_json", best["load"], best["validate"], 1.3)
    commits, _ = store.log("big").scan(since_reset=True)
    blobs = writer_mod.state_of(commits)[0]
    data = [store.objects.read(b) for b in blobs]
    parts = interleaved(
        {
            "log scan (back to the reset point)": lambda: store.log("big").scan(since_reset=True),
            f"read {len(blobs)} blobs, unverified, in sequence": lambda: [
                store.objects.read_unverified(b) for b in blobs
            ],
            "sha256 of the blobs, in sequence": lambda: [hash_bytes(d) for d in data],
            "read + verify (ObjectStore.load)": lambda: store.objects.load(blobs, list),
            "decode (one validate_json per blob)": lambda: codec.decode(data),
        },
        runs,
    )
    print("  parts, each timed alone:")
    for label, seconds in parts.items():
        print(f"  {label:40s} {fmt_time(seconds):>10s}")

    session = store.session("big")
    summary = ModelRequest(parts=[UserPromptPart("Summary of the session so far: ...")])
    with store.lock("big"):
        session.commit_checkpoint([summary, *session.history[-300:]], tier=2)
    for k, turn in enumerate(turns[2:4]):
        session.append(copy_turn(turn, 10_000 + k), compact=False)
    tail = session.history
    raw_tail = ModelMessagesTypeAdapter.dump_json(tail)
    del session
    data.clear()  # the blobs of the parts above
    gc.collect()
    best = interleaved(
        {
            "validate": lambda: ModelMessagesTypeAdapter.validate_json(raw_tail),
            "load": lambda: SessionStore.open(store.root).session("big"),
        },
        runs * 4,
    )
    ratio(
        f"load after a checkpoint near the end ({len(tail)} messages replayed, log of "
        f"{len(store.session('big').log())} commits) vs validate_json of the tail",
        best["load"],
        best["validate"],
        1.2,
    )


# -- 5. bytes on disk ------------------------------------------------------------------------------


def bench_bytes(store: SessionStore) -> None:
    print("\n## bytes on disk")
    commits, _ = store.log("big").scan(since_reset=False)
    blobs = {c.blob for c in commits if c.blob}
    messages = store.session("big").history
    raw = sum(len(ModelMessagesTypeAdapter.dump_json([m])) - 1 for m in messages)  # one object per line
    stats = [store.objects.path(b).stat() for b in blobs] + [store.log("big").path.stat()]
    apparent = sum(st.st_size for st in stats)
    allocated = sum(st.st_blocks * 512 for st in stats)
    ratio(f"objects + log of a {len(messages):,}-message session vs raw JSONL", apparent, raw, 1.1, unit="B")
    print(
        f"  ({len(blobs)} blobs, log {store.log('big').path.stat().st_size:,} B; allocated blocks: "
        f"{allocated:,} B = {allocated / raw:.2f}× raw)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="where to create the temp store")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(machine_line())
    turns = real_turns()
    print(
        f"workload: {TRANSCRIPT.name}: {len(turns)} turns, {sum(map(len, turns))} messages, "
        f"replicated to {args.messages:,} messages"
    )
    work = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    try:
        bench_append(work, turns, args.runs)
        start = time.perf_counter()
        store = build_store(work / "store", turns, args.messages, args.sessions)
        print(f"\n(built a store of {args.sessions:,} sessions in {time.perf_counter() - start:.1f} s)")
        bench_startup(store, args.runs)
        bench_bytes(store)
        bench_load(store, turns, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
