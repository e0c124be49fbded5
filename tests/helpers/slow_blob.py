"""A blob sync made slow (or failing), with what the writer does meanwhile recorded: the order of a
commit's steps made visible (tests/porcelain/session/test_writer.py, tests/integrations/
test_conversation_store.py)."""

from __future__ import annotations

import pytest


def slow_blob_sync(monkeypatch: pytest.MonkeyPatch, events: list[str], *, fail: bool = False) -> None:
    """Make every blob's first sync slow (and record when it ends), so the order of what the writer
    does meanwhile is visible; `fail`: the sync raises as a full disk would."""
    import time

    from sessionstore.plumbing import fsutil
    from sessionstore.plumbing.logs import Log
    from sessionstore.porcelain.session import writer

    sync, extend, make_line = fsutil.StagedTemp.sync, Log.extend, writer.make_line

    def slow_sync(self: fsutil.StagedTemp) -> object:
        time.sleep(0.2)
        if fail:
            raise OSError(28, "No space left on device")
        path = sync(self)
        events.append("blob synced")
        return path

    def built(**kw: object) -> object:
        events.append("line built")
        return make_line(**kw)

    def appended(self: Log, *args: object, **kw: object) -> object:
        events.append("line appended")
        return extend(self, *args, **kw)

    monkeypatch.setattr(fsutil.StagedTemp, "sync", slow_sync)
    monkeypatch.setattr(writer, "make_line", built)
    monkeypatch.setattr(Log, "extend", appended)
