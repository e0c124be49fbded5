"""The counting process: the same counts as counting here, never a lost or wrong count when it dies,
never inherited by a fork, never outliving its parent, and not started when the setting is off."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from helpers.realdata import realdata_strings
from sessionstore import SessionStore
from sessionstore.accounting import count_process, count_worker, tokenizer
from sessionstore.accounting.settings import Settings
from sessionstore.accounting.tokens import estimate_messages

if len(os.sched_getaffinity(0)) < 2:
    pytest.skip("the counting process is used only with 2+ CPUs", allow_module_level=True)


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    count_process.reset()
    count_process.configure(True)
    yield
    count_process.reset()
    count_process.configure(True)


def turn(k: int, size: int = 6_000) -> list:
    """A real-shaped turn with `size` characters of new text in each of three parts."""
    words = " ".join(f"w{k}x{i}" for i in range(size // 6))
    call = ToolCallPart(tool_name="read", args={"path": f"/src/{k}.py"}, tool_call_id=f"c{k}")
    done = ToolReturnPart(tool_name="read", content=f"def f{k}():\n    {words}\n", tool_call_id=f"c{k}")
    return [
        ModelRequest(parts=[UserPromptPart(content=f"turn {k}: {words}")]),
        ModelResponse(parts=[call]),
        ModelRequest(parts=[done]),
        ModelResponse(parts=[TextPart(content=f"done {k}: {words[: size // 2]}")]),
    ]


def ready(session, start: int) -> int:
    """Append turns until the counting process has loaded; the next turn number."""
    deadline = time.monotonic() + 20
    k = start
    while count_process.worker_pid() is None:
        assert time.monotonic() < deadline, "the counting process did not start"
        session.append(turn(k), compact=False)
        k += 1
        time.sleep(0.05)
    return k


def line_sizes(store: SessionStore, name: str) -> list[list[int]]:
    lines = (store.root / "logs" / f"{name}.jsonl").read_bytes().splitlines()
    return [orjson.loads(line)["sizes"] for line in lines]


def test_appends_through_the_counting_process_record_the_sizes_counted_here(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s")
    session = store.session("a")
    k = ready(session, 0)
    sent = [turn(i) for i in range(k, k + 6)]
    tokenizer.clear_cache()
    for t in sent:
        session.append(t, compact=False)
    assert count_process.worker_pid() is not None
    tokenizer.clear_cache()
    assert line_sizes(store, "a")[-6:] == [estimate_messages(t) for t in sent]


def test_a_killed_counting_process_loses_no_count_and_is_replaced(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s")
    session = store.session("a")
    k = ready(session, 0)
    first = count_process.worker_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    sent = [turn(i) for i in range(k, k + 5)]
    for t in sent:
        session.append(t, compact=False)  # the first finds it dead: counted here
    tokenizer.clear_cache()
    assert line_sizes(store, "a")[-5:] == [estimate_messages(t) for t in sent]
    k = ready(session, k + 5)
    assert count_process.worker_pid() not in (None, first)


def test_no_counting_process_when_the_setting_is_off(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s", settings=Settings(count_process=False))
    session = store.session("a")
    for k in range(8):
        session.append(turn(k), compact=False)
        time.sleep(0.02)
    assert count_process.worker_pid() is None


def test_a_forked_child_counts_without_its_parents_process(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s")
    session = store.session("a")
    k = ready(session, 0)
    parent_worker = count_process.worker_pid()
    pid = os.fork()
    if pid == 0:  # the child: its own store object, never the parent's pipes
        code = 1
        try:
            child = SessionStore.open(tmp_path / "s").session("b")
            assert count_process.worker_pid() is None
            t = turn(10_000)
            child.append(t, compact=False)
            tokenizer.clear_cache()
            code = 0 if line_sizes(child.store, "b")[-1] == estimate_messages(t) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    session.append(turn(k), compact=False)
    assert count_process.worker_pid() == parent_worker


def test_the_counting_process_exits_with_the_process_that_started_it(tmp_path: Path) -> None:
    script = f"""
import os, sys, time
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
from test_count_process import turn
from sessionstore import SessionStore
from sessionstore.accounting import count_process
s = SessionStore.open({str(tmp_path / "s")!r}).session("a")
k = 0
while count_process.worker_pid() is None and k < 400:
    s.append(turn(k), compact=False); k += 1; time.sleep(0.05)
print(count_process.worker_pid(), flush=True)
os._exit(0)  # no atexit: only the closed pipe tells it
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return
        if "\nState:\tZ" in state:
            return  # exited, waiting for init to reap it
        time.sleep(0.05)
    pytest.fail(f"counting process {pid} outlived its parent")


texts = st.lists(st.text(min_size=0, max_size=300), min_size=0, max_size=12)


@hsettings(max_examples=60, deadline=None)
@given(texts)
def test_the_wire_format_carries_any_text_unchanged(batch: list[str]) -> None:
    data = count_worker.encode_request(batch)
    at = 0

    def read(n: int) -> bytes:
        nonlocal at
        chunk = data[at : at + n]
        at += n
        return chunk

    assert count_worker.decode_request(read) == batch
    assert count_worker.decode_request(read) is None


@pytest.fixture(scope="module")
def worker() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessionstore.accounting.count_worker", "bpe-openai"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.read(1) == count_worker.LOADED
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0  # stdin's end is its end


def ask(proc: subprocess.Popen[bytes], batch: list[str]) -> list[int]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(count_worker.encode_request(batch))
    proc.stdin.flush()
    answer = proc.stdout.read(8 * (len(batch) + 1))
    return list(memoryview(answer).cast("Q"))[1:]


@hsettings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.text(max_size=400) | st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
    )
)
def test_the_counting_process_counts_exactly_what_this_process_counts(worker, batch: list[str]) -> None:
    here = tokenizer.load_backend("bpe-openai")
    assert ask(worker, batch) == [here.count(text) for text in batch]


def test_the_counting_process_counts_realdata_as_this_process_does(worker, realdata: Path) -> None:
    here = tokenizer.load_backend("bpe-openai")
    batch = [s for s in dict.fromkeys(realdata_strings()) if len(s) > 20][:5000]
    assert len(batch) > 100
    assert ask(worker, batch) == [here.count(text) for text in batch]


def test_the_share_shrinks_when_the_child_is_slow_and_probes_now_and_then() -> None:
    balance = count_process._Balance()
    assert count_process.SHARE_MIN < balance.share() <= count_process.SHARE_MAX
    for _ in range(10):
        balance.learn("there", 1.0, 1_000_000)  # the child: 1 M chars/s, here 11.5 M chars/s
    shares = [balance.share() for _ in range(count_process.PROBE_EVERY * 2)]
    assert shares.count(0.0) == len(shares) - 2
    assert shares[count_process.PROBE_EVERY - 1] == count_process.SHARE_MIN
