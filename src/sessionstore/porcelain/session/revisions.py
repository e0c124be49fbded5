"""Revision syntax (DESIGN §4): `NAME`, `NAME@SEQ`, `NAME~K`, a commit id or unique prefix of ≥ 6 hex
digits, and `checkpoints/NAME/K`. Session names win over hex prefixes, as branch names do in git.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sessionstore.errors import UnknownRevision
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.names import is_valid_name

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

_AT = re.compile(r"(?P<name>.+)@(?P<seq>[0-9]+)")
_TILDE = re.compile(r"(?P<name>.+)~(?P<k>[0-9]*)")
_CKPT = re.compile(r"checkpoints/(?P<name>[^/]+)/(?P<k>[0-9]+)")
_HEX = re.compile(r"[0-9a-f]{6,64}")
_MAX_DIGITS = 18
"""Longest number a revision may carry: every seq, K and checkpoint fits (and `int()` of 4,300+
digits would raise instead of answering). Only ASCII digits count: `main@١` is no revision."""


def _short(rev: str) -> str:
    """`rev` quoted for a message, cut to 40 characters (a revision may be pasted garbage)."""
    return repr(rev[:40]) + ("..." if len(rev) > 40 else "")


def _number(text: str, rev: str) -> int:
    if len(text) > _MAX_DIGITS:
        raise UnknownRevision(
            f"revision {_short(rev)} has a {len(text)}-digit number: "
            f"sequence numbers, ~K and checkpoint numbers have at most {_MAX_DIGITS} digits"
        )
    return int(text)


def resolve(store: SessionStore, rev: str, *, within: str | None = None) -> Commit:
    """The commit `rev` names in `store`.

    A revision that names a session (`NAME`, `NAME@SEQ`, `NAME~K`, `checkpoints/NAME/K`) resolves
    inside that session, always, even when other sessions hold the same commit (a diverged pull's
    copy, a transcript imported twice): the `Commit` returned is that session's. A bare commit id is
    looked up `within` that session first when given (`Session.checkout`), then in every session; an
    id several sessions hold is refused with the `NAME@SEQ` of each, which names one.
    """
    if not isinstance(rev, str):
        raise UnknownRevision(f"a revision is a string like 'fix-auth@12', not {type(rev).__name__}")
    rev = rev.strip()
    if m := _CKPT.fullmatch(rev):
        return _checkpoint(store, m["name"], _number(m["k"], rev))
    if m := _AT.fullmatch(rev):
        seq = _number(m["seq"], rev)
        return _nth(store, m["name"], lambda head: seq, rev)
    if m := _TILDE.fullmatch(rev):
        back = _number(m["k"], rev) if m["k"] else 1
        return _nth(store, m["name"], lambda head: head.seq - back, rev)
    if is_valid_name(rev) and store.exists(rev):
        head = store.log(rev).head()
        if head is None:
            raise UnknownRevision(f"session {rev!r} has no commits yet")
        return head
    if _HEX.fullmatch(rev):
        return _by_prefix(store, rev, within)
    raise _unknown(store, rev)


def _session(store: SessionStore, name: str, rev: str) -> None:
    if not is_valid_name(name) or not store.exists(name):
        raise _unknown(store, name if is_valid_name(name) else rev)


def _nth(store: SessionStore, name: str, seq_of, rev: str) -> Commit:  # type: ignore[no-untyped-def]
    _session(store, name, rev)
    commits, _ = store.log(name).scan(since_reset=False)
    if not commits:
        raise UnknownRevision(f"session {name!r} has no commits yet")
    seq = seq_of(commits[-1])
    if not 1 <= seq <= commits[-1].seq:
        raise UnknownRevision(
            f"{rev!r} is outside session {name!r}, which has commits 1..{commits[-1].seq}: "
            f"see `session log {name}`"
        )
    return commits[seq - 1]


def _checkpoint(store: SessionStore, name: str, k: int) -> Commit:
    _session(store, name, f"checkpoints/{name}/{k}")
    try:
        ref = store.refs.read(name, k)
    except LookupError:
        have = [r.name for r in store.refs.list(name)]
        listed = ", ".join(have) if have else "none yet"
        raise UnknownRevision(f"no checkpoint checkpoints/{name}/{k} (checkpoints: {listed})") from None
    commit = store.log(name).read_at(ref.offset)
    if commit.id != ref.commit_id:
        raise UnknownRevision(f"checkpoint {ref.name} does not match its log line: run `session fsck`")
    return commit


def _by_prefix(store: SessionStore, prefix: str, within: str | None) -> Commit:
    def holding(names: list[str]) -> list[Commit]:
        found: list[Commit] = []
        for name in names:
            commits, _ = store.log(name).scan(since_reset=False)
            found.extend(c for c in commits if c.id.startswith(prefix))
        return found

    names = store.sessions()
    found = holding([within]) if within is not None and within in names else []
    found = found or holding(names)  # the session's own commits first, then every session's
    if len(found) == 1:
        return found[0]
    if not found:
        raise _unknown(store, prefix)
    where = ", ".join(f"{c.session}@{c.seq}" for c in found[:5]) + (", ..." if len(found) > 5 else "")
    if len({c.id for c in found}) == 1:  # one commit that several sessions hold: more digits cannot help
        raise UnknownRevision(
            f"commit {found[0].id[:12]} is in {len(found)} sessions ({where}): "
            f"name the one you mean, e.g. {found[0].session}@{found[0].seq}"
        )
    shown = ", ".join(f"{c.id[:12]} ({c.session}@{c.seq})" for c in found[:5])
    raise UnknownRevision(f"revision {prefix!r} is ambiguous: {shown}; give more digits or NAME@SEQ")


def _unknown(store: SessionStore, rev: str) -> UnknownRevision:
    if _HEX.fullmatch(rev):  # both readings failed: say so, not just "no session"
        return UnknownRevision(
            f"no commit id starts with {rev!r} and no session has that name: see `session log NAME`"
        )
    return UnknownRevision(str(store.unknown_session(rev)) if is_valid_name(rev) else (
        f"unknown revision {_short(rev)}: use NAME, NAME@SEQ, NAME~K, a commit id (≥ 6 hex digits) "
        "or checkpoints/NAME/K"
    ))  # fmt: skip
