"""The compaction cascade through the public Session API: levels, tiers, persistence, reversibility."""

from __future__ import annotations

import warnings
from pathlib import Path

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

from sessionstore import SessionStore, Settings
from sessionstore.compaction import full
from sessionstore.compaction.events import (
    CompactionEvent,
    ContextCompacted,
    ContextMicrocompacted,
    ContextUltimateCompacted,
)
from sessionstore.compaction.micro import ELIDED
from sessionstore.compaction.turns import pairs_intact
from sessionstore.errors import CompactionError, SessionBusy
from sessionstore.porcelain.session import cascade
from sessionstore.summary.skeleton import validate_summary


def turn(i: int, *, output: int = 150, usage: int | None = None) -> list[ModelMessage]:
    """One user turn with a tool round trip; `usage` sets the provider-measured input tokens."""
    return [
        ModelRequest(parts=[UserPromptPart(content=f"request {i}: read module {i}, never edit tests")]),
        ModelResponse(
            parts=[ToolCallPart(tool_name="read_file", args={"path": f"src/m{i}.py"}, tool_call_id=f"c{i}")]
        ),
        ModelRequest(
            parts=[ToolReturnPart(tool_name="read_file", content="x = 1\n" * output, tool_call_id=f"c{i}")]
        ),
        ModelResponse(
            parts=[TextPart(content=f"read module {i}")],
            usage=RequestUsage(input_tokens=usage or 0, output_tokens=5 if usage else 0),
        ),
    ]


def open_store(path: Path, **settings: object) -> SessionStore:
    base = {"context_window_tokens": 10_000, "micro_keep_recent_tokens": 500, "keep_recent_tokens": 2_000}
    return SessionStore.open(path, settings=Settings(**{**base, **settings}))


def recorder(store: SessionStore) -> list[CompactionEvent]:
    events: list[CompactionEvent] = []
    store.listeners.append(events.append)
    return events


def test_under_the_levels_nothing_fires(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    events = recorder(store)
    s = store.session("s")
    s.append(turn(0))
    assert events == []
    assert s.view() == s.history
    assert [c.kind for c in s.log()] == ["turn"]


def test_measured_prefix_decides_and_equality_does_not_fire(tmp_path: Path) -> None:
    """Levels for a 10k window: micro 6,000, full 8,000. Usage says exactly the level: no tier."""
    store = open_store(tmp_path)
    events = recorder(store)
    s = store.session("s")
    s.append(turn(0, output=10, usage=8_000 - 5))  # input + output == full level exactly
    assert s.measurement.tokens == 8_000
    assert not any(isinstance(e, ContextCompacted) for e in events)
    assert [c.kind for c in s.log()] == ["turn"]


def test_over_micro_blanks_the_view_only(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    events = recorder(store)
    s = store.session("s")
    for i in range(4):
        s.append(turn(i))
    s.append(turn(4, output=10, usage=6_500))  # over micro (6,000), under full (8,000)
    assert any(isinstance(e, ContextMicrocompacted) for e in events)
    view = s.view()
    assert len(view) == len(s.history)
    elided = [p for m in view for p in m.parts if isinstance(p, ToolReturnPart) and p.content == ELIDED]
    assert elided, "old tool output is blanked in the view"
    stored = [p for m in s.history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert all(p.content != ELIDED for p in stored), "history keeps the full content"
    assert "compaction" not in [c.kind for c in s.log()]
    again = store.session("s")
    assert again.view() == view, "resume re-applies tier 1"


def test_over_full_compacts_persists_and_replays(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    events = recorder(store)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))
    last = turn(6, output=10, usage=9_000)
    s.append(last)
    kinds = [type(e) for e in events]
    assert ContextCompacted in kinds
    head = s.head
    assert head is not None and head.kind == "compaction" and head.tier == 2
    summary = s.history[0]
    assert isinstance(summary.parts[-1], CompactionPart)
    assert validate_summary(summary.parts[-1].content) == []
    assert s.persisted_count == len(s.history) == head.count
    assert pairs_intact(s.history)
    assert s.history[-4:] == last, "the last user turn stays verbatim"
    ref = store.resolve("checkpoints/s/1")
    assert ref.id == head.id
    reopened = store.session("s")
    assert reopened.history == s.history
    event = next(e for e in events if isinstance(e, ContextCompacted))
    assert event.tokens_after < event.tokens_before and event.checkpoint == "checkpoints/s/1"


def test_successive_compactions_merge_and_checkout_restores_everything(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))
    before = s.history
    pre = s.head
    assert pre is not None
    s.compact()
    for i in range(6, 9):
        s.append(turn(i))
    s.compact(focus="module 7")
    assert [r.k for r in store.refs.list("s")] == [1, 2]
    text = s.history[0].parts[-1].content
    assert "request 0" in text, "the first summary's goal survives the second compaction"
    s.checkout(f"s@{pre.seq}")
    assert s.history == before
    assert store.session("s").history == before


def test_compaction_disabled_stops_the_cascade_but_not_manual_compact(tmp_path: Path) -> None:
    store = open_store(tmp_path, compaction_enabled=False)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))
    s.append(turn(6, output=10, usage=9_500))
    assert "compaction" not in [c.kind for c in s.log()]
    assert s.view() == s.history
    commit = s.compact()
    assert commit.kind == "compaction" and commit.tier == 2


