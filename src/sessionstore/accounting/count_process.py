"""A second process that counts a turn's longest texts while the writing thread does the rest.

bpe-openai, the default backend, holds the GIL while it counts, and so do the encode and the
read-back check of a turn's blob (pydantic-core): on one process they add up. For a real turn of
tens of KB the count was the largest of the three (benchmarks/RESULTS.md, issue 30). Here the
longest texts of the turn go to a child process (`count_worker`, the same backend loaded there) the
moment the turn arrives; the writing thread encodes and checks the blob meanwhile, counts the rest
itself, then takes the child's answer. The answers go into the tokenizer's cache, so the estimate
that follows (`tokens.estimate_messages`, the `sizes` of the commit line) is made of cache hits:
the same numbers a count here gives, the count still in the line, counted before it is written.

What a caller may rely on:
- Counts are never different: the child runs the same backend's `count` on the same `str`.
- Nothing waits for the child: until it has loaded its backend (it starts, on a thread, the first
  time a turn is worth sending), turns are counted here. A child that dies, answers garbage or
  does not answer within `ANSWER_TIMEOUT_S` is dropped and the texts are counted here; a new one
  is started at most `MAX_STARTS` times per process.
- One request at a time: a second thread counting meanwhile counts on its own, never queues.
- Only where it can help: `configure(True)` (the `count_process` setting, on by default), the
  process may run on two or more CPUs, `sys.executable` is a Python, and the turn has at least
  `MIN_CHARS` characters of uncounted text.
- A forked child forgets its parent's counting process (it starts its own when it needs one); the
  counting process exits when its stdin closes, so it never outlives the process that started it.
"""

from __future__ import annotations

import atexit
import os
import select
import struct
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from ..plumbing import forks
from . import count_worker, tokenizer, tokens

if TYPE_CHECKING:
    import subprocess

    from pydantic_ai.messages import ModelMessage

__all__ = [
    "ANSWER_TIMEOUT_S",
    "MAX_STARTS",
    "MIN_CHARS",
    "Ahead",
    "configure",
    "count_ahead",
    "reset",
    "worker_pid",
]

MIN_CHARS = 4096
"""A turn with less uncounted text than this is counted here: the trip (two pipe writes, a wake-up
of the child) costs about what counting 4 K characters does."""
SHARE_MAX = 0.9
SHARE_MIN = 0.15
"""The child's share of a turn's uncounted characters (its longest texts) is learned (`_Balance`)
within these bounds; below the lower one the turn is counted here."""
PROBE_EVERY = 20
ANSWER_TIMEOUT_S = 10.0
MAX_STARTS = 3

_enabled = True
_state_lock = threading.Lock()
_busy = threading.Lock()
_starts = 0


@dataclass
class _Child:
    backend: str
    proc: subprocess.Popen[bytes] | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    dead: bool = False

    def send(self, texts: list[str]) -> bool:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            data = memoryview(count_worker.encode_request(texts))
            fd = self.proc.stdin.fileno()
            while data:
                data = data[os.write(fd, data) :]
            return True
        except OSError:
            return False

    def receive(self, n: int) -> tuple[int, list[int]] | None:
        """(when the child was done, in `time.monotonic_ns()`; the counts), or None (dead, silent)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        want, chunks, got = 8 * (n + 1), [], 0
        try:
            while got < want:
                if not select.select([fd], [], [], ANSWER_TIMEOUT_S)[0]:
                    return None
                chunk = os.read(fd, want - got)
                if not chunk:
                    return None
                chunks.append(chunk)
                got += len(chunk)
        except OSError:
            return None
        done, *counts = struct.unpack(f"<{n + 1}Q", b"".join(chunks))
        return done, counts

    def stop(self) -> None:
        self.dead = True
        proc = self.proc
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        import subprocess

        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_child: _Child | None = None


def configure(enabled: bool) -> None:
    """The `count_process` setting: False stops a running child and counts on the writing thread."""
    global _enabled
    _enabled = enabled
    if not enabled:
        _drop()


def reset() -> None:
    """Stop the counting process and forget what was learned and how often one was started (tests)."""
    global _starts, _balance
    _drop()
    with _state_lock:
        _starts, _balance = 0, _Balance()


def worker_pid() -> int | None:
    """The pid of this process's counting process once it has loaded, else None (diagnostics, tests)."""
    child = _child
    if child is None or child.dead or child.proc is None or not child.ready.is_set():
        return None
    return child.proc.pid if child.proc.poll() is None else None


