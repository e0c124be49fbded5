"""`session push` / `session pull`: sessions travel as git commits under `refs/sessions/<name>` (DESIGN §12).

Each store commit becomes one git commit whose tree holds `line` (the exact bytes of its log line,
newline included) and `objects/<blob id>` for every blob it adds, or, for a reset point (compaction,
checkout, fork), every blob its replay needs. So git's packfiles delta the blobs, its transport and
authentication carry them, and a ref update is atomic: a remote has a session up to some commit, or
not at all.

The git commits are a pure function of the store commits (fixed author, the commit's own time, subject
`<kind> <seq> <id>`), so two clones that export the same history make the same git commits: a
re-export is a fast-forward, never a fork. The local ref `refs/sessions/<name>` records what the
session was last exported as (push) or pulled to (pull): the store-commit <-> git-commit mapping, so
push only exports commits after it. Pulls land in `refs/remotes/<remote>/sessions/<name>`, where a plain
`git fetch REMOTE 'refs/sessions/*:refs/remotes/REMOTE/sessions/*'` puts them too.

A divergence copy a pull made is recorded as `refs/session-copies/<remote>/<copy>`; a push of all
sessions leaves it out (`SKIPPED`, see `copies_of`), as git never pushes remote-tracking refs back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sessionstore.errors import SessionStoreError
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.fsutil import read_regular
from sessionstore.plumbing.git import ZERO, CatFile, Git, GitError
from sessionstore.plumbing.git_pack import PackWriter, tree
from sessionstore.plumbing.names import is_valid_name
from sessionstore.porcelain.sharing.secret_scan import refuse_secrets, secret_in

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore

SESSION_REFS = "refs/sessions/"
COPY_REFS = "refs/session-copies/"
AUTHOR = b"sessionstore <sessionstore@localhost>"
DEFAULT_REMOTE = "origin"


def tracking_prefix(remote: str) -> str:
    """Where pulled sessions of `remote` land: `refs/remotes/<remote>/sessions/`."""
    return f"refs/remotes/{remote}/sessions/"


def copy_prefix(remote: str) -> str:
    """Where pull records the divergence copies it made of `remote`'s sessions:
    `refs/session-copies/<remote>/<copy>`, outside `refs/remotes/`, so no `git fetch --prune` drops it."""
    return f"{COPY_REFS}{remote}/"


@dataclass(frozen=True)
class Outcome:
    """What push or pull did to one session: `status` is one of the constants below."""

    name: str
    status: str
    commits: int = 0
    detail: str = ""
    into: str | None = None
    """The session that received the commits, when not `name` (a divergence copy)."""

    @property
    def refused(self) -> bool:
        return self.status in (REJECTED,)


PUSHED, NEW, UP_TO_DATE, REJECTED, FAST_FORWARD, AHEAD, DIVERGED, SKIPPED = (
    "pushed", "new", "up to date", "rejected", "fast-forward", "ahead", "diverged", "skipped",
)  # fmt: skip


def subject(commit: Commit) -> str:
    return f"{commit.kind} {commit.seq} {commit.id}"


def parse_subject(text: str) -> tuple[int, str] | None:
    """(seq, store commit id) of a subject written by `subject`, None for anything else."""
    parts = text.split(" ")
    if len(parts) != 3 or not parts[1].isdigit() or len(parts[2]) != 64:
        return None
    return int(parts[1]), parts[2]


def open_git(store: SessionStore, remote: str | None, verb: str = "push") -> Git:
    """The repository around the store; `remote`, when given, must be one of its remotes (a session's
    name given there is named as such: `session push fix-auth` means `session push origin fix-auth`)."""
    store.directory_only(
        f"`session {verb}`", "sessions are shared by opening the same URL on every machine, not through git"
    )
    git = Git.around(store.root)
    if remote is not None and remote not in (known := git.remotes()):
        have = f" (it has: {', '.join(known)})" if known else " (it has none)"
        if "/" in remote or ":" in remote:  # a URL or a path where the remote's name goes
            raise GitError(
                f"{remote!r} is not a git remote's name: add it as one (`git remote add NAME {remote}`) "
                f"and give that NAME{have}"
            )
        if is_valid_name(remote) and store.exists(remote):
            fix = f"session {remote!r} goes after the remote: `session {verb} {DEFAULT_REMOTE} {remote}`"
        else:
            fix = f"add it with `git remote add {remote} URL`"
        raise GitError(f"no git remote {remote!r} in {git.top}{have}: {fix}")
    return git


def check_shareable(store: SessionStore, names: Sequence[str]) -> list[str]:
    """`names` (default: every session), each an existing session whose name is a valid git ref."""
    chosen = list(dict.fromkeys(names)) or store.sessions()
    for name in chosen:
        store.require(name)  # "no session ...; did you mean ...?"
        if name.endswith((".", ".lock")):
            raise SessionStoreError(
                f"session {name!r} cannot be a git ref (it ends in '.' or '.lock'): "
                f"`session fork {name} NEW` under another name and share that"
            )
    return chosen


def copies_of(store: SessionStore, git: Git, remote: str, names: Sequence[str]) -> list[str]:
    """The sessions among `names` that are divergence copies a pull made of `remote`'s sessions and
    hold nothing else, which a push of all sessions leaves out: their commits are the remote's, and
    sent under the copy's name they would give every clone that pulls a second copy. What pull
    recorded decides, never the name (a user may call a session `x-origin-1234567`): the record
    (`copy_prefix`, written before the copy's first line) is the remote chain the copy is brought up
    to, and the copy's last commit (seq and id) must be on it, at its end or before it (a pull killed
    in its append). A copy renamed or given commits of its own is an ordinary session."""
    records = git.refs(copy_prefix(remote))
    out = []
    for name in names:
        if name not in records:
            continue
        head = store.log(name).head()
        if head is None:  # made, nothing appended yet: nothing to send either
            out.append(name)
            continue
        sha, subject = records[name]
        if parse_subject(subject) == (head.seq, head.id):  # brought up to the record: the usual case
            out.append(name)
            continue
        chain = git.chain(sha)  # else a pull killed in its append left it short of the record
        if head.seq <= len(chain) and parse_subject(chain[head.seq - 1][2]) == (head.seq, head.id):
            out.append(name)
    return out


# -- export: store commits -> git commits ---------------------------------------------------------------


def _epoch(time: str) -> int:
    try:
        return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


def export(
    store: SessionStore, git: Git, names: Sequence[str], *, scanned: set[str] | None = None
) -> dict[str, str]:
    """Bring `refs/sessions/<name>` up to each session's log; return {name: git tip} (empty logs left out).

    Only commits after the ref's own (checked against the log: the same id at the same seq) are
    written; a ref that no longer matches the log (a session removed and made again) is rebuilt.
    Every new git object goes into one pack (`PackWriter`, no git process), made durable before the
    refs move in one `update-ref` transaction (each from the value read here). `scanned`, when
    given, receives the git ids of the blobs written here that the secret scan found clean (each is
    scanned as it is written, while its bytes are in hand: `refuse_secrets` need not read it back).
    """
    existing = git.refs(SESSION_REFS)
    plans: list[tuple[str, list[Commit], bytes, str | None]] = []
    for name in names:
        log = store.log(name)
        commits, valid_end = log.scan(since_reset=False)
        if not commits:
            continue
        start, parent = 0, None
        if name in existing:
            sha, subj = existing[name]
            known = parse_subject(subj)
            if known and known[0] <= len(commits) and commits[known[0] - 1].id == known[1]:
                start, parent = known[0], sha
        if start < len(commits):
            data = read_regular(log.path, what=f"log of session {name!r}")[:valid_end]
            plans.append((name, commits[start:], data, parent))
    tips = {n: sha for n, (sha, _) in existing.items()}
    if plans:
        pack = PackWriter(git.objects_dir())
        try:
            made = _write(store, pack, plans, scanned)
        except BaseException:
            pack.discard()
            raise
        pack.finish()  # durable before any ref names what it holds
        git.transaction({f"{SESSION_REFS}{n}": (sha, existing.get(n, (ZERO,))[0]) for n, sha in made.items()})
        tips.update(made)
    return {name: tips[name] for name in names if name in tips}


def _write(
    store: SessionStore,
    pack: PackWriter,
    plans: list[tuple[str, list[Commit], bytes, str | None]],
    scanned: set[str] | None,
) -> dict[str, str]:
    """Add every plan's commits to `pack` (a git commit per store commit: its tree holds `line` and
    `objects/<id>` per blob it names); {name: its new tip}."""
    blobs: dict[str, str] = {}  # store blob id -> git blob id, per export

    def blob(data: bytes) -> str:
        sha = pack.add("blob", data)
        if scanned is not None and sha not in scanned and secret_in(data) is None:
            scanned.add(sha)
        return sha

    tips = {}
    for name, commits, data, parent in plans:
        previous = parent
        for c in commits:
            named = {}
            for oid in dict.fromkeys(c.named_blobs):
                if oid not in blobs:
                    blobs[oid] = blob(store.objects.read(oid))
                named[oid] = ("100644", blobs[oid])
            root = {"line": ("100644", blob(data[c.offset : c.end]))}
            if named:
                root["objects"] = ("40000", pack.add("tree", tree(named)))
            when = b"%s %d +0000" % (AUTHOR, _epoch(c.time))
            body = b"tree %s\n" % pack.add("tree", tree(root)).encode()
            if previous is not None:
                body += b"parent %s\n" % previous.encode()
            body += b"author %s\ncommitter %s\n\n%s\n" % (when, when, subject(c).encode())
            previous = pack.add("commit", body)
        tips[name] = previous
    return tips  # type: ignore[return-value]


# -- push ---------------------------------------------------------------------------------------------


def push(
    store: SessionStore,
    remote: str = DEFAULT_REMOTE,
    names: Sequence[str] = (),
    *,
    allow_secrets: bool = False,
) -> list[Outcome]:
    """Send sessions to `remote` as `refs/sessions/<name>`; never a non-fast-forward.

    With no `names`, every session but the divergence copies of `remote`'s sessions that a pull made
    and that the remote lacks (`copies_of`), each `SKIPPED` with why; a named one is sent. A session
    the remote has moved past (or away from) is `REJECTED` with the advice to pull first;
    nothing is sent before every outgoing object was scanned for credentials (`SessionStoreError`
    naming session, commit and pattern, unless `allow_secrets`).
    """
    git = open_git(store, remote)
    chosen = check_shareable(store, names)
    remote_tips = git.ls_remote(remote, SESSION_REFS)
    outcomes: dict[str, Outcome] = {}
    if not names:
        for name in copies_of(store, git, remote, [n for n in chosen if n not in remote_tips]):
            outcomes[name] = Outcome(
                name,
                SKIPPED,
                detail=f"a copy a pull made of {remote}'s commits, which {remote} has: "
                f"`session push {remote} {name}` sends it",
            )
    scanned: set[str] | None = None if allow_secrets else set()
    local = export(store, git, [n for n in chosen if n not in outcomes], scanned=scanned)
    with git.reader() as reader:  # one `cat-file` for every tip and every ancestry question
        seqs = _seqs(reader, {*remote_tips.values(), *local.values()})  # the commits this clone has
        pairs = {n: (local[n], remote_tips[n]) for n in local if remote_tips.get(n) in seqs}
        related = _related(git, reader, {n: pair for n, pair in pairs.items() if pair[0] != pair[1]}, seqs)
    known_remote = [sha for sha in set(remote_tips.values()) if sha in seqs]
    sending: list[str] = []
    for name in chosen:
        if name in outcomes:
            continue
        tip = local.get(name)
        there = remote_tips.get(name)
        if tip is None or there == tip:
            outcomes[name] = Outcome(name, UP_TO_DATE)
        elif there is not None and (there not in seqs or related[name] == "behind"):
            outcomes[name] = _pull_first(name, remote)  # behind it: fetched or not, a pull fast-forwards
        elif there is not None and related[name] == "diverged":
            outcomes[name] = Outcome(
                name,
                REJECTED,
                detail=f"it diverged from {remote}'s (a pull keeps theirs as a copy): push yours under a "
                f"new name: `session fork {name} NEW` then `session push {remote} NEW`",
            )
        else:
            sending.append(name)
    if not allow_secrets:
        refuse_secrets(git, {n: local[n] for n in sending}, known_remote, scanned or set())
    if sending:
        counts = {n: seqs[local[n]] - (seqs[remote_tips[n]] if n in remote_tips else 0) for n in sending}
        verdicts = _git_push(git, remote, sending)
        git.update_refs({f"{tracking_prefix(remote)}{n}": local[n] for n, ok, _ in verdicts if ok})
        for name, ok, why in verdicts:
            if ok:
                status = NEW if name not in remote_tips else PUSHED
                outcomes[name] = Outcome(name, status, counts[name])
            elif "non-fast-forward" in why or "fetch first" in why:
                outcomes[name] = _pull_first(name, remote)
            else:
                outcomes[name] = Outcome(name, REJECTED, detail=f"the remote refused it: {why}")
    return [outcomes[name] for name in chosen]


def _pull_first(name: str, remote: str) -> Outcome:
    return Outcome(
        name, REJECTED, detail=f"{remote} has commits this clone lacks: `session pull {remote} {name}` first"
    )


def _seqs(reader: CatFile, commits: Iterable[str]) -> dict[str, int]:
    """{git commit: the store seq its subject names (0 if none)} of those among `commits` this clone
    has, read in one round: how many commits a push sends is the difference of two, as the chain has
    one git commit per seq; a commit missing here is one a pull has not fetched."""
    commits = list(commits)
    out = {}
    for sha, found in zip(commits, reader.read([f"{c}^{{commit}}" for c in commits]), strict=True):
        if found is not None:
            message = found.data.split(b"\n\n", 1)[1] if b"\n\n" in found.data else b""
            parsed = parse_subject(message.split(b"\n", 1)[0].decode(errors="replace"))
            out[sha] = parsed[0] if parsed else 0
    return out


def _related(
    git: Git, reader: CatFile, pairs: dict[str, tuple[str, str]], seqs: dict[str, int]
) -> dict[str, str]:
    """{name: "ahead" (the remote's commit is an ancestor of ours), "behind" (ours is one of theirs) or
    "diverged"} for each (our tip, the remote's) of `pairs` (different commits, both here).

    A chain has one commit per seq, so `ours~(our seq - their seq)` is their commit exactly when ours
    descends from it: one `cat-file` round answers every session. That proves ancestry (the ids
    match), never refutes it, so a pair it does not settle (a divergence, a foreign ref) is asked of
    `git merge-base` itself."""
    probes = {}
    for name, (ours, theirs) in pairs.items():
        if seqs[ours] > seqs[theirs] > 0:
            probes[name] = (f"{ours}~{seqs[ours] - seqs[theirs]}", theirs, "ahead")
        elif seqs[theirs] > seqs[ours] > 0:
            probes[name] = (f"{theirs}~{seqs[theirs] - seqs[ours]}", ours, "behind")
    found = reader.read([spec for spec, _, _ in probes.values()])
    out = {
        name: verdict
        for (name, (_, want, verdict)), f in zip(probes.items(), found, strict=True)
        if f and f.sha == want
    }
    for name, (ours, theirs) in pairs.items():
        if name not in out:
            if git.is_ancestor(ours, theirs):
                out[name] = "behind"
            else:
                out[name] = "ahead" if git.is_ancestor(theirs, ours) else "diverged"
    return out


_PORCELAIN = re.compile(r"^(?P<flag>.)\t(?P<src>[^:]*):(?P<dst>\S+)\t(?P<summary>.*)$")


def _git_push(git: Git, remote: str, names: Sequence[str]) -> list[tuple[str, bool, str]]:
    """(name, accepted, reason) per ref from one `git push --porcelain` (never forced)."""
    stdout, stderr = git.push(remote, [f"{SESSION_REFS}{n}:{SESSION_REFS}{n}" for n in names])
    said = {}
    for row in stdout.splitlines():
        m = _PORCELAIN.match(row)
        if m and m["dst"].startswith(SESSION_REFS):
            said[m["dst"][len(SESSION_REFS) :]] = (m["flag"] in " *=+", m["summary"])
    if not said:
        raise git.error(stderr.encode(), f"git push to {remote!r}", git.remote_fix(remote))
    remote_lines = [
        ln[len("remote:") :].strip()
        for ln in stderr.splitlines()
        if ln.startswith("remote:") and ln[len("remote:") :].strip()
    ]
    out = []
    for name in names:
        ok, summary = said.get(name, (False, "no answer from the remote"))
        why = summary if not remote_lines else f"{summary}; remote: {remote_lines[-1]}"
        out.append((name, ok, why))
    return out
