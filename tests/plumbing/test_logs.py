"""Commit logs: canonical hash-chained lines, torn tails ignored, mid-file damage named, stale heads."""

from __future__ import annotations

import hashlib
from collections.abc import Collection

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionstore.errors import CorruptLogError, StaleSessionError
from sessionstore.plumbing import logs
from sessionstore.plumbing.commits import Commit, canonical, make_line
from sessionstore.plumbing.logs import Log


def write(log: Log, n: int, *, reset_at: int | None = None, resets: Collection[int] = ()) -> list[Commit]:
    head = log.head()
    out = []
    for i in range(n):
        reset = i == reset_at or i in resets
        extra = {"blobs": ["c" * 64], "sizes": [1]} if reset else {"sizes": [1]}
        kind = "checkout" if "blobs" in extra else "turn"
        line, body = make_line(
            parent=head, kind=kind, blob=None if "blobs" in extra else f"{i:064x}", count=1, tokens=1,
            usage=None, extra=extra,
        )  # fmt: skip
        head = log.append(line, body, head)
        out.append(head)
    return out


def test_ids_hash_the_canonical_body_and_chain(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 3)
    lines = log.path.read_bytes().splitlines()
    for commit, line in zip(commits, lines, strict=True):
        body = orjson.loads(line)
        cid = body.pop("id")
        assert cid == commit.id == hashlib.sha256(canonical(body)).hexdigest()
        assert line == canonical({**body, "id": cid})  # sorted keys, no spaces
    assert [c.parent for c in commits] == [None, commits[0].id, commits[1].id]
    assert [c.seq for c in commits] == [1, 2, 3]
    scanned, valid_end = log.scan(since_reset=False)
    assert scanned == commits and valid_end == log.path.stat().st_size
    assert log.head() == commits[-1]
    assert all(log.read_at(c.offset) == c for c in commits)
    assert commits[1].to_json()["id"] == commits[1].id and commits[1].to_json()["session"] == "s"


def test_scan_since_reset_stops_at_the_newest_reset_point(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 6, reset_at=3)
    tail, _ = log.scan(since_reset=True)
    assert tail == commits[3:] and tail[0].is_reset
    upto, _ = log.scan(since_reset=False, end=commits[1].end)
    assert upto == commits[:2]


def test_scan_since_reset_reads_back_from_the_end_only(tmp_path, monkeypatch) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 400, reset_at=390)  # ~100 kB: more than the first read window
    size = log.path.stat().st_size
    assert size > 1 << 16
    with open(log.path, "ab") as f:
        f.write(b'{"torn')
    monkeypatch.setattr(Log, "_bytes", lambda self: pytest.fail("read the whole log"))
    assert log.scan(since_reset=True) == (commits[390:], size)


@pytest.mark.parametrize("reset_at", [None, 0, 5, 395])
def test_scan_since_reset_from_the_end_agrees_with_the_whole_file(tmp_path, reset_at: int | None) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 400, reset_at=reset_at)
    whole = log.path.read_bytes()
    assert log.scan(since_reset=True) == log.scan(since_reset=True, data=whole)
    assert log.scan(since_reset=True)[0] == commits[reset_at or 0 :]


def test_damage_after_the_reset_point_of_a_long_log_is_named_with_its_line(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, 400, reset_at=390)
    lines = log.path.read_bytes().splitlines(keepends=True)
    lines[395] = lines[395].replace(b'"count":1', b'"count":7')
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match=r"damaged at line 396\b"):
        log.scan(since_reset=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    resets=st.lists(st.booleans(), min_size=1, max_size=40),
    window=st.sampled_from([64, 200, 1000]),
    torn=st.sampled_from([b"", b"{", b'{"blob":"half a line']),
)
def test_scan_since_reset_whatever_the_read_window(tmp_path_factory, resets, window, torn) -> None:
    """For any log (resets anywhere, a torn tail or not) and any first read window, reading back from
    the end gives what scanning the whole file gives."""
    log = Log(tmp_path_factory.mktemp("log"), "s")
    write(log, len(resets), resets={i for i, r in enumerate(resets) if r})
    with open(log.path, "ab") as f:
        f.write(torn)
    whole = log.scan(since_reset=True, data=log.path.read_bytes())
    saved = logs._HEAD_READ
    logs._HEAD_READ = window
    try:
        assert log.scan(since_reset=True) == whole
    finally:
        logs._HEAD_READ = saved


def test_torn_tail_is_ignored_by_readers(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 2)
    size = log.path.stat().st_size
    with open(log.path, "ab") as f:
        f.write(b'{"blob":"half a li')
    scanned, valid_end = log.scan(since_reset=False)
    assert scanned == commits and valid_end == size
    assert log.head() == commits[-1]


def test_the_next_append_cuts_a_torn_tail(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 2)
    clean = log.path.read_bytes()
    with open(log.path, "ab") as f:
        f.write(b'{"torn')
    more = write(log, 1)
    assert log.path.read_bytes().startswith(clean) and more[0].offset == len(clean)
    assert log.scan(since_reset=False)[0] == [*commits, *more]


