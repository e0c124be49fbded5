"""The blobs a session's log reached, each with the commit that first stored it: what `session search`
and `Session.recall` read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout

__all__ = ["blob_origins"]


def blob_origins(store: StoreLayout, name: str, *, all_history: bool) -> list[tuple[str, Any]]:
    """(blob id, commit that first stored it) for session `name`'s blobs, oldest first: those of its
    current state, or with `all_history` every blob any commit of its log reached (each once: what
    compaction replaced too)."""
    commits, _ = store.log(name).scan(since_reset=False)
    if not commits:
        return []
    first: dict[str, Any] = {}
    for commit in commits:
        for blob in ([commit.blob] if commit.blob else []) + commit.blobs:
            first.setdefault(blob, commit)
    if all_history:
        return list(first.items())
    from sessionstore.porcelain.session.writer import state_of  # only for the current state

    blobs, _ = state_of(commits)  # the scan above read the whole log: no second read of it
    return [(blob, first[blob]) for blob in dict.fromkeys(blobs)]
