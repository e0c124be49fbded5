"""`session demo`: an offline, scripted coding agent long enough to fire every compaction tier.

A real pydantic-ai `Agent` on a `FunctionModel` plays a coding assistant working on a small generated
project: its tools really read the project's files and really run commands there. The model is a
script (no network, no key), but everything around it is the product as users run it: `run_turn`
protects every request of every run (tier 1 on what is sent, mid-run checkpoints, tier 3), commits each
step and measures the prefix from the responses' usage. The window is small (16k tokens, declared in
the scripted model's profile as a real model's is) so micro, full and ultimate all fire within a dozen
turns; turn 9 reads a CI log bigger than the full level and turn 10 is a 12-call tool loop, both of
which checkpoint mid-run. Each turn's line shows its PEAK request against the window (what a provider
was sent), then the gauge after the turn. Deterministic apart from timestamps and ids.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from ..accounting.settings import Settings
from ..accounting.tokens import estimate_message
from ..compaction.events import CompactionEvent
from ..errors import SessionStoreError
from ..integrations.runs import RequestRecord, RunReport, run_turn
from ..porcelain.session.gauge import fired_tiers, format_gauge, gauge
from ..porcelain.session.session import Session
from ..porcelain.store import SessionStore

DEMO_WINDOW = 16_000
"""The scripted model's context window, declared in its pydantic-ai profile: each turn records it, so
`session gauge` and `session list` show the same fill as the demo prints."""
DEMO_SETTINGS = {"keep_recent_tokens": 3_000, "micro_keep_recent_tokens": 2_500}
PROVIDER_OVERHEAD = 180
"""Tokens a provider adds to every request (tool schemas, framing): the script's usage includes them,
which is why the measured prefix runs a little above the local estimate, as with real providers."""

MODULES = ("models", "store", "api", "pricing", "reports", "utils")


@dataclass(frozen=True)
class Step:
    prompt: str
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    answer: str = "Done."


def _ci_log() -> str:
    lines = [
        f"tests/test_api.py::test_case_{i:03d} PASSED [{i % 100:3d}%] elapsed=0.{i % 97:02d}s"
        for i in range(560)
    ]
    lines[313] = "tests/test_api.py::test_case_313 FAILED - KeyError: 'sku' in inventory/store.py:88"
    return "\n".join(lines) + "\n"


SCRIPT = [
    Step("Get familiar with the inventory project: list the files and read the README.",
         [("run", {"command": "ls -R"}), ("read_file", {"path": "README.md"})],
         "It is a small inventory service: models, a store, an HTTP-ish api layer, pricing and reports."),
    Step("Read models.py and store.py. We must never change the public API of Inventory.",
         [("read_file", {"path": "inventory/models.py"}), ("read_file", {"path": "inventory/store.py"})],
         "Inventory keeps items in a dict keyed by sku; I will keep its public API unchanged."),
    Step("Find every unchecked sku in the package.", [("run", {"command": "grep -rn UNCHECKED inventory"})],
         "Every module has unchecked skus; the store's restock path is the riskiest."),
    Step("Read api.py and pricing.py, then run the test suite.",
         [("read_file", {"path": "inventory/api.py"}), ("read_file", {"path": "inventory/pricing.py"}),
          ("run", {"command": "python -m unittest discover -s tests"})],
         "Tests pass. Decided to use Decimal for prices instead of float."),
    Step("Read reports.py and utils.py; prefer small pure functions.",
         [("read_file", {"path": "inventory/reports.py"}), ("read_file", {"path": "inventory/utils.py"})],
         "reports.py formats totals; utils.py has the sku normalizer."),
    Step("Check how many lines each module has, then re-read store.py around restock.",
         [("run", {"command": "wc -l " + " ".join(f"inventory/{m}.py" for m in MODULES)}),
          ("read_file", {"path": "inventory/store.py"})],
         "store.py is the largest module; restock() does not validate quantities."),
    Step("Byte-compile the package to catch syntax errors, then read the tests.",
         [("run", {"command": "python -m compileall -q inventory"}),
          ("read_file", {"path": "tests/test_store.py"})],
         "Everything compiles; the tests cover add and remove but not restock."),
    Step("Read models.py again and list the test files.",
         [("read_file", {"path": "inventory/models.py"}), ("run", {"command": "ls tests"})],
         "Item is a frozen dataclass; there is one test module per source module."),
    Step("The nightly CI run failed: read its whole log, ci.log, and find the failure.",
         [("read_file", {"path": "ci.log"}), ("run", {"command": "grep -n FAILED ci.log"}),
          ("run", {"command": "grep -n sku inventory/store.py"})],
         "The nightly failure is the KeyError on 'sku' in store.py line 88: restock() reads a missing key."),
    Step("Before any fix, audit the whole package: read every module and its test, one file at a time.",
         [("read_file", {"path": f"{folder}/{prefix}{m}.py"})
          for m in MODULES for folder, prefix in (("inventory", ""), ("tests", "test_"))],
         "Audited all six modules and their tests: only store.restock() reads a sku it has not validated."),
    Step("Fix plan only, no code yet: what would you change in restock()?",
         [("read_file", {"path": "inventory/store.py"})],
         "Validate the sku with utils.normalize_sku before the lookup; raise UnknownSku, not KeyError."),
]  # fmt: skip


def make_project(root: Path) -> None:
    """Write the small project the demo agent works on."""
    (root / "inventory").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(exist_ok=True)
    (root / "README.md").write_text("# inventory\n\nA toy inventory service used by the sessionstore demo.\n")
    (root / "inventory" / "__init__.py").write_text('"""Inventory service."""\n')
    (root / "ci.log").write_text(_ci_log())
    for n, name in enumerate(MODULES):
        body = [f'"""The {name} module of the inventory service."""', "", "from decimal import Decimal", ""]
        for i in range(18 + 4 * n):
            body += [
                f"def {name}_op_{i}(sku: str, quantity: int = {i}) -> Decimal:",
                f'    """Operation {i} of {name}: adjust the stock of `sku` by `quantity`."""',
                f"    # UNCHECKED: sku is not validated here ({name}:{i})"
                if i % 7 == 0
                else "    # checked by the caller",
                f"    return Decimal(quantity) * Decimal('{i}.{n}5')",
                "",
            ]
        (root / "inventory" / f"{name}.py").write_text("\n".join(body))
        (root / "tests" / f"test_{name}.py").write_text(
            textwrap.dedent(f"""\
                import unittest
                from decimal import Decimal
                from inventory.{name} import {name}_op_1

                class Test{name.title()}(unittest.TestCase):
                    def test_op(self):
                        self.assertEqual(str({name}_op_1("a", 2)), str(2 * Decimal("1.{n}5")))
                """)
        )


def _tools(agent: Agent[None, str], root: Path) -> None:
    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return (root / path).read_text()

    @agent.tool_plain
    def run(command: str) -> str:
        """Run a command in the project directory."""
        argv = shlex.split(command)
        if argv[0] == "python":
            argv[0] = sys.executable
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, check=False)
        return f"$ {command}\n(exit {done.returncode})\n{done.stdout}{done.stderr}"


@dataclass
class _Scripted:
    """The script as a model: a request whose newest message holds a user prompt starts the next
    step (the first request of every run does, whatever compaction did to what came before), and the
    k-th request of the run gets the step's k-th call, then its answer. Counted per run, not from the
    messages, which compaction shortens."""

    turn: int = -1
    calls_made: int = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if messages and any(p.part_kind == "user-prompt" for p in messages[-1].parts):
            self.turn, self.calls_made = self.turn + 1, 0
        step = SCRIPT[self.turn % len(SCRIPT)]
        k = self.calls_made
        self.calls_made += 1
        if k < len(step.calls):
            name, args = step.calls[k]
            parts: list = [ToolCallPart(tool_name=name, args=args, tool_call_id=f"t{self.turn}-{k}")]
        else:
            parts = [TextPart(content=step.answer)]
        response = ModelResponse(parts=parts, model_name="scripted-coder")
        sent = sum(estimate_message(m) for m in messages) + PROVIDER_OVERHEAD
        response.usage = RequestUsage(input_tokens=sent, output_tokens=estimate_message(response))
        return response


def demo_agent(root: Path) -> Agent[None, str]:
    """The scripted coding agent working on the project at `root` (see `make_project`): a pydantic-ai
    `Agent` on a `FunctionModel` whose profile declares `DEMO_WINDOW`. `session chat --model demo` uses
    it too."""
    model = FunctionModel(_Scripted(), model_name="scripted-coder", profile={"context_window": DEMO_WINDOW})
    agent: Agent[None, str] = Agent(model)
    _tools(agent, root)
    return agent


def unused_name(store: SessionStore, base: str = "demo") -> str:
    name, n = base, 1
    while store.exists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def run_demo(
    store_path: Path | None, echo: Callable[[str], None], *, color: bool, name: str | None = None
) -> Session:
    """Run the scripted session in a fresh project; print the gauge and the tiers as they fire."""
    settings = Settings.load(overrides=DEMO_SETTINGS)
    store = SessionStore.open(store_path, settings=settings)
    if name is not None and store.exists(name):  # scripted turns would land in a real conversation
        raise SessionStoreError(
            f"session {name!r} already exists: the demo writes a new session; pass another --name "
            f"(or leave it out for {unused_name(store)!r})"
        )
    session = store.session(name or unused_name(store))
    fired: list[tuple[int, CompactionEvent]] = []
    report = RunReport()
    session.subscribe(lambda event: fired.append((len(report.requests), event)))
    with tempfile.TemporaryDirectory(prefix="sessionstore-demo-") as tmp:
        root = Path(tmp)
        make_project(root)
        agent = demo_agent(root)
        echo(f"session {session.name!r} in {store.root} · window {DEMO_WINDOW:,} tokens (the model's)")
        for n, step in enumerate(SCRIPT, start=1):
            fired.clear()
            first = len(report.requests)
            run_turn(session, agent, step.prompt, report=report)
            echo(_turn_line(n, session, report.requests[first:], first, fired, color=color))
    return session


def _turn_line(
    n: int,
    session: Session,
    requests: list[RequestRecord],
    first: int,
    events: list[tuple[int, CompactionEvent]],
    *,
    color: bool,
) -> str:
    """One turn: its peak request against the window (what was really sent, the figure a provider
    would have refused), the gauge after the turn, and every tier that fired, mid-run ones marked."""
    from ..porcelain.session import cascade

    window, lv = cascade.session_levels(session)
    m, settings = session.measurement, session.store.settings
    used = m.tokens
    fired = fired_tiers(session.head, used, lv, settings)
    on = settings.compaction_enabled
    reading = format_gauge(
        gauge(used, window, lv, fired=fired, compaction_enabled=on, figure=m.figure), color=color
    )
    peak = max(r.tokens for r in requests)
    head = (
        f"turn {n:2d} peak {peak:,}/{window:,} tok in {len(requests)} req{'s' if len(requests) > 1 else ''}"
    )
    tiers = ""
    for at, e in events:
        where = "mid-run " if at - first < len(requests) else ""
        tiers += f"  [{where}tier {e.tier}: {e.tokens_before:,} -> {e.tokens_after:,} tok]"
    micro = " [tier 1 view]" if session.view() != session.history else ""  # what turn n+1 sends
    return f"{head} · after: {reading}{micro}{tiers}"