@cache
def _machine_allows() -> bool:
    """Two or more CPUs for this process, a `sys.executable` that can run `-m` (not an embedding
    host such as uWSGI), and pipes that can be `select`ed (not Windows). Asked once per process."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    name = os.path.basename(sys.executable or "")
    return cpus >= 2 and sys.platform != "win32" and name.startswith(("python", "pypy"))


def _could_take(backend: str) -> bool:
    """Whether a child could take a turn now, asked before the turn's texts are gathered (a walk of
    every part): not where none can run or none may start again, nor while one is starting."""
    if not _machine_allows():
        return False
    child = _child
    if child is None or child.dead or child.backend != backend:
        return _starts < MAX_STARTS
    return child.ready.is_set()


def _ready_child(backend: str) -> _Child | None:
    """The loaded child for `backend`, else None (starting one on a thread when none is on its way)."""
    global _child, _starts
    child = _child
    if (
        child is not None
        and child.ready.is_set()
        and child.proc is not None
        and child.proc.poll() is not None
    ):
        child.dead = True  # it exited or was killed since the last turn: start another
    if child is not None and not child.dead and child.backend == backend:
        return child if child.ready.is_set() else None
    with _state_lock:
        if _child is not None and not _child.dead and _child.backend == backend:
            return None  # another thread is starting it
        if _child is not None:
            _child.stop()
        if _starts >= MAX_STARTS or not _machine_allows():
            _child = None
            return None
        _starts += 1
        forks.guard()
        _child = child = _Child(backend)
    threading.Thread(target=_start, args=(child,), name="sessionstore-count-start", daemon=True).start()
    return None


def _start(child: _Child) -> None:
    import subprocess  # only when a child starts: 3 ms of a fresh process's first write otherwise

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    try:
        with forks.quiet():  # a fork waits until the child exists and its pipes are ours
            child.proc = subprocess.Popen(
                [sys.executable, "-m", "sessionstore.accounting.count_worker", child.backend],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        assert child.proc.stdout is not None
        first = count_worker.read_exactly(child.proc.stdout.fileno(), 1)
    except OSError:
        first = b""
    if first == count_worker.LOADED and not child.dead:
        child.ready.set()
    else:
        child.stop()


def _drop(child: _Child | None = None) -> None:
    """Stop `child` (default: the current one) and forget it."""
    global _child
    with _state_lock:
        victim = child if child is not None else _child
        if victim is not None:
            victim.stop()
            if _child is victim:
                _child = None


@dataclass
class _Balance:
    """How to split a turn between the child and this thread, learned from the turns so far.

    Per character: `here` is this thread's count time, `there` the child's (send to answer, by the
    shared monotonic clock: its scheduling delays included), `other` the time this thread spends on
    the rest of the write before it counts (encode, read-back check). Both sides finish together
    when the child takes `share = (other + here) / (there + here)`; a busy machine makes `there`
    grow and the share shrink, to nothing when the child is no faster than counting here (then one
    turn in `PROBE_EVERY` still goes, to notice when it is again)."""

    here: float = 1 / 11.5e6
    there: float = 1 / 11.5e6
    other: float = 0.5 / 11.5e6
    skipped: int = 0

    def share(self) -> float:
        share = min(SHARE_MAX, (self.other + self.here) / (self.there + self.here))
        if share >= SHARE_MIN:
            self.skipped = 0
            return share
        self.skipped += 1
        if self.skipped >= PROBE_EVERY:
            self.skipped = 0
            return SHARE_MIN
        return 0.0

    def learn(self, attr: str, seconds: float, chars: int) -> None:
        if chars >= 1024 and seconds > 0:
            setattr(self, attr, 0.7 * getattr(self, attr) + 0.3 * seconds / chars)


_balance = _Balance()


@dataclass
class Ahead:
    """A turn's texts being counted in the child: `finish()` counts this thread's share, then puts
    the child's answers in the tokenizer's cache (or counts them here if it gives none)."""

    mine: list[str]
    theirs: list[str]
    child: _Child
    sent_ns: int

    def finish(self) -> None:
        try:
            start = time.monotonic_ns()
            for text in self.mine:
                tokenizer.count(text)
            counted = time.monotonic_ns()
            answer = self.child.receive(len(self.theirs))
            if answer is None:
                _drop(self.child)  # the estimate that follows counts these texts here
                return
            done, counts = answer
            for text, n in zip(self.theirs, counts, strict=True):
                tokenizer.remember(text, n)
            total = sum(map(len, self.mine)) + sum(map(len, self.theirs))
            _balance.learn("other", (start - self.sent_ns) / 1e9, total)
            _balance.learn("here", (counted - start) / 1e9, sum(map(len, self.mine)))
            _balance.learn("there", (done - self.sent_ns) / 1e9, sum(map(len, self.theirs)))
        finally:
            _busy.release()


def count_ahead(messages: Iterable[ModelMessage]) -> Ahead | None:
    """Send the longest uncounted texts of `messages` to the counting process, when it is worth it
    and ready; the caller does other work, then calls `finish()` before it estimates `messages`."""
    if not _enabled:
        return None
    counter = tokenizer.loaded()
    if counter is None or counter.threads:  # not loaded yet, or a backend two threads can share
        return None
    if not _could_take(counter.name):
        return None
    texts = [t for t in dict.fromkeys(tokens.texts_of(messages)) if not tokenizer.cached(t)]
    total = sum(map(len, texts))
    if total < MIN_CHARS:
        return None
    child = _ready_child(counter.name)
    if child is None or not _busy.acquire(blocking=False):
        return None
    share = _balance.share()
    texts.sort(key=len, reverse=True)
    theirs, taken = [], 0
    for text in texts:
        if taken >= share * total:
            break
        theirs.append(text)
        taken += len(text)
    if not theirs:
        _busy.release()
        return None
    sent = time.monotonic_ns()
    if not child.send(theirs):
        _busy.release()
        _drop(child)
        return None
    return Ahead(texts[len(theirs) :], theirs, child, sent)


def _after_fork_in_child() -> None:
    """The parent's child process and pipes are the parent's: forget them (closing our copies of the
    pipes, so the child still sees its stdin close when the parent exits)."""
    global _child, _state_lock, _busy, _starts, _balance
    child = _child
    _child, _starts, _balance = None, 0, _Balance()
    _state_lock, _busy = threading.Lock(), threading.Lock()
    if child is not None and child.proc is not None:
        for pipe in (child.proc.stdin, child.proc.stdout):
            try:  # the fd now holds /dev/null: the pipe end is released, the number stays the
                if pipe is not None:  # file object's to close, so no later file reuses it
                    null = os.open(os.devnull, os.O_RDWR)
                    os.dup2(null, pipe.fileno())
                    os.close(null)
            except (OSError, ValueError):
                pass
        child.proc.returncode = 0  # not ours to wait for


def _at_exit() -> None:
    if _child is not None:
        _child.stop()


forks.in_child(_after_fork_in_child)
atexit.register(_at_exit)
