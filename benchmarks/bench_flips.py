"""Byte flips in every kind of store file, counted by what the store makes of them (issue 16's report).

A small real store (two sessions, turns, a compaction and its checkpoint ref, a turn after it) is
built once. Then, one case at a time, a fresh copy gets one byte of one file XORed with a mask, and
the copy is opened, read and fsck'ed as a user would:

- **named**: `fsck` reports a problem that names the file (the session of a log, the ref's path, the
  object's id, the store format of VERSION), or opening or reading raises a `SessionStoreError`
  that does;
- **MISNAMED**: something is reported, but not the damaged file;
- **no effect**: nothing is reported and every session replays exactly as before (e.g. a flipped
  byte that only a later write would read, or VERSION's newline turned into other whitespace);
- **SILENT**: nothing is reported but a session replays differently or is gone: the case that must
  never happen;
- **CRASH**: anything else raised (a traceback for a damaged file).

Run alone (`python benchmarks/bench_flips.py`) it prints the counts; `bench_perf.py` puts them in
RESULTS.md's performance table.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing import codec
from sessionstore.porcelain.store import SessionStore

MASKS = (0x01, 0x20, 0x80)
"""One low bit (bit rot), the ASCII case bit (a letter stays a letter), the high bit (invalid UTF-8)."""
BLOB_POSITIONS = 48
CACHE_POSITIONS = 150
OUTCOMES = ("named", "no effect", "MISNAMED", "SILENT", "CRASH")


def build(root: Path) -> SessionStore:
    store = SessionStore.open(root)
    a = store.session("a")
    for i in range(3):
        a.append(
            [
                ModelRequest(parts=[UserPromptPart(f"step {i}: keep the budget under $500")]),
                ModelResponse(parts=[TextPart(f"done with step {i}; Postgres 15 stays")]),
            ],
            compact=False,
        )
    with store.lock("a"):
        summary = ModelRequest(parts=[UserPromptPart("summary: budget $500, Postgres 15")])
        a.commit_checkpoint([summary], tier=2)
    a.append([ModelRequest(parts=[UserPromptPart("and the last step")])], compact=False)
    store.session("b").append([ModelRequest(parts=[UserPromptPart("another session")])], compact=False)
    time.sleep(2.1)  # past the heads cache's racily-clean window, so the cache keeps its entries
    store.infos()  # writes the heads cache (index/sessions.json), as `session list` does
    return store


def state(root: Path) -> dict[str, bytes]:
    """Every session's replayed history, as stored bytes, plus its head, and what `session list`
    shows (what a user gets back)."""
    store = SessionStore.open(root, create=False, warm=False)
    listed = [(i.name, i.head and i.head.id, i.count, i.tokens, i.checkpoints) for i in store.infos()]
    out = {"": repr(listed).encode()}  # what `session list` shows, through the heads cache
    for name in store.sessions():
        session = store.session(name)
        out[name] = session.head_id.encode() + b"\n" + codec.encode_unchecked(session.history)
    return out


def files(root: Path) -> Iterator[tuple[str, Path]]:
    yield "VERSION", root / "VERSION"
    for path in sorted((root / "logs").glob("*.jsonl")):
        yield "log lines", path
    for path in sorted((root / "refs").rglob("*")):
        if path.is_file():
            yield "checkpoint refs", path
    for path in sorted((root / "objects").rglob("*")):
        if path.is_file():
            yield "blobs", path
    for path in sorted((root / "index").rglob("*")):
        if path.is_file():
            yield "derived caches", path


def token(kind: str, rel: Path) -> str:
    """What a report about this file must say for the file to count as named."""
    if kind == "VERSION":
        return "store format"
    if kind == "log lines":
        return f"session {rel.stem!r}"
    if kind == "derived caches":
        return rel.name
    if kind == "checkpoint refs":
        return "/".join(rel.parts[-3:])  # checkpoints/<session>/<k>
    return rel.parts[-2] + rel.parts[-1][:10]  # the object id's first 12 hex digits


def classify(root: Path, expected: dict[str, bytes], name: str, *, derived: bool) -> str:
    """The outcome of one flipped copy (see the module docstring). A derived cache must never change
    what is read, named or not: reading it differently is SILENT even when fsck reports the cache."""
    try:
        store = SessionStore.open(root, create=False, warm=False)
        problems = store.fsck().problems
        try:
            same = state(root) == expected
        except SessionStoreError as err:
            same, problems = False, [*problems, str(err)]
    except SessionStoreError as err:
        same, problems = False, [str(err)]
    except Exception:  # exactly what this benchmark counts
        return "CRASH"
    if derived and not same:
        return "SILENT"
    if problems:
        return "named" if any(name in p for p in problems) else "MISNAMED"
    return "no effect" if same else "SILENT"


def run(work: Path, blob_positions: int = BLOB_POSITIONS) -> tuple[dict[str, Counter[str]], list[str], float]:
    """Counts per file kind, examples of SILENT/CRASH cases, and the seconds it took."""
    started = time.perf_counter()
    pristine = work / "flips-pristine"
    build(pristine)
    expected = state(pristine)
    counts: dict[str, Counter[str]] = {}
    bad: list[str] = []
    case = work / "flips-case"
    for kind, path in files(pristine):
        rel = path.relative_to(pristine)
        size = path.stat().st_size
        positions = range(size)
        if kind == "blobs" and size > blob_positions:  # every blob is hashed whole: a sample says it
            positions = range(0, size, max(1, size // blob_positions))
        elif kind == "derived caches" and size > CACHE_POSITIONS:
            positions = range(0, size, max(1, size // CACHE_POSITIONS))
        data = path.read_bytes()
        name = token(kind, rel)
        for at in positions:
            # Logs and blobs: every (sampled) byte, the masks taking turns; refs and VERSION are
            # small enough for every mask at every byte.
            for mask in MASKS if kind in ("checkpoint refs", "VERSION") else (MASKS[at % len(MASKS)],):
                shutil.rmtree(case, ignore_errors=True)
                shutil.copytree(pristine, case, symlinks=True)
                flipped = bytearray(data)
                flipped[at] ^= mask
                (case / rel).write_bytes(bytes(flipped))
                outcome = classify(case, expected, name, derived=kind == "derived caches")
                counts.setdefault(kind, Counter())[outcome] += 1
                if outcome in ("MISNAMED", "SILENT", "CRASH") and len(bad) < 10:
                    bad.append(f"{rel} byte {at} ^0x{mask:02x} ({data[at : at + 1]!r}): {outcome}")
    shutil.rmtree(case, ignore_errors=True)
    return counts, bad, time.perf_counter() - started


HOW = {
    "blobs": f" ({BLOB_POSITIONS} evenly spaced bytes of each blob, the masks taking turns)",
    "log lines": " (every byte of both logs, the masks taking turns)",
    "checkpoint refs": f" (every byte x {len(MASKS)} masks)",
    "VERSION": f" (every byte x {len(MASKS)} masks)",
    "derived caches": f" (index/sessions.json, the heads cache: {CACHE_POSITIONS} evenly spaced bytes, the "
    "masks taking turns; reads must not change)",
}


def rows(counts: dict[str, Counter[str]]) -> list[tuple[str, str]]:
    out = []
    for kind in ("blobs", "log lines", "checkpoint refs", "VERSION", "derived caches"):
        c = counts.get(kind, Counter())
        total = sum(c.values())
        out.append(
            (
                f"byte flips in {kind}{HOW[kind]}: named / no effect / MISNAMED / SILENT / CRASH",
                f"{total:,} cases: " + " / ".join(f"{c[o]:,}" for o in OUTCOMES),
            )
        )
    return out


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        counts, bad, seconds = run(Path(tmp))
    for name, value in rows(counts):
        print(f"{name}: {value}")
    for line in bad:
        print("  ", line)
    print(f"({seconds:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
