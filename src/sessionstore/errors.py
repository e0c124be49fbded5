"""Every error sessionstore raises on purpose.

All derive from `SessionStoreError`, so callers can catch one type; each message is one line that
names the thing and what to do, because the CLI prints it as-is (no tracebacks for user mistakes).
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base of every deliberate sessionstore error; `str(err)` is a one-line, user-facing message."""


class InvalidSessionName(SessionStoreError, ValueError):
    """A session name outside `[A-Za-z0-9][A-Za-z0-9._-]{0,127}` (or containing `..`)."""


class UnknownRevision(SessionStoreError, LookupError):
    """A revision that names no commit, or more than one (the candidates are listed)."""


class StaleSessionError(SessionStoreError):
    """The on-disk head moved since this `Session` loaded it: reload (or retry) before appending."""


class LockTimeout(SessionStoreError, TimeoutError):
    """A session (or the store, for gc) stayed locked by another writer past `lock_timeout_s`."""


class CorruptObjectError(SessionStoreError):
    """A blob whose bytes no longer hash to its name, or a missing blob a log points at."""


class CorruptLogError(CorruptObjectError):
    """Damage inside a session log (not a torn last line, which is repaired, never parsed)."""


class StorePathError(SessionStoreError):
    """A symlink, or a non-directory where a directory belongs, below the store root: nothing is read
    or written through it (DESIGN §2). The message names the entry."""


class ImmutableRefError(SessionStoreError):
    """An attempt to create a checkpoint ref that already exists: refs are write-once."""


class NotAStoreError(SessionStoreError):
    """A path that holds no sessionstore (no VERSION file), or one of an unknown format version."""


class SettingsError(SessionStoreError, ValueError):
    """An invalid setting: the message names the key, the value and what is allowed."""


class ImportFormatError(SessionStoreError, ValueError):
    """A file `session import` cannot read: the message names the file, the line and the format."""


class MemoryFileError(SessionStoreError):
    """A MEMORY.md that cannot be read or rewritten safely (binary, a directory, read-only)."""


class CompactionError(SessionStoreError):
    """A compaction that could not produce a valid result; nothing was persisted."""


class NothingToCompact(CompactionError):
    """Tier 2 has nothing to summarize: the history is one user turn with no tool step, all of which stays
    verbatim. No failure: only tier 3 can shorten it (and, inside a run, does, on what is sent)."""


class SessionBusy(LockTimeout):
    """A manual operation found the session locked by a running turn; nothing changed."""
