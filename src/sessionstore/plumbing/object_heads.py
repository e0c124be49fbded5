"""Every session's head on object storage in O(sessions / 1000) requests: what `session list` reads.

A bucket lists 1,000 keys per request and returns no contents, so reading each session's head would
cost a request per session. Instead: one listing of `logs/` (which sessions exist: the truth), one of
`heads/` (each head hint's size and time), one of `refs/checkpoints/` (checkpoint counts), and one
read of `index/heads`, this module's cache of the hints it read last time, keyed by their size and
time. Only the hints that changed since are read (concurrently), each verified like any commit line,
and the cache is written back when something changed. A session with commits and no hint yet (its
first writer was killed before the hint landed) has its head read from its commits.

The listing is as fresh as the hints: a hint lags its session by the appends still in flight (see
`object_logs`). Nothing that writes reads heads from here.
"""

from __future__ import annotations

from collections import Counter

import orjson

from .bucket import Bucket
from .commits import Commit, parse_line
from .names import is_valid_name
from .object_logs import ObjectLog, positioned

INDEX_KEY = "index/heads"
"""The cache of hints: `{session: [size, time, line]}` as JSON (derived, rewritten whole)."""


def read_heads(bucket: Bucket) -> dict[str, tuple[Commit | None, int]]:
    """(head, checkpoint count) of every session, by name."""
    sessions = sorted(n for n in bucket.folders("logs/") if is_valid_name(n))
    hints = {m.key: m for m in bucket.list("heads/")}
    checkpoints = Counter(
        m.key.split("/", 1)[0] for m in bucket.list("refs/checkpoints/") if m.key.rsplit("/", 1)[-1].isdigit()
    )
    cache = _load_index(bucket)
    lines: dict[str, bytes] = {}
    stale = []
    for name in sessions:
        meta, cached = hints.get(name), cache.get(name)
        if meta is not None and cached is not None and cached[:2] == [meta.size, meta.time]:
            lines[name] = cached[2].encode()
        elif meta is not None:
            stale.append(name)
    for name, data in zip(stale, bucket.get_many([f"heads/{n}" for n in stale]), strict=True):
        if data is not None:
            lines[name] = data
    out: dict[str, tuple[Commit | None, int]] = {}
    for name in sessions:
        line = lines.get(name)
        head = parse_line(line.rstrip(b"\n"), name, 0) if line else None
        if head is None:  # no hint yet, or a damaged one: the commits say
            head = ObjectLog(bucket, name).head()
            lines.pop(name, None)
        out[name] = (head if head is None else positioned(head), checkpoints[name])
    fresh = {n: [hints[n].size, hints[n].time, lines[n].decode()] for n in lines if n in hints}
    if fresh != cache:
        bucket.put(INDEX_KEY, orjson.dumps(fresh))
    return out


def _load_index(bucket: Bucket) -> dict[str, list]:
    data = bucket.get(INDEX_KEY)
    try:
        index = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return {}  # derived: a damaged cache is rebuilt
    return index if isinstance(index, dict) else {}
