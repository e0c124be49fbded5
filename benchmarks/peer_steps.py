"""bench_peer.py's table rows and workload, and the steps added after it outgrew one module.

What bench_peer.py and its steps share: `row` (one line of the table, kept in `ROWS`), `corpus` (every
real turn of ../shared/realdata's Claude Code and Codex transcripts) and `fresh` (a turn with new text).

Steps (each a row of issue 30's table, run by bench_peer.py's `--only NAME`):
- `sharing`: `session push` / `pull` of N sessions (bench_sharing.build's real messages) through a bare
  remote on local disk, against `git push` / `git fetch` of the same refs, rounds interleaved.
- `compaction`: per-append latency of a real run of appends with compaction on (the product's cascade
  and offline summarizer), a window small enough that tier 2 fires every ~10 turns: p50 / p95 / p99.
- `import-inproc`: `read_transcripts` + `import_transcript` (what `session import FILE` calls) in this
  process against reading + orjson-parsing the same file, and the peak RSS each adds, in a child.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_sharing
from bench_perf import spread
from bench_sharing import fresh_repo, git, reset_repo
from common import REALDATA
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from sessionstore import SessionStore
from sessionstore.accounting import tokenizer
from sessionstore.accounting.settings import Settings
from sessionstore.formats.registry import AUTO, read_transcripts
from sessionstore.formats.transcripts import read_transcript
from sessionstore.plumbing import codec
from sessionstore.porcelain.importing.new_session import import_transcript
from sessionstore.porcelain.sharing.pull import pull
from sessionstore.porcelain.sharing.push import push

ROWS: list[str] = []
TRANSCRIPTS = sorted((REALDATA / "claude_code").glob("*.jsonl")) + sorted(
    (REALDATA / "codex").glob("*.jsonl")
)


def row(figure: str, us: str, peer: str, ratio: float, goal: float, why: str = "") -> None:
    verdict = "met" if ratio <= goal else f"MISSED{f': {why}' if why else ''}"
    line = f"| {figure} | {us} | {peer} | {ratio:.2f}× | ≤ {goal:g}×: {verdict} |"
    ROWS.append(line)
    print(line, flush=True)


def ratio_of(ours: list[float], base: list[float]) -> float:
    return statistics.median(ours) / statistics.median(base)


# -- new real text every turn ---------------------------------------------------------------------


def corpus() -> list[list[dict[str, Any]]]:
    """Every real turn of the Claude Code and Codex transcripts, as the JSON both stores are given."""
    return [codec.to_jsonable(step.messages) for path in TRANSCRIPTS for step in read_transcript(path).steps]


def _marked(value: Any, mark: str) -> Any:
    if isinstance(value, str):
        return mark + value if len(value) >= tokenizer.CACHE_MIN_CHARS else value
    if isinstance(value, list):
        return [_marked(v, mark) for v in value]
    if isinstance(value, dict):
        return {k: _marked(v, mark) for k, v in value.items()}
    return value


def fresh(turn: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """`turn` with every text of its parts (`content`, `args`) made new: prefixed by a mark no other
    turn has, so its count is a real count and its blob new bytes."""
    mark = f"[turn {k}] "
    return [
        {**m, "parts": [{key: _marked(v, mark) if key in ("content", "args") else v for key, v in p.items()}
                        for p in m["parts"]]}
        for m in turn
    ]  # fmt: skip


def messages(items: list[dict[str, Any]]) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_python(items)


# -- session push / pull against git ----------------------------------------------------------------


def new_git(repo: Path, url: str) -> None:
    """A new `.git` in `repo` (its store kept) with `origin` = `url`: a clone that never pushed."""
    shutil.rmtree(repo / ".git", ignore_errors=True)
    git("init", "-q", str(repo))
    git("-C", str(repo), "remote", "add", "origin", url)


def sharing(work: Path, sessions: int, turns: int, reps: int) -> None:
    """First push of `sessions` sessions to an empty bare remote (export, secret scan, `git push`)
    against `git push` of the refs it exported to another empty bare remote; then a pull into a
    fresh clone against `git fetch` of the same refs into another. Pairs interleaved, order rotating."""
    base = work / "sharing"
    origin, plain, alice = base / "origin.git", base / "plain.git", base / "alice"
    names = [f"task-{i:04d}" for i in range(sessions)]
    fresh_repo(alice, origin.as_uri())
    started = time.perf_counter()
    store = bench_sharing.build(alice / ".sessions", turns, 1000, names)
    print(f"(sharing: {sessions:,} sessions of {turns} turns built in {time.perf_counter() - started:.0f} s)")
    res: dict[str, list[float]] = {"push": [], "git push": [], "pull": [], "git fetch": []}

    def ours_push() -> None:
        reset_repo(origin, None)
        new_git(alice, origin.as_uri())
        started = time.perf_counter()
        outcomes = push(store)
        res["push"].append(time.perf_counter() - started)
        assert len(outcomes) == sessions and not any(o.status == "rejected" for o in outcomes), outcomes[:3]

    def git_push() -> None:
        reset_repo(plain, None)
        started = time.perf_counter()
        git("-C", str(alice), "push", "-q", plain.as_uri(), "refs/sessions/*:refs/sessions/*")
        res["git push"].append(time.perf_counter() - started)

    def ours_pull() -> None:
        fresh_repo(base / "bob", origin.as_uri())
        bob = SessionStore.open(base / "bob" / ".sessions")
        started = time.perf_counter()
        outcomes = pull(bob)
        res["pull"].append(time.perf_counter() - started)
        assert len(outcomes) == sessions and not any(o.status == "rejected" for o in outcomes), outcomes[:3]
        last = f"logs/{names[-1]}.jsonl"
        assert (bob.root / last).read_bytes() == (store.root / last).read_bytes()

    def git_fetch() -> None:
        fresh_repo(base / "carol", origin.as_uri())
        started = time.perf_counter()
        git(
            "-C",
            str(base / "carol"),
            "fetch",
            "-q",
            "origin",
            "refs/sessions/*:refs/remotes/origin/sessions/*",
        )
        res["git fetch"].append(time.perf_counter() - started)

    ours_push()  # the local refs git_push sends exist from the first push on
    del res["push"][:]
    for i in range(reps):
        for pair in ((ours_push, git_push), (ours_pull, git_fetch)):
            for step in pair if i % 2 == 0 else pair[::-1]:
                step()
    shutil.rmtree(base)
    for verb, peer in (("push", "git push"), ("pull", "git fetch")):
        row(
            f"`session {verb}` of {sessions:,} sessions ({turns} real turns each, a first {verb}: empty bare "
            f"remote / fresh clone on local disk; porcelain `{verb}()` in-process)",
            spread(res[verb]),
            f"`{peer}` of the same refs {spread(res[peer])}",
            ratio_of(res[verb], res[peer]),
            2.0,
            "see the notes",
        )


# -- append p99 with compaction on ----------------------------------------------------------------


def without_usage(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`turn` with its responses' recorded usage dropped: it measured the original agent's context, not
    this session's, and as the measured prefix it would fire (or hold back) compaction on its own."""
    return [{k: v for k, v in m.items() if k != "usage"} for m in turn]


