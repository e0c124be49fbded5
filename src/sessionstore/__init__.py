"""sessionstore: git-style, file-backed memory for pydantic-ai agents.

    from sessionstore import SessionStore
    store = SessionStore.open()              # .sessions/ at the git top level
    s = store.session("fix-auth")
    result = agent.run_sync("...", message_history=s.view())
    s.append(result.new_messages(), usage=result.usage)

Names are exported lazily so that `import sessionstore` (and the `session` CLI's read-only commands)
never import pydantic-ai.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    CompactionError,
    CorruptLogError,
    CorruptObjectError,
    ImmutableRefError,
    InvalidSessionName,
    LockTimeout,
    SessionStoreError,
    StaleSessionError,
    UnknownRevision,
)

if TYPE_CHECKING:
    from .accounting.settings import Settings
    from .integrations.conversation_store import FileConversationStore
    from .integrations.runs import RunReport, SessionCapability, run_turn, run_turn_async
    from .integrations.session_tools import SessionToolset
    from .plumbing.commits import Commit
    from .porcelain.session.session import Session
    from .porcelain.store import SessionStore

_LAZY = {
    "SessionStore": "sessionstore.porcelain.store",
    "Session": "sessionstore.porcelain.session.session",
    "Commit": "sessionstore.plumbing.commits",
    "Settings": "sessionstore.accounting.settings",
    "FileConversationStore": "sessionstore.integrations.conversation_store",
    "SessionCapability": "sessionstore.integrations.runs",
    "RunReport": "sessionstore.integrations.runs",
    "run_turn": "sessionstore.integrations.runs",
    "run_turn_async": "sessionstore.integrations.runs",
    "SessionToolset": "sessionstore.integrations.session_tools",
}

__all__ = [
    "Commit",
    "CompactionError",
    "CorruptLogError",
    "CorruptObjectError",
    "FileConversationStore",
    "ImmutableRefError",
    "InvalidSessionName",
    "LockTimeout",
    "RunReport",
    "Session",
    "SessionCapability",
    "SessionStore",
    "SessionStoreError",
    "SessionToolset",
    "Settings",
    "StaleSessionError",
    "UnknownRevision",
    "run_turn",
    "run_turn_async",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
