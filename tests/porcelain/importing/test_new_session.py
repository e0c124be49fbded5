"""`import_transcript`: steps become commits, compactions become checkpoints, and it is all or nothing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from helpers.cli import EXAMPLE, snapshot
from helpers.messages import sample_turns
from sessionstore.accounting.settings import Settings
from sessionstore.errors import ImportFormatError, InvalidSessionName, SessionStoreError
from sessionstore.formats.transcripts import ImportedStep, ImportedTranscript, read_transcript, split_steps
from sessionstore.porcelain.importing.new_session import import_transcript
from sessionstore.porcelain.session.session import Session
from sessionstore.porcelain.store import SessionStore


def _transcript(messages: list[ModelMessage], name: str = "imported") -> ImportedTranscript:
    return ImportedTranscript("pydantic-ai", split_steps(messages), Path("x.json"), name)


def _compacted() -> list[ModelMessage]:
    """A turn (with a tool round trip), a compaction summary, and two turns after it."""
    t1, t2, _ = sample_turns()
    summary = ModelRequest(parts=[CompactionPart(content="# Conversation summary\nall of it")])
    after = [
        ModelRequest(parts=[UserPromptPart("go on")]),
        ModelResponse(parts=[TextPart("ok")]),
    ]
    last = [ModelRequest(parts=[UserPromptPart("and then?")]), ModelResponse(parts=[TextPart("done")])]
    return [*t1, *t2, summary, *after, *last]


def test_turns_become_import_commits_and_replay_equal(store: SessionStore) -> None:
    transcript = read_transcript(EXAMPLE)
    session = import_transcript(store, transcript)
    assert session.name == "fix-auth"
    log = session.log()[::-1]
    assert [c.kind for c in log] == ["import"] * len(transcript.steps)
    assert [len(c.sizes) for c in log] == [len(s.messages) for s in transcript.steps]
    assert [c.usage for c in log] == [{k: v for k, v in s.usage.items() if v} for s in transcript.steps]
    expected = [m for s in transcript.steps for m in s.messages]
    assert store.session("fix-auth").history == expected
    assert store.fsck().ok


def test_compaction_steps_become_checkpoints(store: SessionStore) -> None:
    messages = _compacted()
    transcript = _transcript(messages)
    assert [s.kind for s in transcript.steps] == ["turn", "compaction", "turn", "turn"]
    session = import_transcript(store, transcript, "old-agent")
    kinds = [c.kind for c in session.log()[::-1]]
    assert kinds == ["import", "compaction", "import", "import"]
    compaction = session.log()[2]
    assert compaction.tier == 2 and compaction.extra["source"] == "import"
    assert store.resolve("checkpoints/old-agent/1").id == compaction.id
    assert store.session("old-agent").history == messages[len(sample_turns()[0]) + len(sample_turns()[1]) :]
    assert store.fsck().ok


def test_the_compaction_cascade_never_runs(tmp_path: Path) -> None:
    settings = Settings(context_window_tokens=1000)
    store = SessionStore.open(tmp_path / "s", settings=settings)
    transcript = read_transcript(EXAMPLE)
    session = import_transcript(store, transcript)
    assert session.tokens > 1000  # far over the full level, yet nothing was summarised
    assert {c.kind for c in session.log()} == {"import"}


def test_an_import_is_not_a_measurement(store: SessionStore) -> None:
    """DESIGN §6: an import invalidates the measured prefix (the original agent's usage measured its
    own context), so the local estimate decides until this agent's next response, on the returned
    session and after reopening alike."""
    big = RequestUsage(input_tokens=900_000, output_tokens=10)
    imported = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("yo")], usage=big)]
    session = import_transcript(store, _transcript(imported))
    for s in (session, store.session("imported")):
        assert s.measurement.tokens == s.tokens > 0
        assert not s.measurement.measured
    assert "measured" not in session.head.extra
    ours = RequestUsage(input_tokens=5_000, output_tokens=7)
    session.append(
        [ModelRequest(parts=[UserPromptPart("go")]), ModelResponse(parts=[TextPart("k")], usage=ours)]
    )
    for s in (session, store.session("imported")):
        assert s.measurement.measured and s.measurement.anchor_tokens == 5_007


def test_progress_reports_each_step(store: SessionStore) -> None:
    calls: list[tuple[int, int]] = []
    transcript = _transcript(_compacted())
    import_transcript(store, transcript, progress=lambda done, total: calls.append((done, total)))
    n = len(transcript.steps)
    assert calls == [(i, n) for i in range(1, n + 1)]


def test_an_existing_name_is_refused_and_nothing_written(store: SessionStore) -> None:
    store.session("taken").append(sample_turns()[0])
    before = snapshot(store.root)
    with pytest.raises(SessionStoreError, match="'taken' already exists: import with --as") as err:
        import_transcript(store, read_transcript(EXAMPLE), "taken")
    assert "fork" not in str(err.value)  # forking the existing session would not make room for the import
    assert snapshot(store.root) == before


@pytest.mark.parametrize("name", ["../x", "a/b", ".", ""])
def test_bad_names_are_refused(store: SessionStore, name: str) -> None:
    transcript = _transcript(sample_turns()[0], name="fallback")
    if name == "":
        assert import_transcript(store, transcript, name).name == "fallback"  # empty: the suggestion
        return
    before = snapshot(store.root)
    with pytest.raises(InvalidSessionName):
        import_transcript(store, transcript, name)
    assert snapshot(store.root) == before


def test_an_empty_transcript_is_refused(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="no messages"):
        import_transcript(store, ImportedTranscript("pydantic-ai", [], Path("e.json"), "e"))
    assert not store.exists("e")


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_failure_mid_import_leaves_nothing_visible(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """Fail at step 1, at the compaction (2) or after it (3): no log, no refs; orphans only for gc."""
    store.session("other").append(sample_turns()[0])
    before = snapshot(store.root)
    transcript = _transcript(_compacted(), "half")
    calls = {"n": 0}
    real_append, real_checkpoint = Session.commit_turn, Session.commit_checkpoint

    def counted(real):  # type: ignore[no-untyped-def]
        def wrapper(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == fail_at:
                raise OSError(28, "No space left on device")
            return real(self, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(Session, "commit_turn", counted(real_append))
    monkeypatch.setattr(Session, "commit_checkpoint", counted(real_checkpoint))
    with pytest.raises(OSError, match="No space left"):
        import_transcript(store, transcript)
    assert not store.exists("half")
    assert not (store.refs.dir / "half").exists()
    after = snapshot(store.root)
    assert {k: v for k, v in after.items() if not k.startswith("objects/")} == {
        k: v for k, v in before.items() if not k.startswith("objects/")
    }
    assert store.fsck().ok
    # Steps before the failure wrote blobs: unreachable now, and gc takes them; then all is as before.
    assert bool(store.gc(grace_days=0).removed) == (fail_at > 1)
    assert snapshot(store.root) == before
    monkeypatch.undo()
    assert import_transcript(store, transcript).persisted_count == store.info("half").count


def test_refs_left_by_an_interrupted_import_are_cleared(store: SessionStore) -> None:
    store.refs.create("again", 1, "0" * 64, 0)  # as if a crash hit between removing log and refs
    session = import_transcript(store, _transcript(_compacted(), "again"))
    (compaction,) = [c for c in session.log() if c.kind == "compaction"]
    assert store.resolve("checkpoints/again/1").id == compaction.id
    assert store.fsck().ok


# --- real transcripts -------------------------------------------------------------------------------


def _raw_tool_ids(path: Path, fmt: str) -> tuple[set[str], set[str]]:
    """Call ids and result ids as the original file holds them (main thread only for Claude Code)."""
    calls: set[str] = set()
    results: set[str] = set()
    for line in path.read_text().splitlines():
        obj = orjson.loads(line)
        if fmt == "codex":
            payload = obj.get("payload") or {}
            if obj.get("type") == "response_item" and payload.get("type") == "function_call":
                calls.add(payload["call_id"])
            if obj.get("type") == "response_item" and payload.get("type") == "function_call_output":
                results.add(payload["call_id"])
            continue
        content = (obj.get("message") or {}).get("content")
        if obj.get("isSidechain") or not isinstance(content, list):
            continue
        calls |= {b["id"] for b in content if b.get("type") == "tool_use"}
        results |= {b["tool_use_id"] for b in content if b.get("type") == "tool_result"}
    return calls, results


@pytest.mark.parametrize(
    ("rel", "fmt"),
    [
        ("claude_code/codemie_session-3fe1b6bc.jsonl", "claude-code"),
        ("claude_code/spotter_tool_heavy.jsonl", "claude-code"),
        ("codex/rollout-*.jsonl", "codex"),
    ],
)
def test_real_transcripts_keep_every_tool_call_and_return(
    store: SessionStore, realdata: Path, rel: str, fmt: str
) -> None:
    path = next(realdata.glob(rel))
    transcript = read_transcript(path)
    assert transcript.format == fmt
    session = import_transcript(store, transcript, "real")
    history = store.session("real").history
    assert "compaction" not in {c.kind for c in session.log()}
    calls = {p.tool_call_id for m in history for p in m.parts if isinstance(p, ToolCallPart)}
    returns = [p.tool_call_id for m in history for p in m.parts if isinstance(p, ToolReturnPart)]
    raw_calls, raw_results = _raw_tool_ids(path, fmt)
    assert calls == raw_calls and len(calls) > 0
    assert sorted(returns) == sorted(raw_results) and set(returns) == calls
    assert history == [m for s in transcript.steps for m in s.messages]
    assert store.fsck().ok


def test_a_step_of_foreign_usage_is_stored_as_given(store: SessionStore) -> None:
    usage = {"input_tokens": 1200, "output_tokens": 80}
    step = ImportedStep("turn", sample_turns()[0], usage)
    session = import_transcript(store, ImportedTranscript("codex", [step], Path("r.jsonl"), "u"))
    assert session.head.usage == usage


# -- imports are all or nothing across kill -9 and Ctrl-C (real processes, real signals) -------------------

IMPORT_TURNS = 250


def _big_transcript(tmp_path: Path) -> Path:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from helpers.messages import tagged_turn

    messages: list[ModelMessage] = []
    for i in range(IMPORT_TURNS):
        if i == IMPORT_TURNS // 3:  # a compaction: the import writes a checkpoint ref too
            messages.append(ModelRequest(parts=[CompactionPart(content="# Conversation summary\nso far")]))
        messages += tagged_turn(0, i, size=3)
    path = tmp_path / "big.json"
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(messages))
    return path


def _start_import(root: Path, source: Path, name: str):  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    script = Path(sys.executable).with_name("session")
    return subprocess.Popen(
        [str(script), "--store", str(root), "import", str(source), "--as", name],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_until_writing(store: SessionStore, name: str, child, at_least: int) -> None:  # type: ignore[no-untyped-def]
    import time

    staging = store.locks_dir / "importing" / name / "logs" / f"{name}.jsonl"
    deadline = time.monotonic() + 60
    while not (staging.exists() and staging.stat().st_size >= at_least):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the import never started writing"
        time.sleep(0.005)


@pytest.mark.slow
def test_kill_9_during_import_never_leaves_a_partial_session(store: SessionStore, tmp_path: Path) -> None:
    import random
    import signal

    source = _big_transcript(tmp_path)
    rng = random.Random(13)
    for kill in range(2):
        child = _start_import(store.root, source, "big")
        _wait_until_writing(store, "big", child, rng.randrange(1, 30_000))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert "big" not in store.sessions() and not store.exists("big")  # invisible, whatever was written
        report = store.fsck()
        assert report.problems and all("an interrupted import left" in p for p in report.problems), report
        if kill % 2 == 0:  # half the time fsck cleans up, else the next import does
            assert store.fsck(repair=True).repaired and store.fsck().ok
    child = _start_import(store.root, source, "big")
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert store.session("big").persisted_count == 1 + (IMPORT_TURNS - IMPORT_TURNS // 3) * 3
    assert [r.k for r in store.refs.list("big")] == [1]
    assert store.fsck().ok and not (store.locks_dir / "importing").exists()


@pytest.mark.slow
def test_ctrl_c_during_import_always_stops_it_with_nothing_published(
    store: SessionStore, tmp_path: Path
) -> None:
    import signal
    import time

    source = _big_transcript(tmp_path)
    for at in (1, 15_000):
        child = _start_import(store.root, source, "big")
        _wait_until_writing(store, "big", child, at)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 130, (child.returncode, out, err)
        assert time.monotonic() - sent < 5  # within a step or so, not after the whole import
        assert "interrupted" in err and "Traceback" not in err
        assert store.sessions() == [] and store.fsck().ok  # nothing half-written, nothing left over


def test_a_step_that_would_not_read_back_is_refused_and_nothing_is_published(store: SessionStore) -> None:
    args: dict = {}
    node = args
    for _ in range(200):
        node["a"] = {}
        node = node["a"]
    deep = [
        ModelRequest(parts=[UserPromptPart("two")]),
        ModelResponse(parts=[ToolCallPart("t", args, tool_call_id="c")]),
        ModelRequest(parts=[ToolReturnPart("t", "ok", tool_call_id="c")]),
    ]
    transcript = _transcript([ModelRequest(parts=[UserPromptPart("one")]), *deep])
    with pytest.raises(ImportFormatError, match=r"x.json: turn 2 of 2 cannot be stored: .*nested too deeply"):
        import_transcript(store, transcript)
    assert store.sessions() == [] and store.fsck().ok and not (store.locks_dir / "importing").exists()


def test_an_imported_compaction_keeps_the_transcripts_time(tmp_path: Path) -> None:
    def item(payload: dict, kind: str = "response_item", at: str = "10:00") -> bytes:
        return (
            orjson.dumps({"timestamp": f"2026-05-11T{at}:00.000Z", "type": kind, "payload": payload}) + b"\n"
        )

    def said(role: str, text: str, kind: str) -> dict:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    path = tmp_path / "rollout.jsonl"
    path.write_bytes(
        item({"id": "sess-1", "cwd": "/x"}, "session_meta")
        + item({"model": "gpt-5-codex", "cwd": "/x"}, "turn_context")
        + item(said("user", "fix it", "input_text"))
        + item(said("assistant", "done", "output_text"))
        + item({"type": "compacted", "payload": None, "message": "summary"}, "compacted", at="11:30")
        + item(said("user", "next", "input_text"), at="12:00")
    )
    store = SessionStore.open(tmp_path / "store")
    import_transcript(store, read_transcript(path), "r")
    commits, _ = store.log("r").scan(since_reset=False)
    assert [(c.kind, c.time[11:16]) for c in commits] == [
        ("import", "10:00"),
        ("compaction", "11:30"),  # the transcript's own time, not the import's
        ("import", "12:00"),
    ]