def compaction_tail(work: Path, turns: list[list[dict[str, Any]]], appends: int, window: int) -> None:
    """`appends` real turns (new text each) through `Session.append` with the cascade on (DESIGN §7,
    the offline `extractive` summarizer), `context_window_tokens = window`: per-append wall time,
    compacting appends included, p50 / p95 / p99 against the median."""
    store = SessionStore.open(work / "compacting", settings=Settings(context_window_tokens=window))
    session = store.session("c")
    times: list[float] = []
    compacting: list[float] = []
    for k in range(appends):
        msgs = messages(without_usage(fresh(turns[k % len(turns)], 3 * 10**6 + k)))
        seq = session.head.seq if session.head else 0
        started = time.perf_counter()
        session.append(msgs)
        times.append(time.perf_counter() - started)
        assert session.head is not None
        if session.head.seq > seq + 1:  # the turn's commit and a compaction after it
            compacting.append(times[-1])
    assert compacting, f"no compaction in {appends} appends at a {window:,}-token window"
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    p50, p95, p99 = statistics.median(times), cuts[94], cuts[98]
    ms = lambda s: f"{s * 1e3:.1f} ms"  # noqa: E731
    row(
        f"`Session.append` p99 with compaction on ({appends} real turns, new text each, window "
        f"{window:,} tokens: {len(compacting)} tier-2 compactions, one every ~{appends // len(compacting)} "
        f"turns, offline summarizer)",
        f"p99 {ms(p99)} (p95 {ms(p95)}, max {ms(max(times))}; compacting appends {spread(compacting)})",
        f"its own median {ms(p50)}",
        p99 / p50,
        10.0,
        "see the notes",
    )


