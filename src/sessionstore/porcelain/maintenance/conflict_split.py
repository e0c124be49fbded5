"""`fsck --repair` of a log that git left with conflict markers: split it into two whole sessions.

Two clones appended to one committed session, and git's merge wrote both tails into one file between
`<<<<<<<`, `=======` and `>>>>>>>`. Nothing is lost by splitting (DESIGN §2): ours stays NAME, theirs
becomes `NAME-<first 7 hex digits of theirs' head>`, each a valid hash chain with the checkpoint refs
its own log derives (which also resolves git's add/add conflict on `refs/checkpoints/NAME/K`). Both
sides are verified before anything is written; theirs is created first, so a crash part-way leaves the
conflicted log, which the next repair splits again (finding theirs already there, byte for byte).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sessionstore.errors import CorruptObjectError, SessionStoreError
from sessionstore.plumbing.commits import Commit
from sessionstore.plumbing.conflicts import UnresolvableConflict, split_conflict
from sessionstore.plumbing.fsutil import atomic_replace, create_exclusive, read_regular
from sessionstore.plumbing.names import check_name

if TYPE_CHECKING:
    from sessionstore.porcelain.session.layout import StoreLayout as SessionStore


@dataclass
class Split:
    """What a split did: the session theirs became (None when theirs added nothing), and one line
    per change for fsck's report."""

    theirs: str | None
    said: list[str] = field(default_factory=list)


def _checkpoints(commits: list[Commit]) -> list[tuple[int, str, int]]:
    return [(k, c.id, c.offset) for k, c in enumerate((c for c in commits if c.kind == "compaction"), 1)]


def split_session(store: SessionStore, name: str) -> Split:
    """Split the conflicted log of `name` (see the module docstring); `SessionStoreError` naming why
    when the markers or either side do not hold a valid log, and then nothing was changed."""
    log = store.log(name)
    with store.lock(name):
        data = read_regular(log.path, what=f"log of session {name!r}")
        try:
            ours, theirs = split_conflict(data)
            ours_commits, _ = log.scan(since_reset=False, data=ours)
            theirs_commits, _ = log.scan(since_reset=False, data=theirs)
        except (UnresolvableConflict, CorruptObjectError) as err:
            raise SessionStoreError(
                f"{name}: cannot split the git merge conflict in logs/{name}.jsonl ({err}); resolve it with "
                "git (`git checkout --ours` or `--theirs` on a copy) and run `session fsck`"
            ) from None
        ours_ids = {c.id for c in ours_commits}
        theirs_ids = {c.id for c in theirs_commits}
        split = Split(theirs=None)
        if ours_commits and ours_commits[-1].id in theirs_ids:  # ours is a prefix: theirs fast-forwards it
            ours, ours_commits = theirs, theirs_commits
        elif theirs_commits and theirs_commits[-1].id not in ours_ids:
            split.theirs = _publish_theirs(store, name, theirs, theirs_commits, split)
        atomic_replace(log.path, ours)
        split.said.insert(
            0,
            f"{name}: split the git merge conflict in logs/{name}.jsonl: ours ({len(ours_commits)} commits) "
            f"stays {name!r}"
            + (f", theirs ({len(theirs_commits)} commits) is now {split.theirs!r}" if split.theirs else ""),
        )
        for ref in store.refs.rebuild(name, _checkpoints(ours_commits)):
            split.said.append(f"{name}: rewrote {ref} from the log")
    return split


def _publish_theirs(store: SessionStore, name: str, data: bytes, commits: list[Commit], split: Split) -> str:
    theirs = check_name(f"{name}-{commits[-1].id[:7]}")
    with store.lock(theirs):
        log = store.log(theirs)
        if log.exists():
            if read_regular(log.path, what=f"log of session {theirs!r}") != data:
                raise SessionStoreError(
                    f"{name}: cannot split the git merge conflict: session {theirs!r} already exists with "
                    f"other commits; rename it (logs/{theirs}.jsonl) and run `session fsck --repair` again"
                )
        else:
            create_exclusive(log.path, data)
        for ref in store.refs.rebuild(theirs, _checkpoints(commits)):
            split.said.append(f"{theirs}: wrote {ref} from the log")
    return theirs
