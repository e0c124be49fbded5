"""The agent's own tools on its session (integrations/session_tools.py): `recall` and `compact`.

The goal of issue 27: on a session compacted 5 times, a scripted agent gets back each of 20 details
planted in tool output before the first checkpoint (tool output is what summaries drop), through its
`recall` tool, whose every answer fits `RECALL_TOKENS`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from helpers.agent_histories import agent_histories
from helpers.long_runs import filler
from sessionstore import SessionStore, Settings
from sessionstore.accounting.tokens import count_text
from sessionstore.errors import SessionStoreError
from sessionstore.integrations.runs import RunReport, run_turn
from sessionstore.integrations.session_tools import (
    RECALL_NOTE,
    RECALL_TOKENS,
    SessionToolset,
    render_recalled,
)
from sessionstore.porcelain.session.recall import Recalled
from sessionstore.porcelain.session.session import Session

SERVICES = [
    "payments-gateway", "billing-worker", "search-indexer", "auth-proxy", "media-transcoder",
    "email-relay", "audit-ledger", "report-builder", "cache-warmer", "geo-resolver",
    "invoice-renderer", "fraud-scorer", "session-broker", "metrics-shipper", "backup-runner",
    "ledger-reconciler", "notify-fanout", "schema-migrator", "queue-drainer", "pdf-stamper",
]  # fmt: skip
DETAILS = {name: f"{3_100 + 37 * i}ms" for i, name in enumerate(SERVICES)}
"""20 planted details: each service's timeout, written once, in a config file the agent read."""


def config_file(name: str) -> str:
    """A config file of ~1,200 tokens with one line that matters."""
    return filler(600, f"{name} defaults") + f"{name} timeout: {DETAILS[name]}\n" + filler(600, "more")


def read_turn(prompt: str, files: list[str], seq: int) -> list[ModelMessage]:
    out: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(prompt)])]
    for j, name in enumerate(files):
        call = ToolCallPart("read_file", {"path": f"config/{name}.toml"}, tool_call_id=f"t{seq}-{j}")
        out += [
            ModelResponse(parts=[call]),
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        "read_file",
                        config_file(name) if name in DETAILS else filler(1_200, name),
                        tool_call_id=call.tool_call_id,
                    )
                ]
            ),
        ]
    out.append(ModelResponse(parts=[TextPart(f"Read {len(files)} files.")]))
    return out


def compacted_five_times(path: Path) -> tuple[Session, int]:
    """The planted session: 5 turns reading the 20 config files, then 5 rounds of other work each
    ended by a compaction. Returns it and the seq of its first checkpoint."""
    s = SessionStore.open(path, settings=Settings(context_window_tokens=16_000)).session("s")
    SessionToolset(s)  # present from the start: its summaries say that recall reaches the rest
    for t in range(5):
        s.append(read_turn(f"read the configs of group {t}", SERVICES[4 * t : 4 * t + 4], t), compact=False)
    first = None
    for k in range(5):
        s.append(
            read_turn(f"now refactor module {k}", [f"module-{k}-{j}" for j in range(2)], 10 + k),
            compact=False,
        )
        commit = s.compact()
        first = first or commit.seq
    assert len([c for c in s.log() if c.kind == "compaction"]) == 5
    assert first is not None
    return s, first


class Asker:
    """The scripted agent: asks its `recall` tool about one service, answers with what it read."""

    def __init__(self) -> None:
        self.returns: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        back = [p for p in last.parts if isinstance(p, ToolReturnPart) and p.tool_name == "recall"]
        if not back:
            question = next(p.content for p in last.parts if isinstance(p, UserPromptPart))
            name = re.search(r"of (\S+)\?", question).group(1)  # type: ignore[union-attr]
            return ModelResponse(parts=[ToolCallPart("recall", {"query": f"{name} timeout"})])
        text = back[0].model_response_str()
        self.returns.append(text)
        found = re.search(r"(\S+) timeout: (\d+ms)", text)
        return ModelResponse(parts=[TextPart(found.group(2) if found else "not found")])