@pytest.mark.parametrize("line_index", [0, 1, 2])
def test_damage_before_the_last_line_is_named(tmp_path, line_index: int) -> None:
    log = Log(tmp_path, "sess")
    write(log, 4)
    lines = log.path.read_bytes().splitlines(keepends=True)
    lines[line_index] = lines[line_index].replace(b'"count":1', b'"count":7')
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match=rf"session 'sess' is damaged at line {line_index + 1}\b"):
        log.scan(since_reset=False)


def test_a_removed_line_breaks_the_chain(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, 3)
    lines = log.path.read_bytes().splitlines(keepends=True)
    log.path.write_bytes(lines[0] + lines[2])
    with pytest.raises(CorruptLogError, match="does not follow"):
        log.scan(since_reset=False)
    log.path.write_bytes(lines[1] + lines[2])
    with pytest.raises(CorruptLogError, match="first commit has a parent"):
        log.scan(since_reset=False)


def test_append_refuses_a_stale_head(tmp_path) -> None:
    log = Log(tmp_path, "s")
    first = write(log, 1)[0]
    write(log, 1)  # someone else moved on
    line, body = make_line(parent=first, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
    before = log.path.read_bytes()
    with pytest.raises(StaleSessionError, match="reload"):
        log.append(line, body, first)
    with pytest.raises(StaleSessionError):
        log.append(line, body, None)  # "no commits yet" is stale too
    assert log.path.read_bytes() == before


def test_append_refuses_a_head_rewritten_under_it(tmp_path) -> None:
    other = Log(tmp_path / "x", "s")
    (tmp_path / "x").mkdir()
    forged = write(other, 1)[0]
    log = Log(tmp_path, "s")
    write(log, 1)
    line, body = make_line(parent=forged, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
    with pytest.raises(StaleSessionError):
        log.append(line, body, forged)  # same length, different line


def test_read_at_a_wrong_offset_and_repair_tail(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, 2)
    with pytest.raises(CorruptLogError, match="no commit at byte 3"):
        log.read_at(3)
    assert not log.repair_tail()
    with open(log.path, "ab") as f:
        f.write(b"xx")
    assert log.repair_tail() and log.path.read_bytes().endswith(b"}\n")


def test_head_of_a_long_log_reads_back_from_the_end(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 400)  # ~100 kB: more than head()'s read window
    assert log.path.stat().st_size > 1 << 16
    assert log.head() == commits[-1]
    with open(log.path, "ab") as f:
        f.write(b'{"torn')
    assert log.head() == commits[-1]
    lines = log.path.read_bytes().splitlines(keepends=True)
    lines[-2] = lines[-2].replace(b'"count":1', b'"count":5')  # damage below the torn tail
    log.path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptLogError, match="damaged at line 400"):
        log.head()


def test_head_when_the_last_line_is_longer_than_the_window(tmp_path) -> None:
    log = Log(tmp_path, "s")
    first = write(log, 1)[0]
    line, body = make_line(
        parent=first, kind="turn", blob=None, count=1, tokens=1, usage=None, extra={"sizes": [7] * 40_000}
    )
    big = log.append(line, body, first)
    assert big.size > 1 << 16 and log.head() == big
    assert Log(tmp_path, "none").head() is None


# -- only a last line without its newline is a torn tail (DESIGN §2) -----------------------------------


def _flip(log: Log, at: int) -> bytes:
    data = bytearray(log.path.read_bytes())
    data[at] ^= 0x20
    log.path.write_bytes(bytes(data))
    return bytes(data)


@pytest.mark.parametrize(
    ("where", "line"),
    [("inside the last line", 4), ("the newline ending line 3", 3), ("the last newline", 4)],
)
def test_damage_at_the_end_is_named_never_taken_for_a_torn_tail(tmp_path, where: str, line: int) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 4)
    at = {
        "inside the last line": commits[3].offset + 20,
        "the newline ending line 3": commits[2].end - 1,
        "the last newline": commits[3].end - 1,
    }[where]
    damaged = _flip(log, at)
    for read in (lambda: log.scan(since_reset=False), log.head, lambda: log.scan(since_reset=True)):
        with pytest.raises(CorruptLogError, match=rf"damaged at line {line}\b"):
            read()
    with pytest.raises(CorruptLogError):
        log.repair_tail()
    line_bytes, body = make_line(
        parent=commits[3], kind="turn", blob=None, count=0, tokens=0, usage=None, extra={}
    )
    with pytest.raises(CorruptLogError):
        log.append(line_bytes, body, commits[3])
    assert log.path.read_bytes() == damaged  # nothing cut, nothing appended


