"""`session pull`: fetch `refs/sessions/*` from a remote and append what is new, byte for byte.

A session whose local log is a prefix of the remote's is fast-forwarded; one that is ahead is left
alone; a divergence becomes a new session `NAME-<remote>-<short id>` holding the remote's whole log
(nothing lost, nothing merged by guesswork). The short id is that of the remote's first commit after
the common prefix, so pulling again later fast-forwards the same copy instead of making another.

Pulled commits are not rebuilt (a `Session` commit makes new lines): every remote line is verified
here (its id hashes, it chains onto the local head, its message count is what its blobs hold), every
blob is verified against its name and written durably BEFORE the lines naming it, then the writer's
`append_verified` puts all lines in one fsynced append under the session lock, and the checkpoint refs
the log implies are created last (they are derivable, and the next pull, or `session fsck --repair`,
recreates one a crash left out). A remote session that fails a check is refused alone (`Refused`,
reported `REJECTED`): nothing of it is written, and the other sessions are pulled.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sessionstore.errors import UnknownRevision
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.git import ZERO, Git, GitError, RefLocked
from sessionstore.plumbing.names import is_valid_name
from sessionstore.porcelain.sharing.push import (
    AHEAD,
    DEFAULT_REMOTE,
    DIVERGED,
    FAST_FORWARD,
    NEW,
    REJECTED,
    SESSION_REFS,
    UP_TO_DATE,
    Outcome,
    copy_prefix,
    open_git,
    parse_subject,
    tracking_prefix,
)
from sessionstore.porcelain.sharing.remote_commits import (
    Chain,
    Group,
    Refused,
    Staged,
    ensure_checkpoint_refs,
    land,
    stage,
)

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore


@dataclass(frozen=True)
class _Plan:
    """What a pull does to one remote session, decided before anything is written: append `part`
    after `before` (the local log of `target`: the session itself or its divergence copy), or, with
    no `part`, only finish the checkpoint refs; `record`: the copy record's commit (divergence only)."""

    outcome: Outcome
    target: str
    part: Chain
    before: list[Commit]
    record: str | None = None