def test_an_agent_recalls_20_details_from_before_the_first_of_5_checkpoints(tmp_path: Path) -> None:
    s, first = compacted_five_times(tmp_path)
    sent = " ".join(str(p.content) for m in s.history for p in m.parts if hasattr(p, "content"))
    dropped = [n for n in SERVICES if DETAILS[n] not in sent]
    assert len(dropped) == 20, "every detail is gone from what the next request sends"
    summary = s.history[0].parts[-1].content
    assert summary.rstrip().endswith(RECALL_NOTE) and summary.count(RECALL_NOTE) == 1

    asker = Asker()
    agent: Agent[None, str] = Agent(FunctionModel(asker), toolsets=[SessionToolset(s)])
    for name in SERVICES:
        result = run_turn(s, agent, f"what is the timeout of {name}?")
        assert result.output == DETAILS[name], name
    assert len(asker.returns) == 20
    for text in asker.returns:
        assert count_text(text) <= RECALL_TOKENS
        seqs = [int(m) for m in re.findall(r"\[s@(\d+)\]", text)]
        assert seqs and seqs[0] < first, "the best match is the original, from before the checkpoint"


def test_recall_returns_messages_verbatim_with_their_revision(tmp_path: Path) -> None:
    s, first = compacted_five_times(tmp_path)
    [hit] = s.recall("audit-ledger timeout", limit=1)
    assert isinstance(hit.message, ModelRequest) and hit.revision == "s@2" and int(hit.revision[2:]) < first
    assert hit.message.parts[0].content == config_file("audit-ledger"), "verbatim, as stored"
    hits = s.recall("timeout", limit=30)
    assert len(hits) == 20 and len({h.commit for h in hits}) == 5, "each message once, tail copies aside"
    assert s.recall("no-such-word-anywhere") == []
    for bad in ("", "  ,; ", None):
        with pytest.raises(SessionStoreError, match="recall needs words"):
            s.recall(bad)  # type: ignore[arg-type]
    with pytest.raises(SessionStoreError, match="limit"):
        s.recall("timeout", limit=0)


def test_a_long_match_is_cut_around_its_words_within_the_budget(tmp_path: Path) -> None:
    s, _ = compacted_five_times(tmp_path)
    hits = s.recall("timeout", limit=20)
    text = render_recalled(hits, "timeout", 600)
    assert count_text(text) <= 600 and "characters cut" in text and "timeout:" in text
    assert render_recalled([], "x y", 600).startswith("No message of this session matches")


def test_the_agent_asks_for_a_checkpoint_and_gets_it_before_its_next_request(tmp_path: Path) -> None:
    s = SessionStore.open(tmp_path, settings=Settings(context_window_tokens=200_000)).session("s")
    s.append(read_turn("read the configs", SERVICES[:4], 0), compact=False)
    received: list[list[ModelMessage]] = []

    def body(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(messages)
        if len(received) == 1:
            return ModelResponse(parts=[ToolCallPart("compact", {"focus": "the timeouts"})])
        return ModelResponse(parts=[TextPart("compacted")])

    report = RunReport()
    agent: Agent[None, str] = Agent(FunctionModel(body), toolsets=[SessionToolset(s)])
    run_turn(s, agent, "make room, keep the timeouts", report=report)
    assert report.checkpoints == 1 and [r.tier for r in report.requests] == [0, 2]
    compaction = next(c for c in s.log() if c.kind == "compaction")
    assert compaction.extra["focus"] == "the timeouts" and s.checkpoint_request is None
    assert received[1][0].parts[-1].part_kind in ("compaction", "user-prompt"), "sent from the checkpoint"
    assert any(p.part_kind == "compaction" for p in received[1][0].parts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent_histories(max_turns=2), st.text(min_size=1, max_size=300), st.integers(200, 3_000))
def test_the_recall_answer_fits_its_budget_whatever_it_holds(
    history: list[ModelMessage], query: str, budget: int
) -> None:
    found = [Recalled(m, f"s@{i + 1}", "0" * 64, 1.0) for i, m in enumerate(history[:5])]
    assert count_text(render_recalled(found, query, budget)) <= budget
