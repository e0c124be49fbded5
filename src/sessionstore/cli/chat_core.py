"""The state and the behaviour of `session chat`, without the terminal: lines in, lines and a footer out.

`Chat` runs each turn as an asyncio task through `integrations.runs.run_turn_async` (so every request
is protected, the new messages persisted and the cascade run, exactly as for `run_turn`), while the
terminal keeps reading lines: that is what lets `/compact` answer "busy" while a turn runs, and Ctrl-C
(`interrupt`) cancel it. A cancelled or failed turn keeps whatever the session had persisted; the chat
waits for an in-flight persist (the session lock) before it reports the head.

The footer (`footer`) is the gauge of DESIGN §9 (same window and levels as the triggers, the same
figure: the larger of the measured usage and the calibrated estimate, named), refreshed after every
model request of a run from that request's usage, plus the model and the head.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability

from ..accounting.calibration import decide
from ..accounting.tokens import estimate_message, estimate_messages
from ..errors import SessionStoreError, StaleSessionError
from ..integrations.runs import run_turn_async
from ..integrations.session_tools import SessionToolset
from ..porcelain.session import cascade
from ..porcelain.session.gauge import Gauge, format_gauge, gauge
from .chat_slash import Command, Invalid, Message, help_lines, parse, session_rev
from .history_cmds import describe
from .output import number, plural, short_id
from .render import call_args, format_call

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext

    from ..compaction.events import CompactionEvent
    from ..porcelain.session.session import Session
    from ..porcelain.store import SessionStore

BAND_STYLE = {"green": "fg:ansigreen bold", "yellow": "fg:ansiyellow bold", "red": "fg:ansired bold"}
"""prompt_toolkit styles of the gauge's bands (the same colours `session gauge` prints)."""
LOG_DEFAULT = 10


@dataclass
class _Live(AbstractCapability[Any]):
    """Tells the chat about every model response of a run (the footer and the tool-call lines)."""

    chat: Chat

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        self.chat.on_response(list(request_context.messages), response)
        return response


def _shown(output: Any) -> str:
    """A run's output as the chat prints it: text as it is, structured output as indented JSON."""
    if isinstance(output, str):
        return output
    from pydantic_core import to_json

    return to_json(output, indent=2, fallback=str).decode()


