"""Several writers on one session: processes and threads, each retrying on `StaleSessionError`.

Every turn's messages name their writer and index, so after the race the test can prove the exact
number of turns, a valid hash chain (fsck), and that no turn's messages were interleaved with another's.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest

from helpers.messages import tag_of, tagged_turn
from helpers.procs import spawn
from sessionstore.errors import StaleSessionError
from sessionstore.plumbing import codec
from sessionstore.porcelain.store import SessionStore

WRITERS = 4
TURNS = 12


def assert_all_turns_whole(store: SessionStore, name: str, writers: int, turns: int) -> None:
    session = store.session(name)
    commits = session.log()[::-1]
    assert len(commits) == writers * turns
    assert [c.seq for c in commits] == list(range(1, writers * turns + 1))
    assert store.fsck().ok
    seen: dict[int, list[int]] = defaultdict(list)
    history = session.history
    pos = 0
    for c in commits:  # each commit's blob is exactly one writer's turn, whole and in its order
        blob = codec.decode([store.objects.read(c.blob)])
        tags = [tag_of(m) for m in blob]
        w, i, _ = tags[0]
        assert tags == [(w, i, j) for j in range(1 + i % 3)]
        assert history[pos : pos + len(blob)] == blob
        pos += len(blob)
        seen[w].append(i)
    assert pos == len(history) == session.persisted_count
    assert dict(seen) == {w: list(range(turns)) for w in range(writers)}


@pytest.mark.slow
def test_processes_appending_to_one_session(store: SessionStore) -> None:
    children = [spawn("appender.py", store.root, "race", w, TURNS, "retry") for w in range(WRITERS)]
    outputs = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0] * WRITERS
    acked = sorted(int(seq) for out in outputs for seq in out.split()[1:])
    assert acked == list(range(1, WRITERS * TURNS + 1))  # every seq acknowledged exactly once
    assert_all_turns_whole(store, "race", WRITERS, TURNS)


def test_threads_appending_to_one_session(store: SessionStore) -> None:
    stale = [0] * WRITERS
    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def writer(w: int) -> None:
        try:
            session = store.session("race")  # one Session object per thread, as per process
            start.wait()
            i = 0
            while i < TURNS:
                try:
                    session.append(tagged_turn(w, i, size=1 + i % 3))
                except StaleSessionError:
                    stale[w] += 1
                    session.reload()
                    continue
                i += 1
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert sum(stale) > 0  # the race really happened: writers did collide and retry
    assert_all_turns_whole(store, "race", WRITERS, TURNS)
