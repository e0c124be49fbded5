"""`logs.tail`: the newest commits, read back from the end only (what `session log -n N` uses)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sessionstore.errors import CorruptLogError, SessionStoreError
from sessionstore.plumbing import logs
from sessionstore.plumbing.commits import Commit, make_line
from sessionstore.plumbing.logs import Log, tail


def write(log: Log, widths: list[int]) -> list[Commit]:
    """One commit per width; a commit's line grows with its `sizes` list (lines of varied length)."""
    head = log.head()
    out = []
    for width in widths:
        extra = {"sizes": [1] * width}
        line, body = make_line(
            parent=head, kind="turn", blob=None, count=1, tokens=width, usage=None, extra=extra
        )
        head = log.append(line, body, head)
        out.append(head)
    return out


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    widths=st.lists(st.integers(0, 120), min_size=0, max_size=25),
    chunk=st.sampled_from([64, 200, 1 << 16]),
    torn=st.booleans(),
    data=st.data(),
)
def test_tail_is_the_end_of_the_full_scan(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    widths: list[int],
    chunk: int,
    torn: bool,
    data: st.DataObject,
) -> None:
    monkeypatch.setattr(logs, "_TAIL_CHUNK", chunk)  # small steps: lines straddle every boundary
    log = Log(tmp_path_factory.mktemp("logs"), "s")
    commits = write(log, widths)
    if torn:
        with open(log.path, "ab") as f:
            f.write(b'{"parent":"torn')
    count = data.draw(st.integers(0, len(commits) + 2))
    got = tail(log, count)
    assert got == (commits[-count:] if count else [])
    assert [c.offset for c in got] == [c.offset for c in commits[len(commits) - len(got) :]]


def test_tail_reads_only_the_end(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, [40] * 300)
    data = bytearray(log.path.read_bytes())
    data[10] ^= 0x01  # damage in the first line: a whole-log reader would refuse the log
    log.path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError):
        log.scan(since_reset=False)
    assert tail(log, 5) == commits[-5:]  # never read that far back


def test_damage_inside_the_tail_is_named(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, [3] * 20)
    lines = log.path.read_bytes().splitlines(keepends=True)
    lines[-2] = lines[-2].replace(b'"tokens":3', b'"tokens":4')
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match="damaged at line 19"):
        tail(log, 5)
    # a newline-terminated last line that does not verify is damage, not a torn tail
    lines[-2] = lines[-2].replace(b'"tokens":4', b'"tokens":3')
    lines[-1] = lines[-1].replace(b'"tokens":3', b'"tokens":9')
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match="damaged at line 20"):
        tail(log, 1)


def test_a_missing_line_in_the_tail_breaks_the_chain(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, [3] * 10)
    lines = log.path.read_bytes().splitlines(keepends=True)
    del lines[-3]
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match="does not follow the line before it"):
        tail(log, 4)


def test_no_log_and_an_empty_log(tmp_path) -> None:
    assert tail(Log(tmp_path, "none"), 3) == []
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert tail(Log(tmp_path, "empty"), 3) == []
    os.symlink(tmp_path / "empty.jsonl", tmp_path / "link.jsonl")
    with pytest.raises(SessionStoreError, match=r"link.jsonl is not a regular file"):
        tail(Log(tmp_path, "link"), 3)  # never followed through a symlink
