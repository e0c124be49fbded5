"""FileConversationStore behaves exactly like pydantic-ai's InMemoryConversationStore.

A hypothesis state machine applies the same random operations to both stores: saves after a run (from
fresh, loaded, limited and stale copies, with and without scope), saves of a rewritten history, loads
with and without `limit`, branches by `at` and `from_entry`, forks, deletes, listings, and reopening the
file store. Every outcome (value or exception type) must match, entry ids and timestamps aside: entry
ids are paired up as they appear and the pairing must stay one-to-one. After every step the file
store's sessions replay (through `Session`) to the same histories, and at the end `fsck` is clean.
"""

from __future__ import annotations

import asyncio
import copy
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord, InMemoryConversationStore
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelRequest, UserPromptPart

from helpers.conversations import run_turn
from sessionstore.integrations.conversation_store import FileConversationStore, session_name

IDS = ["alpha", "beta", "not a valid name/ü"]
SCOPES = [None, "u1", "u2"]
SCOPE_ARGS = st.sampled_from([None, None, None, "u1", "u2"])  # mostly unscoped, so operations reach data
Pair = tuple[Conversation, Conversation]


def outcome(value: Any) -> tuple[str, Any]:
    return ("ok", value) if not isinstance(value, BaseException) else ("err", type(value))