def test_tier_three_fits_when_the_last_request_alone_is_too_big(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    events = recorder(store)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))
    s.compact()  # a checkpoint exists, so tier 3 may run
    huge = [ModelRequest(parts=[UserPromptPart(content="log line 42 failed\n" * 2_500)])]
    s.append([*huge, ModelResponse(parts=[TextPart("looking")], usage=RequestUsage(input_tokens=12_000))])
    assert ContextUltimateCompacted in [type(e) for e in events]
    head = s.head
    assert head is not None and head.tier == 3
    _, lv = cascade.session_levels(s)
    assert s.tokens <= lv.full
    assert pairs_intact(s.history)
    assert store.session("s").history == s.history


def test_a_damaged_checkpoint_ref_is_left_out_of_the_tier_three_journal(tmp_path: Path) -> None:
    # A ref pointing at another commit's line once made tier 3 index that turn's (absent) blob list
    # and raise IndexError out of the acknowledged append.
    store = open_store(tmp_path)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))
    s.compact()
    s.compact()
    first = s.log()[-1]
    ref = store.refs.dir / "s" / "1"
    ref.chmod(0o644)
    ref.write_text(f"{first.id} {first.offset}\n")  # damage: checkpoint 1 now names turn 1
    assert cascade.checkpoint_summaries(s) == cascade.checkpoint_summaries(store.session("s"))
    assert len(cascade.checkpoint_summaries(s)) == 1
    assert not store.fsck().ok
    huge = [ModelRequest(parts=[UserPromptPart(content="log line 42 failed\n" * 2_500)])]
    s.append([*huge, ModelResponse(parts=[TextPart("looking")], usage=RequestUsage(input_tokens=12_000))])
    assert s.head is not None and s.head.tier == 3


def test_failed_summary_persists_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(tmp_path)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))

    def broken(*args: object, **kwargs: object) -> None:
        raise CompactionError("summary model unavailable")

    monkeypatch.setattr(full, "full_compact", broken)  # the cascade imports it when tier 2 runs
    history, count, head = s.history, s.persisted_count, s.head
    with pytest.raises(CompactionError):
        s.compact()
    assert (s.history, s.persisted_count, s.head) == (history, count, head)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.append(turn(6, output=10, usage=9_000))  # the turn is kept; compaction fails quietly
    assert any("compaction failed" in str(w.message) for w in caught)
    assert s.head is not None and s.head.kind == "turn"
    assert store.session("s").persisted_count == count + 4


def test_a_disk_error_while_compacting_never_fails_the_acknowledged_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An OSError from compaction once escaped `append` after the turn was durable: a caller retrying
    # the "failed" append stored the turn twice.
    store = open_store(tmp_path)
    s = store.session("s")
    for i in range(6):
        s.append(turn(i))

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(store.refs, "create", full_disk)  # after the compaction commit itself
    count = s.persisted_count
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        commit = s.append(turn(6, output=10, usage=9_000))
    assert any("compaction failed" in str(w.message) for w in caught)
    assert commit.kind == "turn" and commit.count == count + 4
    monkeypatch.undo()
    fresh = store.session("s")
    assert (fresh.history, fresh.head) == (s.history, s.head)
    assert store.fsck(repair=True).repaired == ["s: recreated checkpoints/s/1"]
    assert store.fsck().ok