def pull(store: SessionStore, remote: str = DEFAULT_REMOTE, names: Sequence[str] = ()) -> list[Outcome]:
    """Fetch the remote's sessions (all, or `names`) and bring the local store up to them.

    One outcome per session; a remote session that is refused (`Refused`: see `read_chain` and
    `_import`) is `REJECTED` with the reason, and changes nothing, while the others are pulled. A
    session deleted on the remote is no longer pulled (its tracking ref is pruned); the local one stays.

    A constant number of git processes, however many sessions: one `fetch`, one `for-each-ref`, one
    `log` for every chain, one `update-ref` transaction recording every divergence copy (before any
    line of one is written), one `cat-file --batch` read in rounds (per session: its lines, then the
    blobs they name), and one `update-ref` transaction for the `refs/sessions/*` it pulled.
    """
    git = open_git(store, remote, "pull")
    names = list(dict.fromkeys(names))
    if names:
        there = git.ls_remote(remote, SESSION_REFS)
        missing = [n for n in names if n not in there]
        if missing:
            have = f" (it has: {', '.join(sorted(there))})" if there else " (it has no sessions)"
            raise UnknownRevision(f"no session {missing[0]!r} on remote {remote!r}{have}")
    prefix = tracking_prefix(remote)
    wanted = [f"+{SESSION_REFS}{n}:{prefix}{n}" for n in names] or [f"+{SESSION_REFS}*:{prefix}*"]
    fetch = ("fetch", "--no-tags", "--quiet", "--prune", remote, *wanted)
    for wait in (0.2, 0.5, None):  # a locked ref: another git is moving it (a killed pull's, finishing)
        try:
            git.run(*fetch, what=f"git fetch from {remote!r}", fix=git.remote_fix(remote), detach=True)
            break
        except RefLocked:
            if wait is None:
                raise
            time.sleep(wait)
    table = git.ref_table(prefix, SESSION_REFS, copy_prefix(remote))
    tips = {
        ref[len(prefix) :]: (sha, kind) for ref, (sha, kind, _) in table.items() if ref.startswith(prefix)
    }
    graph = git.commit_graph({sha for sha, kind in tips.values() if kind == "commit"})
    order = list(names) or sorted(tips)
    out: dict[str, Outcome] = {}
    plans: dict[str, _Plan] = {}
    for name in order:
        try:
            if not is_valid_name(name):
                raise _refused(
                    name, remote, f"remote ref {SESSION_REFS}{name}: {name!r} is not a session name"
                )
            plans[name] = _plan(store, graph, remote, name, *tips[name])
        except Refused as err:
            out[name] = Outcome(name, REJECTED, detail=str(err))
    unrecorded = _record_copies(git, table, remote, plans)
    pulled: dict[str, tuple[str, str]] = {}  # refs/sessions/<name> -> (its git commit now, before)

    def landed(staged: Staged) -> None:
        out[staged.outcome.name] = staged.outcome
        ref = f"{SESSION_REFS}{staged.name}"
        pulled[ref] = (staged.part[-1][0], table.get(ref, (ZERO,))[0])

    def refused(staged: Staged, err: Refused) -> None:
        out[staged.outcome.name] = Outcome(staged.outcome.name, REJECTED, detail=str(err))

    try:
        group = Group()
        with git.reader() as reader:
            for name, plan in plans.items():
                try:
                    if plan.target in unrecorded:
                        raise unrecorded[plan.target]
                    if not plan.part:
                        _finish_refs(store, plan.target, plan.before)
                        out[name] = plan.outcome
                    elif group.add(
                        stage(store, reader, plan.target, plan.part, plan.before, plan.outcome, group.blobs)
                    ):
                        land(store, group, landed, refused)
                        group = Group()
                except Refused as err:
                    out[name] = Outcome(name, REJECTED, detail=str(err))
        land(store, group, landed, refused)
    finally:  # what a push exports from (a stale one costs a re-export of the same commits, no more)
        _move_exported(git, pulled)
    return [out[name] for name in order]


def _refused(name: str, remote: str, why: str) -> Refused:
    return Refused(
        f"{why}: nothing was pulled; it was not written by `session push` "
        f"(`git push {remote} :{SESSION_REFS}{name}` removes it from {remote})"
    )


def read_chain(
    graph: dict[str, tuple[list[str], str]], name: str, tip: str, kind: str, remote: str = DEFAULT_REMOTE
) -> Chain:
    """The remote session at `tip` (a `kind` object), walked back through `graph` (`Git.commit_graph`),
    checked to be a linear chain of sessionstore commits (else `Refused`, naming the first git object
    that is not one)."""
    if kind != "commit" or tip not in graph:  # a ref at a blob, a tree or a tag
        raise _refused(
            name, remote, f"remote session {name!r} is not a sessionstore chain: {tip[:12]} is no commit"
        )
    walked = []
    sha: str | None = tip
    while sha is not None:
        parents, subj = graph.get(sha, ([], ""))
        walked.append((sha, parents, subj))
        sha = parents[0] if len(parents) == 1 else None  # a root, or a merge (refused below)
    out: Chain = []
    for sha, parents, subj in reversed(walked):
        parsed = parse_subject(subj)
        expect = [out[-1][0]] if out else []
        if parsed is None or parents != expect or parsed[0] != len(out) + 1:
            raise _refused(
                name, remote, f"remote session {name!r} is not a sessionstore chain at git commit {sha[:12]}"
            )
        out.append((sha, parsed[0], parsed[1]))
    return out


