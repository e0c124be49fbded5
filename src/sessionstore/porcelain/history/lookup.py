"""Revisions as people type them: the strict syntax of DESIGN §4 first, then the forgiving readings.

`revisions.resolve` (`store.resolve`) is exact. What the CLI adds on top, in this order, only when
the exact reading fails:

1. upper-case hex (`9F2C1E4`, as pasted from a tool that shouts): read as the lower-case id, as git does;
2. a unique prefix of a session name (`3fe1b6bc` for the session imported from Claude Code's
   `3fe1b6bc-dbd0-...` transcript: imported sessions are named after the transcript's session id);
3. a FileConversationStore conversation id (its session may be named `c-<hash>`);

each also before `@SEQ` / `~K`. A name that differs only in case is not guessed (names are
case-sensitive): the error says which session was meant. Reading only log heads, never a blob.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sessionstore.errors import UnknownRevision
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.names import is_valid_name
from sessionstore.porcelain.session import heads, revisions

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

MIN_PREFIX = 4
"""Shortest session-name prefix taken as meaning that session."""
_SUFFIX = re.compile(r"(?P<name>.+?)(?P<suffix>@\d+|~\d*)?")
_UPPER_HEX = re.compile(r"[0-9A-Fa-f]{6,64}")


def conversation_of(commit: Commit | None) -> dict | None:
    """The FileConversationStore record a head commit carries (`conversation_id`, `scope`, ...), if any."""
    record = commit.extra.get("conversation") if commit is not None else None
    return record if isinstance(record, dict) else None


def conversation_json(commit: Commit | None) -> dict[str, Any] | None:
    """`{"id", "scope"}` of the conversation a head commit carries, for `--json` output; else None."""
    record = conversation_of(commit)
    return {"id": record.get("conversation_id"), "scope": record.get("scope")} if record else None


def session_named(store: SessionStore, text: str) -> str | None:
    """The session `text` means: its exact name, a unique name prefix, or a conversation id.

    `UnknownRevision` when a prefix fits several sessions (they are listed); None when nothing fits.
    """
    if is_valid_name(text) and store.exists(text):
        return text
    if _UPPER_HEX.fullmatch(text) and text != text.lower():  # a uuid's start, pasted upper-case
        return session_named(store, text.lower())
    names = store.sessions()
    if len(text) >= MIN_PREFIX:
        fits = [n for n in names if n.startswith(text)]
        if len(fits) == 1:
            return fits[0]
        if len(fits) > 1:
            shown = ", ".join(repr(n) for n in fits[:5])
            raise UnknownRevision(f"{text!r} starts several session names ({shown}): give more of it")
    for info in heads.infos(store):
        record = conversation_of(info.head)
        if record is not None and record.get("conversation_id") == text:
            return info.name
    return None


def resolve(store: SessionStore, rev: str) -> Commit:
    """The commit `rev` names: `store.resolve` first, then the readings in the module docstring."""
    try:
        return revisions.resolve(store, rev)
    except UnknownRevision as err:
        strict = err
    rev = rev.strip()
    if _UPPER_HEX.fullmatch(rev) and rev != rev.lower():
        try:
            return revisions.resolve(store, rev.lower())
        except UnknownRevision:
            pass
    m = _SUFFIX.fullmatch(rev)
    if m is not None and not rev.startswith("checkpoints/"):
        name = session_named(store, m["name"])
        if name is not None and name != m["name"]:
            return revisions.resolve(store, name + (m["suffix"] or ""))
        if name is None:
            raise _with_case_hint(store, m["name"], strict)
    raise strict


def require_session(store: SessionStore, text: str) -> str:
    """The session name `text` means (see `session_named`), else the store's own unknown-name error."""
    name = session_named(store, text)
    if name is not None:
        return name
    if is_valid_name(text):
        raise _with_case_hint(store, text, store.unknown_session(text))
    try:
        revisions.resolve(store, text)  # a revision, not a name: its own error (with the revision syntax)
    except UnknownRevision as err:
        raise _with_case_hint(store, text, err) from None
    raise UnknownRevision(f"{text!r} is a revision, not a session name: give NAME (see `session list`)")


def _with_case_hint(store: SessionStore, text: str, err: UnknownRevision) -> UnknownRevision:
    same = [n for n in store.sessions() if n.lower() == text.lower() and n != text]
    if not same:
        return err
    return UnknownRevision(f"no session {text!r}; did you mean {same[0]!r}? (names are case-sensitive)")
