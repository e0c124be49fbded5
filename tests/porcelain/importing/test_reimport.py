"""porcelain/importing/reimport.py: a grown transcript appends only its new turns to the session
imported from it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sessionstore.formats.transcripts import read_transcript
from sessionstore.plumbing import codec
from sessionstore.porcelain.importing.new_session import append_steps, import_transcript
from sessionstore.porcelain.importing.reimport import NotAPrefix, growth
from sessionstore.porcelain.store import SessionStore

REAL = (
    Path(__file__).resolve().parents[4]
    / "shared"
    / "realdata"
    / "claude_code"
    / "codemie_session-3fe1b6bc.jsonl"
)


def _prompt_lines(lines: list[bytes]) -> list[int]:
    """Indexes of the lines where the person typed a new request (a turn boundary)."""
    out = []
    for i, line in enumerate(lines):
        record = orjson.loads(line)
        content = (record.get("message") or {}).get("content") if record.get("type") == "user" else None
        if isinstance(content, str) and not content.startswith("<"):
            out.append(i)
    return out


@pytest.fixture
def real_lines() -> list[bytes]:
    if not REAL.exists():
        pytest.skip(f"real Claude Code transcript not found at {REAL}")
    return REAL.read_bytes().splitlines(keepends=True)


def test_a_grown_real_transcript_appends_only_its_new_turns(tmp_path: Path, real_lines: list[bytes]) -> None:
    cut = _prompt_lines(real_lines)[2]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(real_lines[:cut]))
    store = SessionStore.open(tmp_path / "store")
    session = import_transcript(store, read_transcript(path), "s")
    before = session.log()
    path.write_bytes(b"".join(real_lines))  # the session went on
    grown = read_transcript(path)
    plan = growth(store, "s", grown)
    assert plan.stored == len(before) and 0 < len(plan.new) < len(grown.steps)
    after = append_steps(store, "s", plan.new, plan.head)
    fresh = import_transcript(store, read_transcript(path), "fresh")
    assert codec.encode(after.history) == codec.encode(fresh.history)  # as if imported whole
    assert after.log()[len(plan.new) :] == before  # the old commits are untouched
    assert growth(store, "s", grown).new == []  # now up to date


def test_a_turn_that_was_still_running_is_continued(tmp_path: Path) -> None:
    from sessionstore.formats.openai_chat import read_openai_chat

    chat = [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": "looking"},
    ]
    path = tmp_path / "chat.json"
    path.write_bytes(orjson.dumps(chat))
    store = SessionStore.open(tmp_path / "store")
    import_transcript(store, read_openai_chat(path)[0], "c")
    path.write_bytes(orjson.dumps([*chat, {"role": "assistant", "content": "found"}]))
    plan = growth(store, "c", read_openai_chat(path)[0])
    assert [[p.content for m in s.messages for p in m.parts] for s in plan.new] == [["found"]]


def test_a_session_that_is_no_prefix_is_refused(tmp_path: Path, real_lines: list[bytes]) -> None:
    cut = _prompt_lines(real_lines)[2]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(real_lines[:cut]))
    store = SessionStore.open(tmp_path / "store")
    import_transcript(store, read_transcript(path), "s")
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"".join(real_lines[cut:]))
    with pytest.raises(NotAPrefix, match="differs from step 1"):
        growth(store, "s", read_transcript(other))
    store.fork("s", "f")
    with pytest.raises(NotAPrefix, match="is a fork, not part of this import"):
        growth(store, "f", read_transcript(path))


def test_step_time_is_the_transcripts_own_time(real_lines: list[bytes], tmp_path: Path) -> None:
    from sessionstore.porcelain.importing.reimport import step_time

    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(real_lines))
    steps = read_transcript(path).steps
    times = [step_time(s) for s in steps]
    stamps = [orjson.loads(line).get("timestamp") for line in real_lines]
    first = min(t for t in stamps if isinstance(t, str))
    assert all(t is not None and t.endswith("Z") for t in times)
    assert times == sorted(times) and times[0] >= first[:19]  # in order, and from the file, not now
    assert times[-1][:4] == first[:4]