def test_env_threshold_override_is_read_on_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path, context_window_tokens=1_000_000)
    s = store.session("s")
    s.append(turn(0))
    monkeypatch.setenv("SESSIONSTORE_COMPACT_THRESHOLD", "not-a-number")
    s.append(turn(1))
    assert "compaction" not in [c.kind for c in s.log()]
    monkeypatch.setenv("SESSIONSTORE_COMPACT_THRESHOLD", str(s.tokens // 2))
    s.append(turn(2))
    assert s.head is not None and s.head.kind == "compaction"


def test_manual_compact_on_a_locked_session_is_busy_and_changes_nothing(tmp_path: Path) -> None:
    store = open_store(tmp_path, lock_timeout_s=0.2)
    s = store.session("s")
    for i in range(3):
        s.append(turn(i))
    head = s.head
    with store.lock("s"), pytest.raises(SessionBusy, match="busy"):
        s.compact()
    assert s.head == head and store.session("s").head == head


def test_a_tier_three_budget_below_its_minimum_never_breaks_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path)
    s = store.session("s")
    for i in range(4):
        s.append(turn(i))
    s.compact()
    monkeypatch.setenv("SESSIONSTORE_COMPACT_THRESHOLD", "100")  # under tier 3's 256-token minimum
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        commit = s.append(turn(9))
    assert commit.kind == "turn" and any("compaction failed" in str(w.message) for w in caught)
    assert store.session("s").persisted_count == s.persisted_count


def test_a_reopened_session_uses_the_capacity_its_head_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A model only its `Model` object knew (a custom profile window) keeps that window after reopening,
    the same one `session gauge` reads from the head line."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.profiles import ModelProfile

    from helpers.messages import tagged_turn
    from sessionstore.accounting.settings import Settings
    from sessionstore.porcelain.store import SessionStore

    store = SessionStore.open(tmp_path / "s", settings=Settings())
    session = store.session("w")
    session.model = FunctionModel(
        lambda m, i: ModelResponse(parts=[TextPart("x")]), profile=ModelProfile(context_window=16_000)
    )
    session.append(tagged_turn(0, 0))
    assert session.head is not None and session.head.extra["capacity"] == 16_000
    reopened = store.session("w")
    assert cascade.session_levels(reopened)[0] == 16_000


def test_an_append_under_the_levels_never_loads_tier_2_or_3(tmp_path: Path) -> None:
    # The summarizers are ~20 ms of imports that a process's first append (a server's first request)
    # would otherwise pay; the cascade loads them when tier 2 or 3 first runs.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from pydantic_ai.messages import ModelRequest, UserPromptPart\n"
        "from sessionstore import SessionStore\n"
        f"store = SessionStore.open({str(tmp_path / 's')!r}, warm=False)\n"
        "store.session('a').append([ModelRequest(parts=[UserPromptPart('hello')])])\n"
        "print(sorted(m for m in sys.modules if m.startswith('sessionstore.compaction.')))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "sessionstore.compaction.micro" in loaded  # the cascade did run
    for heavy in ("full", "summarizer", "ultimate", "extraction", "extractive"):
        assert f"sessionstore.compaction.{heavy}'" not in loaded, loaded


def test_an_append_over_the_micro_level_loads_tier_2_ahead_on_the_warm_up_thread(tmp_path: Path) -> None:
    # Over the micro level, tier 2 is next: its imports (the summary's patterns compile at import)
    # load in the background then, not inside the first compacting append.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from pydantic_ai.messages import ModelRequest, UserPromptPart\n"
        "from sessionstore import SessionStore, Settings\n"
        "from sessionstore.accounting import tokens\n"
        "settings = Settings(context_window_tokens=1000, micro_reserve_fraction=0.9,\n"
        "                    full_reserve_fraction=0.2)\n"
        f"store = SessionStore.open({str(tmp_path / 's')!r}, warm=False, settings=settings)\n"
        "session = store.session('a')\n"
        "session.append([ModelRequest(parts=[UserPromptPart('word ' * 300)])])\n"
        "tokens.wait_preloaded()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('sessionstore.compaction.'))\n"
        "print(session.head.kind, loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.startswith("turn ")  # over micro (100 tokens), under full (800): nothing compacted
    assert "sessionstore.compaction.full'" in out and "sessionstore.compaction.ultimate'" in out, out
