"""porcelain/history/lookup.py: revisions as people type them, on top of the exact syntax of DESIGN §4."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.messages import tagged_turn
from sessionstore.errors import UnknownRevision
from sessionstore.plumbing.commits import make_line
from sessionstore.porcelain.history.lookup import require_session, resolve
from sessionstore.porcelain.store import SessionStore

UUID = "3fe1b6bc-dbd0-4320-b980-4f147befa187"


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    store = SessionStore.open(tmp_path / "store")
    for name in (UUID, "3fe1c000-aaaa", "Fix-Auth"):
        session = store.session(name)
        session.append(tagged_turn(0, 1), compact=False)
        session.append(tagged_turn(0, 2), compact=False)
    return store


def test_upper_case_hex_ids_resolve_as_git_reads_them(store: SessionStore) -> None:
    head = store.log("Fix-Auth").head()
    assert resolve(store, head.id[:10].upper()) == head


def test_a_session_uuid_prefix_names_the_imported_session(store: SessionStore) -> None:
    assert resolve(store, "3fe1b6bc") == store.log(UUID).head()
    assert resolve(store, "3FE1B6BC@1").seq == 1 and resolve(store, "3fe1b6bc~1").session == UUID
    assert require_session(store, "3fe1b6bc") == UUID
    with pytest.raises(UnknownRevision, match="starts several session names"):
        resolve(store, "3fe1")


def test_wrong_case_is_not_guessed_but_named(store: SessionStore) -> None:
    with pytest.raises(UnknownRevision, match=r"no session 'fix-auth'; did you mean 'Fix-Auth'\?"):
        resolve(store, "fix-auth")
    with pytest.raises(UnknownRevision, match="did you mean 'Fix-Auth'"):
        require_session(store, "fix-auth@1")  # not a name at all: the store's own error
    with pytest.raises(UnknownRevision, match="did you mean 'Fix-Auth'"):
        require_session(store, "fix-auth")


def test_a_conversation_id_names_its_session(store: SessionStore) -> None:
    """The head of a FileConversationStore session carries its record; the id finds it."""
    log = store.log("c-0123456789abcdef")
    line, _ = make_line(
        parent=None, kind="turn", blob=None, count=0, tokens=0, usage=None,
        extra={"conversation": {"conversation_id": "support chat #42", "scope": "user:7"}},
    )  # fmt: skip
    log.path.write_bytes(line)
    assert resolve(store, "support chat #42").session == "c-0123456789abcdef"
    assert require_session(store, "support chat #42") == "c-0123456789abcdef"
    with pytest.raises(UnknownRevision):
        resolve(store, "support chat #43")
