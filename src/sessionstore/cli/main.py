"""The `session` entry point: the click group, shared options and the one error boundary.

Commands load lazily: `COMMANDS`, the one table of commands, maps each name to the command object
that defines it, and only the invoked command's module is imported, so `session log`, `list` and
`gauge` start in about the time it takes to import click (they never import pydantic-ai).

Commands are typed functions that return an exit code (0 ok, 1 "changed something" / "checks failed",
2 refused), as pre-commit's `main(argv) -> int`; their click wrappers only parse. `_Group.invoke` is
the one error boundary: every `SessionStoreError` and `OSError` becomes one line on stderr (through
`output.error_line`) and exit 2, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import re
import signal
import sys
import threading
import warnings
from typing import Any

import click

from ..errors import SessionStoreError
from .output import error_line, is_terminal, say

COMMANDS: dict[str, str] = {
    "init": "store_cmds:init_cmd",
    "list": "store_cmds:list_cmd",
    "fsck": "store_cmds:fsck_cmd",
    "gc": "store_cmds:gc_cmd",
    "log": "history_cmds:log_cmd",
    "show": "history_cmds:show_cmd",
    "checkout": "history_cmds:checkout_cmd",
    "fork": "history_cmds:fork_cmd",
    "import": "transfer_cmds:import_cmd",
    "export": "transfer_cmds:export_cmd",
    "config": "accounting_cmds:config_cmd",
    "gauge": "accounting_cmds:gauge_cmd",
    "compact": "compaction_cmds:compact_cmd",
    "end": "compaction_cmds:end_cmd",
    "demo": "compaction_cmds:demo_cmd",
    "chat": "chat:chat_cmd",
    "memory": "memory_cmds:memory",
    "hooks": "memory_cmds:hooks",
    "push": "sharing_cmds:push_cmd",
    "pull": "sharing_cmds:pull_cmd",
    "search": "search_cmds:search_cmd",
    "diff": "search_cmds:diff_cmd",
    "rm": "naming_cmds:rm_cmd",
    "rename": "naming_cmds:rename_cmd",
    "completion": "naming_cmds:completion_cmd",
}
"""The one command table: each `session` command's name and where it is defined (`module:attribute`
in `sessionstore.cli`). `--help`, shell completion and the did-you-mean of a mistyped command read it;
only the invoked command's module is imported."""