def _plan(
    store: SessionStore, graph: dict[str, tuple[list[str], str]], remote: str, name: str, tip: str, kind: str
) -> _Plan:
    chain = read_chain(graph, name, tip, kind, remote)
    local = _local_ids(store, name)
    common = _common(local, chain)
    if common == len(chain):
        status = UP_TO_DATE if common == len(local) else AHEAD
        return _Plan(Outcome(name, status, len(local) - common), name, [], local)
    if common == len(local):
        return _Plan(
            Outcome(name, NEW if not local else FAST_FORWARD, len(chain) - common),
            name,
            chain[common:],
            local,
        )
    copy = divergence_name(name, remote, chain[common][2])
    theirs = _local_ids(store, copy)
    done = _common(theirs, chain)
    if done < len(theirs):
        raise Refused(
            f"session {copy!r} (the copy of {remote}'s {name!r}) has commits of its own: rename it "
            f"(`session rename {copy} NEW`) and pull again; nothing was pulled"
        )
    outcome = Outcome(name, DIVERGED, len(chain) - done, into=copy)
    return _Plan(outcome, copy, chain[done:], theirs, record=chain[-1][0])


def _record_copies(
    git: Git, table: dict[str, tuple[str, str, str]], remote: str, plans: dict[str, _Plan]
) -> dict[str, Refused]:
    """Record every divergence copy the plans make (`copy_prefix`) in one transaction, before a line
    of any is written: a pull killed in an append leaves a copy no push sends, never one without its
    record (push of all sessions leaves recorded copies out). Each ref moves only from the value this
    pull read, so a concurrent pull's record is never overwritten. Returns {copy: why} for the copies
    that could not be recorded (those sessions are refused; the others are pulled)."""
    updates = {}
    for plan in plans.values():
        ref = f"{copy_prefix(remote)}{plan.target}"
        old = table.get(ref, (ZERO,))[0]
        if plan.record is not None and plan.record != old:
            updates[ref] = (plan.record, old)
    try:
        git.transaction(updates)
        return {}
    except GitError:  # find which: one transaction per ref, on this rare path only
        failed = {}
        for ref, update in updates.items():
            try:
                git.transaction({ref: update})
            except GitError as err:
                copy = ref[len(copy_prefix(remote)) :]
                failed[copy] = Refused(f"the copy {copy!r} could not be recorded ({err}): nothing was pulled")
        return failed


def _move_exported(git: Git, pulled: dict[str, tuple[str, str]]) -> None:
    """Move `refs/sessions/*` to the commits pulled, in one transaction; a ref another process moved
    meanwhile (a push exporting newer commits) keeps its value, as does one whose lock is held: the
    ref only spares a push work, so a stale one costs a re-export of the same commits, no more."""
    try:
        git.transaction(pulled)
    except GitError:
        for ref, update in pulled.items():
            with contextlib.suppress(GitError):
                git.transaction({ref: update})


def _finish_refs(store: SessionStore, name: str, commits: Sequence[Commit]) -> None:
    """The checkpoint refs of a session (or divergence copy) that has every remote commit already:
    a pull killed between its append and its refs left them out, and this pull finishes that."""
    wanted = sum(1 for c in commits if c.kind == "compaction")
    if wanted and len({ref.k for ref in store.refs.list(name)} & set(range(1, wanted + 1))) < wanted:
        with store.lock(name):
            ensure_checkpoint_refs(store, name)


def divergence_name(name: str, remote: str, first_theirs: str) -> str:
    """`NAME-<remote>-<short id>`, shortened to a valid session name when needed."""
    tag = re.sub(r"[^A-Za-z0-9._-]", "-", remote).strip(".-") or "remote"
    tail = f"-{tag}-{first_theirs[:7]}"
    candidate = name[: 128 - len(tail)] + tail
    return candidate if is_valid_name(candidate) else f"{name[:100]}-{first_theirs[:7]}"


def _local_ids(store: SessionStore, name: str) -> list[Commit]:
    if not store.exists(name):
        return []
    return store.log(name).scan(since_reset=False)[0]


def _common(local: Sequence[Commit], chain: Chain) -> int:
    n = 0
    for mine, (_, _, theirs) in zip(local, chain, strict=False):
        if mine.id != theirs:
            break
        n += 1
    return n