@pytest.mark.parametrize("flips", range(12))
def test_every_flipped_byte_of_the_last_line_is_found(tmp_path, flips: int) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 2)
    span = commits[1].size
    _flip(log, commits[1].offset + (flips * 997) % span)  # spread over the line, its newline included
    with pytest.raises(CorruptLogError):
        log.head()
    with pytest.raises(CorruptLogError):
        log.scan(since_reset=False)


def test_repair_tail_cuts_only_a_line_without_its_newline_and_says_how_much(tmp_path) -> None:
    log = Log(tmp_path, "s")
    write(log, 2)
    clean = log.path.read_bytes()
    with open(log.path, "ab") as f:
        f.write(b'{"half a')
    assert log.torn_tail() == b'{"half a'
    assert log.repair_tail() == 8 and log.path.read_bytes() == clean
    assert log.repair_tail() == 0 and log.torn_tail() == b""


CONFLICT = b"<<<<<<< HEAD\n%s=======\n%s>>>>>>> theirs\n"


def test_git_conflict_markers_are_a_merge_conflict_for_every_reader(tmp_path) -> None:
    from sessionstore.plumbing.logs import MergeConflictError

    log = Log(tmp_path, "s")
    base = write(log, 2)
    ours = write(log, 1)
    data = log.path.read_bytes()
    theirs_line, _ = make_line(
        parent=base[1], kind="turn", blob=None, count=1, tokens=1, usage=None, extra={}
    )
    cut = base[1].end
    conflicted = data[:cut] + CONFLICT % (data[cut:], theirs_line)
    for tail in (b"", b">>>>>>> theirs"):  # also with the last marker's newline missing
        log.path.write_bytes(conflicted if not tail else conflicted[: -len(b">>>>>>> theirs\n")] + tail)
        for read in (lambda: log.scan(since_reset=False), log.head):
            with pytest.raises(MergeConflictError, match=r"git merge conflict .*fsck --repair"):
                read()
        line, body = make_line(
            parent=ours[0], kind="turn", blob=None, count=0, tokens=0, usage=None, extra={}
        )
        before = log.path.read_bytes()
        with pytest.raises(MergeConflictError):
            log.append(line, body, ours[0])
        with pytest.raises(MergeConflictError):
            log.repair_tail()
        assert log.path.read_bytes() == before  # the marker is never cut as a torn tail


def test_read_at_past_the_end_says_commits_are_missing(tmp_path) -> None:
    log = Log(tmp_path, "s")
    commits = write(log, 3)
    log.path.write_bytes(log.path.read_bytes()[: commits[1].end])  # truncated mid-log, on a line boundary
    with pytest.raises(CorruptLogError, match="acknowledged commits are missing"):
        log.read_at(commits[2].offset)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=0), mask=st.sampled_from([0x01, 0x20, 0x80]))
def test_the_writer_that_appended_the_head_still_refuses_it_damaged(
    tmp_path_factory, at: int, mask: int
) -> None:
    """The next append compares the head line with the bytes this object wrote; any byte changed in
    it (or the newline before it) still refuses the append and writes nothing."""
    log = Log(tmp_path_factory.mktemp("log"), "s")
    commits = write(log, 3)
    start = commits[1].end - 1  # the newline ending the line before the head
    data = bytearray(log.path.read_bytes())
    data[start + at % (commits[2].end - start)] ^= mask
    log.path.write_bytes(bytes(data))
    line, body = make_line(parent=commits[2], kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
    with pytest.raises((CorruptLogError, StaleSessionError)):
        log.append(line, body, commits[2])
    assert log.path.read_bytes() == bytes(data)


def test_the_writer_that_appended_the_head_refuses_another_line_in_its_place(tmp_path) -> None:
    other = Log(tmp_path / "x", "s")
    (tmp_path / "x").mkdir()
    forged = write(other, 1)[0]
    log = Log(tmp_path, "s")
    mine = write(log, 1)[0]
    assert forged.size == mine.size and forged.id != mine.id
    log.path.write_bytes(other.path.read_bytes())  # same length, another valid line
    line, body = make_line(parent=mine, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
    with pytest.raises(StaleSessionError):
        log.append(line, body, mine)


def test_the_next_append_does_not_parse_the_line_this_object_wrote(tmp_path, monkeypatch) -> None:
    """A conversation's head line carries its whole record: re-verifying it on every save was
    ~0.3 ms. The bytes are compared instead; another object's line is still parsed."""
    from sessionstore.plumbing import logs

    log = Log(tmp_path, "s")
    head = write(log, 2)[-1]
    parsed: list[bytes] = []
    real = logs.parse_line
    monkeypatch.setattr(logs, "parse_line", lambda line, *a: parsed.append(line) or real(line, *a))

    def extend(writer: Log, parent: Commit) -> Commit:
        line, body = make_line(parent=parent, kind="turn", blob=None, count=0, tokens=0, usage=None, extra={})
        return writer.append(line, body, parent)

    head = extend(log, head)
    assert parsed == []
    extend(Log(tmp_path, "s"), head)  # a new object has not written it: parsed once
    assert len(parsed) == 1