# -- session import in-process ----------------------------------------------------------------------

IMPORT_RSS = """
import sys
from pathlib import Path
kind, source, root = sys.argv[1:4]
import orjson
if kind == "import":
    from sessionstore import SessionStore
    from sessionstore.accounting import tokenizer
    from sessionstore.formats.registry import AUTO, read_transcripts
    from sessionstore.plumbing import codec
    from sessionstore.porcelain.importing.new_session import import_transcript
    tokenizer.backend()
    codec.warm_up()
    store = SessionStore.open(root, warm=False)
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":")) * 1024
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) restarts from what is resident now
before = status("VmRSS")
if kind == "import":
    (transcript,) = read_transcripts(Path(source), AUTO)
    import_transcript(store, transcript)
else:
    parsed = [orjson.loads(line) for line in open(source, "rb").read().splitlines() if line.strip()]
print(status("VmHWM") - before)
"""


def import_inproc(work: Path, reps: int) -> None:
    """`session import`'s own calls in this process (store open, `read_transcripts`,
    `import_transcript`) against reading + orjson-parsing the file; peak RSS growth in a child each
    (imports, tokenizer and serializers loaded first; the peak, VmHWM, reset
    through /proc/self/clear_refs before the work: Linux only)."""
    import orjson

    source = max((REALDATA / "claude_code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    size = source.stat().st_size

    def parse() -> None:
        [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()]

    res: dict[str, list[float]] = {"parse": [], "import": []}
    for i in range(-1, reps):  # round -1 warms both (first serializer builds) and is not counted
        root = work / f"import-inproc-{i}"
        SessionStore.open(root, warm=False)  # `session init`: before the clock, as in the CLI row
        for name in ("parse", "import") if i % 2 == 0 else ("import", "parse"):
            started = time.perf_counter()
            if name == "parse":
                parse()
            else:
                (transcript,) = read_transcripts(source, AUTO)
                import_transcript(SessionStore.open(root, create=False, warm=False), transcript)
            if i >= 0:
                res[name].append(time.perf_counter() - started)
    rss: dict[str, list[int]] = {"parse": [], "import": []}
    for i in range(3):
        for name in rss:
            argv = [sys.executable, "-c", IMPORT_RSS, name, str(source), str(work / f"import-rss-{i}")]
            out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=work)
            rss[name].append(int(out.stdout))
    grew = statistics.median(rss["import"])
    row(
        f"`session import` of a {size / 2**20:.1f} MiB Claude Code transcript ({source.name}), in-process: "
        "read_transcripts + import_transcript",
        f"{spread(res['import'])}; peak RSS growth {grew / 2**20:.1f} MiB = {grew / size:.1f}× the file "
        f"(goal ≤ 5×: {'met' if grew <= 5 * size else 'MISSED'})",
        f"reading + orjson-parsing it {spread(res['parse'])}, peak RSS growth "
        f"{statistics.median(rss['parse']) / 2**20:.1f} MiB",
        ratio_of(res["import"], res["parse"]),
        5.0,
        "see the notes",
    )
