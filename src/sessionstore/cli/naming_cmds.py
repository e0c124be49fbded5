"""`session rm`, `session rename` and `session completion`: names, titles and the shell."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..porcelain.history import naming
from .output import (
    complete_session,
    fail,
    json_options,
    open_store,
    print_json,
    relative_time,
    require_session,
    say,
)

if TYPE_CHECKING:
    from ..porcelain.store import SessionStore

SHELLS = ("bash", "zsh", "fish")


def _when(stamp: str) -> str:
    """A trash stamp (20261201T094102123456Z) as '12 min ago'."""
    iso = f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"
    return relative_time(iso)


def rm(
    store: SessionStore,
    name: str | None,
    *,
    undo: bool = False,
    listing: bool = False,
    fmt: str | None = None,
) -> int:
    """`session rm`: move a session to the trash, put it back (`undo`), or list the trash; exit 0."""
    if listing:
        entries = naming.removed(store, name)
        if fmt == "json":
            print_json([{"name": e.name, "removed": e.when, "path": str(e.path)} for e in entries])
        elif not entries:
            click.echo("no removed sessions", err=True)
        for e in entries if fmt != "json" else ():
            say(f"{e.name}  removed {_when(e.when)}  (`session rm --undo {e.name}`)")
        return 0
    if name is None:
        raise fail("give the NAME of the session to remove (or --list)")
    if undo:
        entry = naming.undo_remove(store, name)
        if fmt == "json":
            print_json({"name": name, "restored": True, "removed": entry.when})
        else:
            click.echo(f"restored {name} (removed {_when(entry.when)})")
        return 0
    name = require_session(store, name)
    entry = naming.remove(store, name)
    if fmt == "json":
        print_json({"name": name, "restored": False, "removed": entry.when, "path": str(entry.path)})
    else:
        click.echo(
            f"removed {name}; `session rm --undo {name}` brings it back until `session gc` removes its "
            "blobs (once older than its grace period, 14 days by default)"
        )
    return 0


@click.command("rm")
@click.argument("name", required=False, shell_complete=complete_session)
@click.option("--undo", is_flag=True, help="Restore the most recently removed session NAME.")
@click.option("--list", "listing", is_flag=True, help="List removed sessions that can be restored.")
@json_options(stream=False)
@click.pass_context
def rm_cmd(ctx: click.Context, name: str | None, undo: bool, listing: bool, fmt: str | None) -> int:
    """Remove session NAME: its log and checkpoints go to the store's trash, its blobs wait for gc.

    Reversible with `session rm --undo NAME` until `session gc` has removed its blobs (older than its
    grace period), as git's reflog keeps a deleted branch.

    \b
    Example:  session rm spike && session rm --undo spike
    """
    return rm(open_store(ctx), name, undo=undo, listing=listing, fmt=fmt)


def rename(
    store: SessionStore, old: str, new: str | None, *, title: str | None = None, fmt: str | None = None
) -> int:
    """`session rename`: rename `old` to `new` and/or set its title; exit 0."""
    old = require_session(store, old)  # first: the hint below shows the name
    if new is None and title is None:
        raise fail(f"give the NEW name, or --title TEXT (e.g. `session rename {old} {old}-v2`)")
    name = old
    if new is not None:
        naming.rename(store, old, new)
        name = new
    if title is not None:
        naming.set_title(store, name, title)
    if fmt == "json":
        print_json({"old": old, "name": name, "title": naming.title(store, name)})
        return 0
    if new is not None:
        click.echo(f"renamed {old} to {name} (its checkpoints too)")
    if title is not None:
        shown = naming.title(store, name)
        click.echo(
            f"{name}: title {'set to ' + repr(shown) if title.strip() else 'cleared; now ' + repr(shown)}"
        )
    return 0


@click.command("rename")
@click.argument("old", shell_complete=complete_session)
@click.argument("new", required=False)
@click.option("--title", help="Set the title `session list` shows ('' goes back to the derived one).")
@json_options(stream=False)
@click.pass_context
def rename_cmd(ctx: click.Context, old: str, new: str | None, title: str | None, fmt: str | None) -> int:
    """Rename session OLD to NEW, atomically, with its checkpoint refs; or set its title.

    \b
    Example:  session rename 3fe1b6bc-dbd0-4320-b980-4f147befa187 fix-auth
              session rename fix-auth --title "expired-token tests"
    """
    return rename(open_store(ctx), old, new, title=title, fmt=fmt)


def completion(cli: click.Command, shell: str) -> int:
    """`session completion`: `cli`'s completion script for `shell`, for `eval` or a completions file."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # click.Choice already refuses others; kept for a click without one of them
        raise fail(f"no completion for {shell!r}: use one of {', '.join(SHELLS)}")
    click.echo(cls(cli, {}, "session", "_SESSION_COMPLETE").source())
    return 0


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_cmd(ctx: click.Context, shell: str) -> int:
    """Print the shell completion script (session names and revisions complete too).

    \b
    Examples: eval "$(session completion bash)"            (in ~/.bashrc)
              eval "$(session completion zsh)"             (in ~/.zshrc)
              session completion fish > ~/.config/fish/completions/session.fish
    """
    return completion(ctx.find_root().command, shell)