class SameAsInMemory(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.dir = Path(tempfile.mkdtemp(prefix="convstore-"))
        self.ref = InMemoryConversationStore()
        self.file = FileConversationStore(self.dir / "store")
        self.copies: list[Pair] = []  # conversations held by the app: loaded, run or branched
        self.ref_to_file: dict[str, str] = {}
        self.file_to_ref: dict[str, str] = {}

    def teardown(self) -> None:
        try:
            report = self.file.store.fsck()
            assert report.ok, report.problems
        finally:
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------------------

    def both(self, op: Callable[[Any], Awaitable[Any]]) -> tuple[Any, Any]:
        """Run `op` on each store; the outcomes must be alike (exceptions by type)."""
        results = []
        for store in (self.ref, self.file):
            try:
                results.append(self.loop.run_until_complete(op(store)))
            except (UserError, LookupError) as err:
                results.append(err)
        ref, got = results
        assert outcome(ref)[0] == outcome(got)[0] and (
            outcome(ref)[0] == "ok" or outcome(ref)[1] is outcome(got)[1]
        ), (ref, got)
        event(
            f"{sys._getframe(1).f_code.co_name}: {outcome(ref)[0]} {getattr(outcome(ref)[1], '__name__', '')}"
        )
        return ref, got

    def pair_id(self, ref_id: str | None, file_id: str | None) -> None:
        assert (ref_id is None) == (file_id is None)
        if ref_id is None or file_id is None:
            return
        assert self.ref_to_file.setdefault(ref_id, file_id) == file_id
        assert self.file_to_ref.setdefault(file_id, ref_id) == ref_id

    def same_entries(self, ref: list[ConversationEntry], got: list[ConversationEntry]) -> None:
        assert [e.message for e in ref] == [e.message for e in got]
        for a, b in zip(ref, got, strict=True):
            self.pair_id(a.id, b.id)
            self.pair_id(a.parent_id, b.parent_id)

    def same_conversation(self, ref: Conversation | None, got: Conversation | None) -> None:
        assert (ref is None) == (got is None)
        if ref is None or got is None:
            return
        assert ref.messages == got.messages
        assert (ref.usage, ref.conversation_id, ref.deferred_tool_requests) == (
            got.usage, got.conversation_id, got.deferred_tool_requests,
        )  # fmt: skip
        assert ref.new_message_index == got.new_message_index
        assert (ref.revision is None) == (got.revision is None)

    def same_record(self, ref: ConversationRecord, got: ConversationRecord) -> None:
        keys = (
            "conversation_id",
            "usage",
            "deferred_tool_requests",
            "scope",
            "forked_from",
            "format_version",
        )
        assert [getattr(ref, k) for k in keys] == [getattr(got, k) for k in keys]
        self.pair_id(ref.head_id, got.head_id)
        self.pair_id(ref.forked_at, got.forked_at)
        assert len(ref.branches) == len(got.branches)
        for a, b in zip(ref.branches, got.branches, strict=True):
            self.pair_id(a, b)

    def keep(self, ref: Conversation, got: Conversation) -> None:
        self.same_conversation(ref, got)
        self.copies.append((ref, got))
        del self.copies[:-6]

    # -- rules --------------------------------------------------------------------------------------

    @initialize(cid=st.sampled_from(IDS), turns=st.integers(1, 3), scope=st.sampled_from(SCOPES))
    def start(self, cid: str, turns: int, scope: str | None) -> None:
        """Most sequences start from a stored conversation of a few turns."""
        self.save_new(cid, 0, scope, False)
        for n in range(1, turns):
            self.run_and_save(self.copies[-1], n, None, False)

    @rule(
        cid=st.sampled_from(IDS), n=st.integers(0, 99), scope=st.sampled_from(SCOPES), approve=st.booleans()
    )
    def save_new(self, cid: str, n: int, scope: str | None, approve: bool) -> None:
        """A first run of a conversation the app did not load (a conflict when it is stored)."""
        self.run_and_save(
            (Conversation(conversation_id=cid), Conversation(conversation_id=cid)), n, scope, approve
        )

    @precondition(lambda self: self.copies)
    @rule(data=st.data(), n=st.integers(0, 99), scope=st.sampled_from(SCOPES), approve=st.booleans())
    def save_copy(self, data: st.DataObject, n: int, scope: str | None, approve: bool) -> None:
        """A run continuing a held copy, fresh or stale, then a save."""
        self.run_and_save(data.draw(st.sampled_from(self.copies)), n, scope, approve)

    def run_and_save(self, pair: Pair, n: int, scope: str | None, approve: bool) -> None:
        ref_conv, file_conv = pair
        self.same_conversation(ref_conv, file_conv)
        try:
            result = self.loop.run_until_complete(run_turn(ref_conv, f"{'approve ' * approve}turn {n}"))
        except UserError:
            return  # a limited window the run itself refuses: nothing to save in either store
        ref_next = result.conversation
        file_next = copy.deepcopy(ref_next)
        file_next.revision = file_conv.revision
        ref_saved, file_saved = self.both(
            lambda s: s.save(ref_next if s is self.ref else file_next, scope=scope)
        )
        if outcome(ref_saved)[0] == "ok":
            self.same_entries(ref_saved, file_saved)
            self.keep(ref_next, file_next)

    @precondition(lambda self: self.copies)
    @rule(data=st.data(), keep=st.integers(0, 8), extra=st.booleans())
    def save_rewritten(self, data: st.DataObject, keep: int, extra: bool) -> None:
        """A copy whose history was rewritten (or deserialized): the save compares and may branch."""
        ref_conv, file_conv = data.draw(st.sampled_from(self.copies))
        messages = list(ref_conv.messages[:keep])
        if extra:
            messages.append(ModelRequest(parts=[UserPromptPart(f"edited at {keep}")]))
        ref_new = Conversation(
            messages=messages, usage=ref_conv.usage, conversation_id=ref_conv.conversation_id,
            revision=ref_conv.revision,
        )  # fmt: skip
        file_new = copy.deepcopy(ref_new)
        file_new.revision = file_conv.revision
        ref_saved, file_saved = self.both(lambda s: s.save(ref_new if s is self.ref else file_new))
        if outcome(ref_saved)[0] == "ok":
            self.same_entries(ref_saved, file_saved)
            self.keep(ref_new, file_new)

    @rule(cid=st.sampled_from(IDS), limit=st.none() | st.integers(0, 6), scope=SCOPE_ARGS)
    def load(self, cid: str, limit: int | None, scope: str | None) -> None:
        ref, got = self.both(lambda s: s.load(cid, limit=limit, scope=scope))
        self.same_conversation(ref, got)
        if ref is not None:
            self.keep(ref, got)
        ref_e, got_e = self.both(lambda s: s.load_entries(cid, limit=limit, scope=scope))
        if ref_e is not None:
            self.same_entries(ref_e, got_e)

    def entry_choice(self, data: st.DataObject, cid: str) -> tuple[str, str]:
        """An entry (ref id, file id) of the current history or a branch left, or an unknown one."""
        ref_rec, file_rec = self.both(lambda s: s.read_record(cid))
        if ref_rec is None or data.draw(st.integers(0, 9)) == 0:
            return "no-such-entry", "no-such-entry"
        lines = [(ref_rec.head_id, file_rec.head_id), *zip(ref_rec.branches, file_rec.branches, strict=True)]
        ref_tip, file_tip = data.draw(st.sampled_from(lines))
        ref_line, file_line = self.both(lambda s: s.read_history(ref_tip if s is self.ref else file_tip))
        self.same_entries(ref_line, file_line)
        if not ref_line:
            return "no-such-entry", "no-such-entry"
        i = data.draw(st.integers(0, len(ref_line) - 1))
        return ref_line[i].id, file_line[i].id

    @rule(data=st.data(), cid=st.sampled_from(IDS), scope=SCOPE_ARGS)
    def branch(self, data: st.DataObject, cid: str, scope: str | None) -> None:
        held = [p for p in self.copies if p[0].conversation_id == cid]
        ref_rev: str | None = None
        file_rev: str | None = None
        if held and data.draw(st.integers(0, 4)):
            ref_c, file_c = data.draw(st.sampled_from(held))
            ref_rev, file_rev = ref_c.revision, file_c.revision
        if data.draw(st.booleans()):
            at = data.draw(st.integers(0, 8))
            ref, got = self.both(
                lambda s: s.branch(
                    cid, at=at, expected_revision=ref_rev if s is self.ref else file_rev, scope=scope
                )
            )
        else:
            ref_e, file_e = self.entry_choice(data, cid)
            ref, got = self.both(
                lambda s: s.branch(
                    cid,
                    from_entry=ref_e if s is self.ref else file_e,
                    expected_revision=ref_rev if s is self.ref else file_rev,
                    scope=scope,
                )
            )
        if outcome(ref)[0] == "ok":
            self.keep(ref, got)

    @rule(data=st.data(), cid=st.sampled_from(IDS), new=st.sampled_from(IDS), scope=SCOPE_ARGS)
    def fork(self, data: st.DataObject, cid: str, new: str, scope: str | None) -> None:
        how = data.draw(st.sampled_from(["all", "at", "entry"]))
        at = data.draw(st.integers(0, 8)) if how == "at" else None
        ref_e, file_e = self.entry_choice(data, cid) if how == "entry" else (None, None)
        source_scope = data.draw(SCOPE_ARGS)
        ref, got = self.both(
            lambda s: s.fork(
                cid, at=at, from_entry=ref_e if s is self.ref else file_e, new_conversation_id=new,
                scope=scope, source_scope=source_scope,
            )
        )  # fmt: skip
        if outcome(ref)[0] == "ok":
            self.keep(ref, got)

    @rule(cid=st.sampled_from(IDS), scope=SCOPE_ARGS)
    def delete(self, cid: str, scope: str | None) -> None:
        self.both(lambda s: s.delete(cid, scope=scope))

    @rule()
    def reopen(self) -> None:
        self.file = FileConversationStore(self.dir / "store")

    # -- invariants ---------------------------------------------------------------------------------

    @invariant()
    def same_listings(self) -> None:
        for scope in SCOPES:
            ref, got = self.both(lambda s, scope=scope: s.list_conversations(scope=scope))
            assert [r.conversation_id for r in ref] == [r.conversation_id for r in got]
            for a, b in zip(ref, got, strict=True):
                self.same_record(a, b)
                tips = [(a.head_id, b.head_id), *zip(a.branches, b.branches, strict=True)]
                for ref_tip, file_tip in tips:
                    ref_line, file_line = self.both(
                        lambda s, r=ref_tip, f=file_tip: s.read_history(r if s is self.ref else f)
                    )
                    self.same_entries(ref_line, file_line)
        ref, got = self.both(lambda s: s.list_conversations(limit=1))
        assert [r.conversation_id for r in ref] == [r.conversation_id for r in got]

    @invariant()
    def sessions_replay_the_histories(self) -> None:
        """`Session` (what `session show` reads) replays every conversation's log to its history."""
        store = self.file.store
        stored = {session_name(cid): cid for cid in IDS}
        assert set(store.sessions()) <= set(stored)
        for name in store.sessions():
            conversation = self.loop.run_until_complete(self.file.load(stored[name]))
            assert conversation is not None
            assert store.session(name).history == conversation.messages


TestSameAsInMemory = SameAsInMemory.TestCase
TestSameAsInMemory.settings = settings(
    max_examples=25, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
