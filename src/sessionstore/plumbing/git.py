"""The `git` executable as a library: one process per job, streamed, never one per object or session.

Sharing (DESIGN §12) keeps sessions as git objects, so git's packfiles, transport and atomic ref updates
do the work. This module is the only place that starts `git` (`git_pack` writes many commits as one
pack with no process): `cat-file --batch` reads many objects through one pipe (a feeder thread writes
the requests so neither side can block the other; `CatFile` keeps one process for many rounds), `log
--stdin` lists many chains, `update-ref --stdin` moves many refs in one transaction, and every failure is a
`GitError` whose message is git's own error line plus what to do. No Python git library: the `git` on
PATH is what the user's remotes are set up for.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

from ..errors import SessionStoreError

ZERO = "0" * 40
"""What git calls the id of a ref that does not exist."""
_PAGE = 4096
"""The least a pipe buffers (Linux shrinks a pipe to one page when a user holds too many)."""

_STALE_LOCK = re.compile(r"Unable to create '([^']+\.lock)': File exists")
"""git's reason when a ref's lock file is there: another git holds it, or a killed one left it."""
_ADVICE = (
    "hint:",
    "warning:",
    "Please make sure you have the correct access rights",
    "and the repository exists",
)


class GitError(SessionStoreError):
    """`git` failed, is missing, or the path is not in a repository; the message says what to do."""


class RefLocked(GitError):
    """A ref git had to move was locked (`<ref>.lock` exists): another git is moving it, or a killed
    one left the lock; the message names the file."""


class Git:
    """Git commands run in one repository (the one holding the session store)."""

    def __init__(self, top: Path) -> None:
        self.top = top

    @classmethod
    def around(cls, path: Path) -> Git:
        """The repository whose work tree contains `path`; `GitError` if there is none."""
        probe = path if path.is_dir() else path.parent
        try:
            out = subprocess.run(
                ["git", "-C", str(probe), "rev-parse", "--show-toplevel"],
                capture_output=True,
                check=False,
            )
        except FileNotFoundError:
            raise GitError("git is not installed (no `git` on PATH): install git to push and pull") from None
        if out.returncode != 0:
            raise GitError(
                f"the store {path} is not inside a git repository: run `git init` in the project "
                "(or `git clone` it) to push and pull sessions"
            )
        return cls(Path(os.fsdecode(out.stdout.strip())))

    # -- one-shot commands ---------------------------------------------------------------------------

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        check: bool = True,
        what: str = "",
        fix: str = "",
        detach: bool = False,
    ) -> bytes:
        """stdout of `git ARGS` (bytes); a failure raises `GitError` with git's own reason (and `fix`).

        `detach` (for commands that move refs) starts git in its own session, so a kill of the caller's
        process group (Ctrl-C, `kill -9 -PGID`) lets git finish its ref update instead of leaving
        `<ref>.lock` behind, which would refuse every later update of that ref."""
        proc = subprocess.run(
            ["git", "-C", str(self.top), *args], input=input, capture_output=True, start_new_session=detach
        )
        if check and proc.returncode != 0:
            raise self.error(proc.stderr, what or f"git {args[0]}", fix)
        return proc.stdout

    @staticmethod
    def error(stderr: bytes, what: str, fix: str = "") -> GitError:
        """`GitError("<what> failed: <git's reason>[: <fix>]")`. The reason is git's first line that is
        not advice: git ends a failure with generic lines ("Please make sure you have the correct
        access rights / and the repository exists.") after the one that says what went wrong."""
        lines = [ln.strip() for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
        reasons = [ln for ln in lines if not ln.startswith(_ADVICE)]
        said = reasons[0] if reasons else lines[-1] if lines else "no message"
        for prefix in ("fatal: ", "error: "):
            said = said.removeprefix(prefix)
        if stale := _STALE_LOCK.search(said):  # not the remote's fault, whatever `fix` says
            return RefLocked(
                f"{what} failed: {said}: a git process is moving that ref, or was killed while it did: "
                f"when none is running, delete {stale[1]} and try again"
            )
        return GitError(f"{what} failed: {said}" + (f": {fix}" if fix else ""))

    @staticmethod
    def remote_fix(remote: str) -> str:
        """What to do when `remote` cannot be read or written."""
        return f"check its URL (`git remote get-url {remote}`) and that you can reach it"

    def objects_dir(self) -> Path:
        """The repository's object directory (`objects/` of its git dir, shared by its worktrees)."""
        out = self.run("rev-parse", "--git-path", "objects").decode().strip()
        return self.top / out  # relative to the top, unless git answers with an absolute path

    def remotes(self) -> list[str]:
        return self.run("remote").decode().split()

    def refs(self, prefix: str) -> dict[str, tuple[str, str]]:
        """{ref name below `prefix`: (commit id, subject)} of the local refs under `prefix` (ends in '/')."""
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)%00%(subject)", prefix)
        tips = {}
        for row in out.decode().splitlines():
            head, subject = row.split("\x00", 1)
            sha, ref = head.split(" ", 1)
            tips[ref[len(prefix) :]] = (sha, subject)
        return tips

    def ref_table(self, *prefixes: str) -> dict[str, tuple[str, str, str]]:
        """{full ref name: (object id, object type, subject)} of the local refs under any of `prefixes`,
        from one `for-each-ref` (the type says whether a ref is at a commit at all)."""
        fmt = "--format=%(objectname) %(objecttype) %(refname)%00%(subject)"
        table = {}
        for row in self.run("for-each-ref", fmt, *prefixes).decode().splitlines():
            head, subject = row.split("\x00", 1)
            sha, kind, ref = head.split(" ", 2)
            table[ref] = (sha, kind, subject)
        return table

    def commit_graph(self, tips: Iterable[str]) -> dict[str, tuple[list[str], str]]:
        """{commit: (parents, subject)} of every commit reachable from `tips` (commit ids), from one
        `git log --stdin`, so a caller walks many chains without a process per chain."""
        tips = list(tips)
        if not tips:  # `git log` with no revision would read HEAD's
            return {}
        out = self.run(
            "log", "--stdin", "--format=%H %P%x00%s", "--", input="".join(f"{t}\n" for t in tips).encode()
        )
        graph = {}
        for row in out.decode().splitlines():
            ids, subject = row.split("\x00", 1)
            sha, *parents = ids.split()
            graph[sha] = (parents, subject)
        return graph

    def ls_remote(self, remote: str, prefix: str) -> dict[str, str]:
        """{ref name below `prefix`: commit id} on `remote` (one connection, no objects fetched)."""
        out = self.run(
            "ls-remote",
            remote,
            f"{prefix}*",
            what=f"reading the refs of remote {remote!r}",
            fix=self.remote_fix(remote),
        )
        tips = {}
        for row in out.decode().splitlines():
            sha, ref = row.split("\t", 1)
            if ref.startswith(prefix):
                tips[ref[len(prefix) :]] = sha
        return tips

    def is_ancestor(self, old: str, new: str) -> bool:
        proc = subprocess.run(
            ["git", "-C", str(self.top), "merge-base", "--is-ancestor", old, new], capture_output=True
        )
        return proc.returncode == 0

    def chain(self, tip: str, *, exclude: Iterable[str] = ()) -> list[tuple[str, list[str], str]]:
        """(commit, parents, subject) from `tip` back to the root (or to `exclude`), oldest first."""
        args = ["log", "--reverse", "--format=%H %P%x00%s", tip, *(f"^{x}" for x in exclude), "--"]
        out = []
        for row in self.run(*args).decode().splitlines():
            ids, subject = row.split("\x00", 1)
            sha, *parents = ids.split()
            out.append((sha, parents, subject))
        return out

    def push(self, remote: str, specs: Sequence[str]) -> tuple[str, str]:
        """(stdout, stderr) of `git push --porcelain REMOTE SPECS` (never forced); the caller reads
        the per-ref verdicts, since one refused ref does not undo the others."""
        proc = subprocess.run(
            ["git", "-C", str(self.top), "push", "--porcelain", remote, *specs], capture_output=True
        )
        return proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")

    def update_refs(self, refs: dict[str, str]) -> None:
        """Move each ref to its commit in one `git update-ref --stdin` (one process for any number)."""
        if refs:
            self.run(
                "update-ref",
                "--stdin",
                input="".join(f"update {r} {new}\n" for r, new in refs.items()).encode(),
                detach=True,
            )

    def transaction(self, updates: Mapping[str, tuple[str, str]]) -> None:
        """Move every ref to its new id in one `update-ref --stdin` transaction (`start`, one `update ref
        new old` each, `prepare`, `commit`): all move or none does, and each only from the old id given
        (`ZERO`: the ref must not exist), so a concurrent change is refused, never overwritten. A
        refusal raises `GitError` (`RefLocked` for a lock file) and moves nothing. Detached, as `run`
        says, so a kill of the caller's process group cannot leave a `<ref>.lock`."""
        if updates:
            lines = "".join(f"update {ref} {new} {old}\n" for ref, (new, old) in updates.items())
            self.run(
                "update-ref", "--stdin", input=f"start\n{lines}prepare\ncommit\n".encode(),
                what="git update-ref", detach=True,
            )  # fmt: skip

    # -- streams ---------------------------------------------------------------------------------------

    def cat(self, specs: Iterable[str]) -> Iterator[bytes | None]:
        """The contents of each object named in `specs` (`<commit>:<path>` works), None if missing.

        One `git cat-file --batch`; a feeder thread writes the requests while this generator reads, so a
        long list never deadlocks on full pipes. Specs must not contain newlines.
        """
        proc = subprocess.Popen(
            ["git", "-C", str(self.top), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        specs = list(specs)

        def feed(stdin: BinaryIO) -> None:
            try:
                for spec in specs:
                    stdin.write(spec.encode() + b"\n")
                stdin.close()
            except (BrokenPipeError, ValueError):
                pass  # the reader stopped early (or git died): it reports that

        feeder = threading.Thread(target=feed, args=(proc.stdin,), daemon=True)
        feeder.start()
        out = proc.stdout
        try:
            for spec in specs:
                found = _answer(out, spec, self.top)
                yield found.data if found else None
        finally:
            out.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            feeder.join()

    def reader(self) -> CatFile:
        """A `CatFile` on this repository (use it as a context manager: it ends its process)."""
        return CatFile(self.top)


class Found(NamedTuple):
    """An object `cat-file` found: its id, type (`commit`, `tree`, `blob`, `tag`) and contents."""

    sha: str
    kind: str
    data: bytes


def _answer(out: BinaryIO, spec: str, top: Path) -> Found | None:
    """The next answer of `cat-file --batch` on `out`: the object, or None for `<spec> missing` (or
    `ambiguous`); `GitError` when git stopped before answering in full."""
    header = out.readline()
    if not header:
        raise GitError(f"git cat-file stopped before {spec!r}: run `git fsck` in {top}")
    fields = header.split()
    if fields[-1] == b"missing" or len(fields) != 3:
        return None
    size = int(fields[2])
    data = out.read(size + 1)
    if len(data) != size + 1:
        raise GitError(f"git cat-file stopped inside {spec!r}: run `git fsck` in {top}")
    return Found(fields[0].decode(), fields[1].decode(), data[:-1])


class CatFile:
    """One `git cat-file --batch` process, read in rounds: a caller that decides what to read next from
    what it read (a pull: the lines of a session, then the blobs they name, then the next session) asks
    the same process again instead of starting one per round. Not thread-safe; `close` (or the `with`
    block's end) ends the process."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, specs: Sequence[str]) -> list[Found | None]:
        """Each object named in `specs` (`<commit>:<path>`, `<id>^{commit}`, `<id>~<n>` work), None if
        missing: one round trip, every answer read before it returns (a feeder thread writes the
        requests, so neither pipe can fill and block the other side). Specs must not hold newlines."""
        if not specs:
            return []
        if self._proc is None:
            self._proc = subprocess.Popen(
                ["git", "-C", str(self.top), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        stdin = proc.stdin
        request = b"".join(spec.encode() + b"\n" for spec in specs)

        def feed() -> None:
            try:
                stdin.write(request)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # git died or the reader closed it: the reader reports that

        # A request that fits in the pipe's smallest buffer (one page) is written before git answers
        # anything, so it cannot block; a longer one is fed by a thread while this one reads.
        feeder = threading.Thread(target=feed, daemon=True) if len(request) > _PAGE else None
        if feeder is None:
            feed()
        else:
            feeder.start()
        try:
            return [_answer(proc.stdout, spec, self.top) for spec in specs]
        except BaseException:
            self.close()
            raise
        finally:
            if feeder is not None:
                feeder.join()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
