"""Every run shape people write, with every kind of usage a model reports (issue 27).

Eight shapes (`run_sync`, `run`, `iter`, `iter` stopped at a tool call, `run_stream` with text and with
structured output, `run_stream_events`, a stream cancelled mid-answer) times three usage modes (exact,
FunctionModel's default word count / 50 tokens when streaming, absent), on a 16k window with a session
that the run pushes past the full level. For each: every request the model received is under the
window (counted with the tokenizer on what it received), what pydantic-ai produced is what the log
holds and a reopened session replays, no tool call is left without its return, and the next turn works
and sends the stored history as it is.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    SYNTHESIZED_TOOL_RETURN_METADATA_KEY,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from helpers.long_runs import filler
from helpers.run_shapes import ANSWER, SHAPES, USAGE_MODES, Coder, UsageMode, run_shape
from sessionstore import SessionStore, Settings
from sessionstore.compaction.turns import pairs_intact
from sessionstore.integrations.run_history import extension_of, same_content
from sessionstore.integrations.runs import RunReport, run_turn
from sessionstore.plumbing import codec
from sessionstore.porcelain.session.session import Session

WINDOW = 16_000
PROMPT = "read the three files of the parser and tell me what each does"


def seeded(path: Path) -> Session:
    """A session of ~8k tokens: one earlier turn that read three files."""
    s = SessionStore.open(path, settings=Settings(context_window_tokens=WINDOW)).session("s")
    seed: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("look at the storage layer first")])]
    for i in range(3):
        seed.append(ModelResponse(parts=[ToolCallPart("read", {"i": 10 + i}, tool_call_id=f"s{i}")]))
        seed.append(
            ModelRequest(parts=[ToolReturnPart("read", filler(2_500, f"seed {i}"), tool_call_id=f"s{i}")])
        )
    seed.append(ModelResponse(parts=[TextPart("the storage layer appends and syncs")]))
    s.append(seed, compact=False)
    return s


def run_lines(s: Session) -> list[ModelMessage]:
    """Every message the newest run committed, in order, read back from the log's blobs."""
    commits = [c for c in s.log() if c.kind == "turn"]
    run = commits[0].extra.get("run")
    ours = [c for c in reversed(commits) if run and c.extra.get("run") == run]
    return [m for c in ours for m in codec.decode([s.store.objects.read(c.blob)])]


def without_synthesized(messages: list[ModelMessage]) -> list[ModelMessage]:
    """`messages` without the returns the store synthesized for calls no tool will answer."""
    out = []
    for m in messages:
        parts = [
            p
            for p in m.parts
            if not (getattr(p, "metadata", None) or {}).get(SYNTHESIZED_TOOL_RETURN_METADATA_KEY)
        ]
        if parts:
            out.append(m if len(parts) == len(m.parts) else ModelRequest(parts=parts))
    return out


def unmetered(m: ModelMessage) -> ModelMessage:
    """`m` without its usage: `UsageMode` sets usage in a hook, whose response `run_stream`'s own
    result does not hold for its streamed final response (a provider's usage is in both)."""
    return dataclasses.replace(m, usage=RequestUsage()) if isinstance(m, ModelResponse) else m


def as_sent(stored: list[ModelMessage], received: list[ModelMessage], prompt: str) -> bool:
    """Whether `received` is `stored` plus the new `prompt`, in content (pydantic-ai merges the
    prompt into a request the history ends with, and adjacent requests of the history together)."""
    last = received[-1]
    rest = [p for p in last.parts if not (isinstance(p, UserPromptPart) and p.content == prompt)]
    head = received[:-1] + ([ModelRequest(parts=rest)] if rest else [])
    return len(rest) < len(last.parts) and extension_of(stored, head) == len(head)


@pytest.mark.parametrize("mode", USAGE_MODES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_run_shape_fits_commits_what_it_produced_and_the_next_turn_works(
    tmp_path: Path, shape: str, mode: str
) -> None:
    s = seeded(tmp_path)
    coder, report = Coder(), RunReport()
    out = run_shape(shape, s, coder, mode, PROMPT, report)

    assert max(coder.received) <= WINDOW, f"a request of {max(coder.received):,} tokens was received"
    assert report.peak <= WINDOW and report.peak_figure in ("measured", "estimate")
    assert report.checkpoints >= 1 or shape == "iter_stopped", "the run crossed the full level"
    stored = s.history
    assert pairs_intact(stored), "no tool call is stored without its return"
    assert SessionStore.open(tmp_path).session("s").history == stored, "a reopened session replays it"

    committed = run_lines(s)
    assert out.new is not None
    kept = without_synthesized(committed) if out.cancelled else committed  # open calls closed as interrupted
    assert len(kept) == len(out.new), [m.kind for m in committed]
    assert all(same_content(unmetered(a), unmetered(b)) for a, b in zip(kept, out.new, strict=True))
    if shape == "run_stream_cancelled":
        last = next(m for m in reversed(committed) if isinstance(m, ModelResponse))
        assert last.state == "interrupted" and out.text and last.text.startswith(out.text.rstrip())
    elif shape in ("run_stream_text", "run_stream_events", "run_sync", "run", "iter"):
        assert committed[-1].parts[-1].content == ANSWER

    # The next turn: sent from the stored history as it is (when nothing had to be shaped), and fits.
    before, n = s.history, len(coder.requests)
    coder.rounds, nxt = 1, RunReport()
    run_turn(s, coder.agent(), "and the tests?", report=nxt, capabilities=[UsageMode(mode, coder)])
    assert max(coder.received) <= WINDOW and pairs_intact(s.history)
    if nxt.requests[0].tier == 0:
        assert as_sent(before, coder.requests[n], "and the tests?"), "the model got the stored history"
    assert s.history[-1].parts[-1].content == ANSWER