EXIT_ERROR = 2
"""User mistakes and refused operations. Exit 1 is kept for 'it changed something' / 'checks failed'."""
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a writer killed by SIGPIPE (`git log | head` exits so too)."""
EXIT_INTERRUPTED = 130
"""What a shell reports for a command stopped by Ctrl-C (SIGINT)."""


class _Group(click.Group):
    """Lazy commands, and every `SessionStoreError` as one line on stderr with exit 2: no tracebacks."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, attribute = where.split(":")
        return _with_store_option(getattr(importlib.import_module(f"sessionstore.cli.{module}"), attribute))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, but a mistyped command suggests the close ones (`session lst`: did you mean
        `list`?), and one typed in the wrong case names the right one."""
        name = click.utils.make_str(args[0]) if args else ""
        if args and name not in COMMANDS and not name.startswith("-"):
            import difflib

            close = [c for c in COMMANDS if c.lower() == name.lower()] or difflib.get_close_matches(
                name, sorted(COMMANDS), n=3, cutoff=0.6
            )
            if close:
                shown = " or ".join(f"`session {c}`" for c in close)
                ctx.fail(f"no command {name!r}; did you mean {shown}?")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from ..plumbing import locks

        locks.on_wait = lambda line: say(f"session: {line}", err=True)  # names the holder's program
        shown, warnings.showwarning = warnings.showwarning, _warning_line
        came, previous = _track_sigint()
        try:
            try:
                code = super().invoke(ctx)
            except Exception:
                if came:  # Ctrl-C surfaced as another error: pydantic-core wraps one raised while it
                    raise KeyboardInterrupt from None  # builds a schema (the ~1 s pydantic-ai import)
                raise
        except KeyboardInterrupt:  # before click's handler, which prints an empty line first
            after_echo = "\n" if is_terminal(sys.stderr) else ""  # a terminal shows ^C: end its line
            click.echo(f"{after_echo}session: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except SessionStoreError as err:  # before OSError: LockTimeout is a TimeoutError too
            click.echo(error_line(err), err=True)
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:  # `session log | head`: the reader left; say nothing, as git does
            _silence_stdout()
            sys.exit(EXIT_BROKEN_PIPE)
        except OSError as err:  # the environment refused (permissions, a full disk): one line, no traceback
            click.echo(error_line(err), err=True)
            sys.exit(EXIT_ERROR)
        finally:
            locks.on_wait = None
            warnings.showwarning = shown
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        if isinstance(code, int) and code:
            sys.exit(code)
        return code


def _track_sigint() -> tuple[list[int], Any]:
    """Record each SIGINT (then raise `KeyboardInterrupt` as Python's own handler does), so an
    interrupt a library turned into another error is still seen as one; returns (the record, the
    handler to restore, None when none was replaced: a thread, or SIGINT ignored by the parent)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return came, None
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return came, None

    def record(signum: int, frame: Any) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    return came, signal.signal(signal.SIGINT, record)


def _warning_line(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """A warning (an unknown model's window, a failed compaction that kept the history) as one line on
    stderr, `session: warning: ...`, not Python's `file:line: UserWarning:` and a source line."""
    say(f"session: warning: {message}", err=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's buffer): nothing to flush
        pass


def _store_given(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Check a `--store` value and record it where every command reads it (`output.store_path`). The
    option is the same on the group and on every command (`session --store P list` and `session list
    --store P`); one given after the command wins over one given before it, or SESSIONSTORE_DIR."""
    recorded = ctx.find_root().ensure_object(dict)
    if value is None:
        recorded.setdefault("store_path", None)
        return
    from_env = ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.ENVIRONMENT
    hint = "SESSIONSTORE_DIR" if from_env else "'--store'"  # name what the user actually set
    if value == "":  # else Path("") is the cwd, and the errors would name a confusing "."
        raise click.BadParameter("is empty: give the store directory, or leave it out", param_hint=hint)
    if os.path.exists(value) and not os.path.isdir(value):
        raise click.BadParameter(f"{value} is a file, not a store directory", param_hint=hint)
    recorded["store_path"] = value


STORE_OPTION: dict[str, Any] = {
    "type": click.Path(path_type=str),
    "expose_value": False,
    "callback": _store_given,
    "help": "Store directory (default: .sessions at the git top level, else in the current directory).",
}
"""`--store`, as the group and every command in `COMMANDS` take it."""


def _with_store_option(command: click.Command) -> click.Command:
    """`command` (and each of its subcommands) taking `--store` too; once per command object."""
    if not any(p.name == "store_path" for p in command.params):
        command.params.append(click.Option(["--store", "store_path"], **STORE_OPTION))
    for sub in getattr(command, "commands", {}).values():
        _with_store_option(sub)
    return command


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--store", "store_path", envvar="SESSIONSTORE_DIR", **STORE_OPTION)
@click.option("--no-pager", is_flag=True, help="Never page long output (as `git --no-pager`).")
@click.version_option(package_name="sessionstore")
@click.pass_context
def cli(ctx: click.Context, no_pager: bool) -> None:
    """Git-style, file-backed memory for pydantic-ai agents."""
    ctx.ensure_object(dict)
    ctx.obj["no_pager"] = no_pager


def _command_path(argv: list[str]) -> str:
    """`session CMD [SUB]` as named on the command line (click gives no context for a missing option
    value), so the hint points at the help that documents the option."""
    words = [w for i, w in enumerate(argv) if not w.startswith("-") and (i == 0 or argv[i - 1] != "--store")]
    if not words or words[0] not in COMMANDS:
        return "session"
    group = cli.get_command(click.Context(cli), words[0])
    path = ["session", words[0]]
    if len(words) > 1 and isinstance(group, click.Group) and words[1] in group.commands:
        path.append(words[1])
    return " ".join(path)


def _one_line(message: str) -> str:
    """click's message on one line: a missing choice lists its values one per line."""
    return re.sub(r"\s*\n\s*", " ", message.strip())


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: click's usage errors, too, become one line and exit 2."""
    if os.environ.get("NO_COLOR"):
        os.environ.setdefault("CLICK_NO_COLOR", "1")
    try:
        code = cli.main(args=argv, prog_name="session", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as err:  # bare `session` (or `session memory`): the help,
        click.echo(err.ctx.get_help() if err.ctx else err.format_message(), err=True)  # not an error line
        sys.exit(EXIT_ERROR)
    except click.UsageError as err:
        where = err.ctx.command_path if err.ctx else _command_path(sys.argv[1:] if argv is None else argv)
        click.echo(f"session: {_one_line(err.format_message())} (see `{where} --help`)", err=True)
        sys.exit(EXIT_ERROR)
    except click.ClickException as err:
        click.echo(f"session: {_one_line(err.format_message())}", err=True)
        sys.exit(err.exit_code)
    except click.Abort:
        click.echo("session: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