class Chat:
    """One chat: the session it is on, the agent, the job running (a turn or a compaction), the footer."""

    def __init__(
        self,
        store: SessionStore,
        session: Session,
        agent: Any,
        label: str,
        out: Callable[[str], None],
        *,
        recall: bool = False,
    ) -> None:
        self.store = store
        self.recall = recall
        """Give every run the session's own tools (`SessionToolset`: recall, compact)."""
        self.agent = agent
        self.label = label
        self.out = out
        self.job: asyncio.Task[None] | None = None
        self.job_kind: str | None = None
        self.invalidate: Callable[[], None] = lambda: None
        """Redraw the footer (the terminal sets it)."""
        self.touched: dict[str, tuple[Session, str | None]] = {}
        """Sessions of this chat and their heads when the chat reached them: `close` ends the moved ones."""
        self._reading: Gauge | None = None
        self._events: list[CompactionEvent] = []
        self.session = session
        self._enter(session)

    # -- state ----------------------------------------------------------------------------------------

    def _enter(self, session: Session) -> None:
        self.session = session
        if session.model is None:
            session.model = self.agent.model  # its profile's window is the gauge's, as for the triggers
        session.subscribe(self._events.append)
        self.touched.setdefault(session.name, (session, session.head.id if session.head else None))
        self.refresh()

    @property
    def busy(self) -> bool:
        return self.job is not None and not self.job.done()

    def refresh(self, used: int | None = None, figure: str | None = None) -> None:
        """Re-read the gauge: from `used` (a request of the running turn, `figure` naming what it is)
        or the session's measurement (DESIGN §6: the larger of measured and estimated)."""
        window, lv = cascade.session_levels(self.session)
        if used is None:
            m = self.session.measurement
            used, figure = m.tokens, m.figure
        self._reading = gauge(used, window, lv, figure=figure)  # type: ignore[arg-type]
        self.invalidate()

    def reading(self) -> Gauge:
        assert self._reading is not None
        return self._reading

    def footer(self) -> list[tuple[str, str]]:
        """The footer as prompt_toolkit (style, text) fragments; `footer_text` joins them."""
        g = self.reading()
        head = self.session.head
        where = (
            f"head {short_id(head.id)} {self.session.name}@{head.seq}"
            if head
            else f"{self.session.name}: new"
        )
        glyph, _, rest = format_gauge(g, color=False).partition(" of ")
        parts = [(BAND_STYLE.get(g.band or "", ""), glyph), ("", f" of {rest}  │  {self.label}  │  {where}")]
        if self.busy:
            what = "compacting…" if self.job_kind == "compact" else "working… Ctrl-C cancels"
            parts.append(("bold", f"  │  {what}"))
        return parts

    def footer_text(self) -> str:
        return "".join(text for _, text in self.footer())

    def on_response(self, sent: list[Any], response: ModelResponse) -> None:
        """A request of the running turn came back: show its tool calls and re-read the gauge."""
        for part in response.parts:
            if part.part_kind == "tool-call":
                self.out(f"  → {format_call(part.tool_name, call_args(part), full=False)}")
        usage = response.usage
        measured = usage.input_tokens + usage.output_tokens if usage.input_tokens > 0 else None
        local = sum(estimate_messages(sent)) + estimate_message(response)
        d = decide(local, self.session.decision_factor, measured)  # the figure the triggers would take
        self.refresh(d.tokens, d.figure)

    # -- lines in ---------------------------------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Act on one typed line; False when the chat should end (/exit)."""
        parsed = parse(line)
        if parsed is None:
            return True
        if isinstance(parsed, Invalid):
            self.out(parsed.error)
        elif isinstance(parsed, Message):
            if self.busy:
                self.out(f"still {self._doing()}: wait for it (Ctrl-C cancels a turn); nothing was sent")
            else:
                self._start("turn", self._turn(parsed.text))
        elif isinstance(parsed, Command):
            return await self._command(parsed)
        return True

    def _doing(self) -> str:
        return "compacting" if self.job_kind == "compact" else "answering the last message"

    def _start(self, kind: str, work: Any) -> None:
        self.job_kind = kind
        self.job = asyncio.ensure_future(work)
        self.invalidate()

    async def _command(self, cmd: Command) -> bool:
        name, arg = cmd.name, cmd.arg
        if name == "exit":
            return False
        if name == "help":
            for line in help_lines():
                self.out(line)
        elif name == "gauge":
            self.out(format_gauge(self.reading(), color=False))
        elif name == "log":
            self._log(int(arg) if arg else LOG_DEFAULT)
        elif self.busy:  # compact, checkout and fork write: never under a running job
            self.out(f"still {self._doing()}: /{name} waits until it is done; nothing changed")
        elif name == "compact":
            self._start("compact", self._compact(arg))
        elif name == "checkout":
            await self._guarded(self._checkout, session_rev(arg or "", self.session.name))
        elif name == "fork":
            await self._guarded(self._fork, arg or "")
        return True

    async def _guarded(self, action: Callable[[str], Any], arg: str) -> None:
        try:
            await asyncio.to_thread(action, arg)
        except SessionStoreError as err:
            self.out(f"{err}")
        self.refresh()

    # -- commands ---------------------------------------------------------------------------------------

    def _log(self, n: int) -> None:
        commits = self.session.log()
        if not commits:
            self.out(f"{self.session.name}: no commits yet")
        for i, commit in enumerate(commits[:n]):
            before = commits[i + 1].tokens if i + 1 < len(commits) else None
            deco = "(head) " if i == 0 else ""
            self.out(f"{short_id(commit.id)} {deco}{describe(commit, before)}")

    def _checkout(self, rev: str) -> None:
        target = self.store.resolve(rev, within=self.session.name)
        commit = self.session.checkout(target)
        self.out(
            f"{self.session.name}: head is now {short_id(commit.id)} (checkout of {short_id(target.id)}, "
            f"{target.session}@{target.seq}): {plural(commit.count, 'message')}, {number(commit.tokens)} tok"
        )

    def _fork(self, new: str) -> None:
        head = self.session.head
        if head is None:
            raise SessionStoreError(f"session {self.session.name!r} is empty: nothing to fork yet")
        forked = self.store.fork(head, new)
        old = self.session.name
        forked.model = self.session.model
        self._enter(forked)
        self.out(
            f"forked {old}@{head.seq} ({short_id(head.id)}) into {forked.name}: "
            f"{plural(forked.persisted_count, 'message')}; now chatting in {forked.name}"
        )

    async def _compact(self, focus: str | None) -> None:
        before = self.session.tokens
        try:
            commit = await asyncio.to_thread(self.session.compact, focus=focus)
        except SessionStoreError as err:
            self.out(f"/compact: {err}")
        else:
            ref = f"checkpoints/{self.session.name}/{commit.extra.get('checkpoint')}"
            self.out(
                f"{short_id(commit.id)} compaction tier {commit.tier} [{ref}] {number(before)} -> "
                f"{number(commit.tokens)} tok, {plural(commit.count, 'message')}"
            )
        finally:
            self._events.clear()
            self.refresh()

    # -- turns ------------------------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        self._events.clear()
        try:
            extra = {"toolsets": [SessionToolset(self.session)]} if self.recall else {}
            result = await run_turn_async(self.session, self.agent, text, capabilities=[_Live(self)], **extra)
        except asyncio.CancelledError:
            await asyncio.to_thread(self._settle)
            self.out(f"cancelled. {self._kept()}")
        except StaleSessionError as err:  # another writer appended first: take its head, lose nothing
            await asyncio.to_thread(self._settle)
            await asyncio.to_thread(self.session.reload)
            # before any request the run saved nothing; after one, the error names the fork holding it
            self.out(f"{err}; reloaded {self.session.name!r} ({self._state()})")
        except SessionStoreError as err:
            await asyncio.to_thread(self._settle)
            self.out(f"not saved: {err}")
        except Exception as err:  # the provider refused, the network failed, a tool raised: one line
            await asyncio.to_thread(self._settle)
            reason = " ".join(str(err).split()) or type(err).__name__
            self.out(f"the request failed ({type(err).__name__}: {reason[:300]}). {self._kept()}")
        else:
            for line_ in _shown(result.output).splitlines() or [""]:
                self.out(f"assistant  {line_}" if line_ is not None else "")
            for event in self._events:
                before, after = number(event.tokens_before), number(event.tokens_after)
                self.out(f"  [tier {event.tier}: {before} -> {after} tok]")
        finally:
            self._events.clear()
            self.refresh()

    def _settle(self) -> None:
        """Wait until no persist of this session is in flight (a cancelled run's may still be finishing)."""
        try:
            with self.store.lock(self.session.name):
                pass
        except SessionStoreError:  # another process holds it (LockTimeout): its write is not ours to await
            pass

    def _state(self) -> str:
        head = self.session.head
        where = f", head {short_id(head.id)}" if head else ""
        return f"{plural(self.session.persisted_count, 'message')}{where}"

    def _kept(self) -> str:
        return f"The session keeps what was persisted: {self._state()}."

    # -- keys -------------------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Ctrl-C: cancel a running turn; a compaction runs to its end (it is one step)."""
        if self.busy and self.job_kind == "turn":
            assert self.job is not None
            self.job.cancel()
        elif self.busy:
            self.out("the compaction is one step and runs to its end; wait for it")
        else:
            self.out("(nothing is running: Ctrl-D or /exit leaves)")

    async def close(self) -> None:
        """Cancel a running turn, wait for a compaction, then write the MEMORY.md bullet of each session
        whose head moved during the chat (DESIGN §8; `Session.end`)."""
        if self.busy:
            assert self.job is not None
            if self.job_kind == "turn":
                self.job.cancel()
            await asyncio.gather(self.job, return_exceptions=True)
        for session, start in self.touched.values():
            if (session.head.id if session.head else None) == start:
                continue
            try:
                update = await asyncio.to_thread(session.end)
            except SessionStoreError as err:
                self.out(f"MEMORY.md not updated for {session.name}: {err}")
            else:
                lines = [update.describe()] if update.changed or not update.notes else []
                for line in [*lines, *update.notes]:
                    self.out(f"memory: {line}")
