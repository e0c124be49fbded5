"""`session push` and `session pull`: sessions shared through any git remote (DESIGN §12)."""

from __future__ import annotations

import click

from ..porcelain.sharing.pull import pull
from ..porcelain.sharing.push import DEFAULT_REMOTE, DIVERGED, REJECTED, SKIPPED, Outcome, push
from .output import open_store, plural, say, store_path


def _say(outcome: Outcome) -> str:
    if outcome.status == DIVERGED:
        return (
            f"{outcome.name}: diverged from the remote; its commits are in session {outcome.into!r} "
            f"({plural(outcome.commits, 'commit')} new), yours stay in {outcome.name!r}"
        )
    if outcome.status == REJECTED:
        return f"{outcome.name}: rejected: {outcome.detail}"
    count = f" ({plural(outcome.commits, 'commit')})" if outcome.commits else ""
    return f"{outcome.name}: {outcome.status}{count}"


def _report(outcomes: list[Outcome], verb: str, remote: str = DEFAULT_REMOTE) -> int:
    if not outcomes:
        say(f"no sessions to {verb}")
    for outcome in outcomes:
        if outcome.status != SKIPPED:
            line = _say(outcome)
            say(f"session: {line}" if outcome.refused else line, err=outcome.refused)
    skipped = [o.name for o in outcomes if o.status == SKIPPED]
    if skipped:  # one line for all: a store that diverged often holds many copies
        them = "it" if len(skipped) == 1 else "one"
        say(
            f"skipped {len(skipped)} divergence {'copy' if len(skipped) == 1 else 'copies'} a pull made of "
            f"{remote}'s sessions ({', '.join(skipped)}): their commits are {remote}'s, already there; "
            f"name {them} to push it (`session push {remote} {skipped[0]}`)"
        )
    return 2 if any(o.refused for o in outcomes) else 0


@click.command("push")
@click.argument("remote", required=False, default=DEFAULT_REMOTE)
@click.argument("names", nargs=-1)
@click.option("--allow-secrets", is_flag=True, help="Push even what looks like a credential.")
@click.pass_context
def push_cmd(ctx: click.Context, remote: str, names: tuple[str, ...], allow_secrets: bool) -> int:
    """Send sessions (default: all) to REMOTE (default: origin) as refs/sessions/NAME.

    Never a non-fast-forward: a session the remote moved on is refused with the advice to pull.
    Without NAMES, a divergence copy a pull made of REMOTE's session is left out (its commits are
    REMOTE's already); name it to push it.
    What would be sent is scanned for credentials first; nothing is sent if one is found.

    \b
    Example:  session push origin fix-auth
    """
    store = open_store(ctx)
    return _report(push(store, remote, names, allow_secrets=allow_secrets), "push", remote)


@click.command("pull")
@click.argument("remote", required=False, default=DEFAULT_REMOTE)
@click.argument("names", nargs=-1)
@click.pass_context
def pull_cmd(ctx: click.Context, remote: str, names: tuple[str, ...]) -> int:
    """Fetch sessions (default: all) from REMOTE (default: origin) and fast-forward them.

    A session that diverged arrives as NAME-REMOTE-<short id>, complete; yours is left as it is.

    \b
    Example:  session pull origin fix-auth
    """
    existed = _store_exists(ctx)
    store = open_store(ctx, create=True)  # the first pull of a clone makes its store
    try:
        return _report(pull(store, remote, names), "pull")
    except BaseException:
        if not existed and not store.sessions():  # a bad remote, say: leave no empty store behind
            import shutil

            shutil.rmtree(store.root, ignore_errors=True)
        raise


def _store_exists(ctx: click.Context) -> bool:
    from pathlib import Path

    from ..porcelain.session.layout import default_root

    path = store_path(ctx)
    return (default_root() if path is None else Path(path)).exists()
