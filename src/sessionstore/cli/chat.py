"""`session chat NAME [--agent MODULE:ATTR] [--model MODEL]`: talk to a pydantic-ai agent on a session
(your own with `--agent`, as pydantic-ai's `clai --agent`; a bare one on `--model`), gauge in the footer.

On a terminal, prompt_toolkit (the optional extra `sessionstore[chat]`) reads lines while a turn runs,
draws the footer (`Chat.footer`: gauge, model, head) as its bottom toolbar, and turns Ctrl-C into
`Chat.interrupt` (cancel the running request) and Ctrl-D into leaving. With stdin not a terminal
(a pipe, a script), lines are read one by one, each turn finishes before the next line is read, and
the footer is printed after each turn: the same commands, no prompt_toolkit needed.

The session resumes from its latest checkpoint (the newest reset point and the turns after it: what
`Session` loads); leaving writes its MEMORY.md bullet when the chat moved its head.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from .list_filters import last_option, named_or_last
from .output import colour_enabled, fail, is_terminal, open_store, plural, printable, short_id

if TYPE_CHECKING:
    from ..porcelain.session.session import Session
    from .chat_core import Chat

INSTALL_HINT = "pip install 'sessionstore[chat]'"


@click.command("chat")
@click.argument("name", required=False)
@last_option
@click.option("--new", is_flag=True, help="Start session NAME even when an existing name is close to it.")
@click.option(
    "--model",
    default="test",
    show_default=True,
    help="A pydantic-ai model string (e.g. openai:gpt-4o; keys from the environment), or offline: "
    "test (pydantic-ai TestModel) or demo (the scripted coder of `session demo`). With --agent, "
    "replaces the agent's own model.",
)
@click.option(
    "--agent",
    "agent_spec",
    metavar="MODULE:ATTR",
    default=None,
    help="Your own pydantic-ai agent (its tools, instructions and output type), as `clai --agent` takes "
    "it: module:attribute, the module imported from the current directory, or an agent spec file "
    "(.yaml/.json).",
)
@click.option(
    "--recall",
    is_flag=True,
    help="Give the agent the session's own tools: recall (any message a summary replaced, verbatim) and "
    "compact (a checkpoint before its next request).",
)
@click.pass_context
def chat_cmd(
    ctx: click.Context,
    name: str | None,
    last: bool,
    new: bool,
    model: str,
    agent_spec: str | None,
    recall: bool,
) -> int:
    """Chat with an agent on session NAME (created if new), resuming from its latest checkpoint.

    A NAME close to an existing one (a typo) is asked about on a terminal and refused from a pipe,
    never silently started: --new starts it. --last chats in the most recent session.

    The footer shows the context gauge, the model and the head, refreshed after every request. Slash
    commands: /compact [FOCUS], /gauge, /log [N], /checkout REV, /fork NEW, /help, /exit.

    \b
    Examples:
      session chat demo --model test
      session chat support --agent myagents:support      (myagents.py in this directory)
    """
    which = named_or_last(name, last, "NAME")  # a usage error first, before a store or a model
    if sys.stdin is None:  # `session chat NAME <&-`
        raise fail(
            "stdin is closed: session chat reads what you say from it; pipe lines in or run it in a terminal"
        )
    interactive = is_terminal(sys.stdin) and is_terminal(sys.stdout)
    if interactive:
        try:
            import prompt_toolkit  # noqa: F401
        except ImportError:
            raise fail(f"session chat on a terminal needs prompt_toolkit: {INSTALL_HINT}") from None
    import pydantic_ai

    from .chat_core import Chat
    from .chat_models import chat_agent

    pydantic_ai.BANNER_ENABLED = False  # the chat owns the terminal: the footer says what runs
    given = ctx.get_parameter_source("model") is not click.core.ParameterSource.DEFAULT
    store = open_store(ctx)
    name = _chat_name(store, which(store), last=last, new=new, ask=interactive)
    with chat_agent(model, agent_spec, model_given=given) as chosen:
        store = open_store(ctx, overrides=chosen.settings)  # the store's own settings, then the model's
        session = store.session(name)
        out = _printer()
        with _notes(out):
            chat = Chat(store, session, chosen.agent, chosen.label, out, recall=recall)
            out(_banner(session, chosen.label, store.root, interactive))
            _run(_interactive(chat) if interactive else _piped(chat))
    return 0


def _chat_name(store: Any, chosen: str, *, last: bool, new: bool, ask: bool) -> str:
    """The session to chat in: NAME as given (with --new, or when it exists or is like no other name),
    the session it uniquely starts or a conversation id names, or, for a NAME close to an existing
    one, the choice the person makes (`ask`: on a terminal) or a refusal naming both ways."""
    from ..plumbing.names import check_name
    from ..porcelain.history.lookup import session_named

    if last:
        return chosen
    check_name(chosen)
    if new or store.exists(chosen):
        return chosen
    if (found := session_named(store, chosen)) is not None:
        return found
    close = store.close_names(chosen)
    if not close:
        return chosen  # like no existing name: a new session, as asked
    if not ask:
        raise fail(
            f"no session {chosen!r}; did you mean {close[0]!r}? `session chat {close[0]}` chats in it, "
            f"`session chat {chosen} --new` starts {chosen!r}"
        )
    answer = click.prompt(
        f"no session {chosen!r}; did you mean {close[0]!r}? y: chat in {close[0]!r}, n: start {chosen!r}",
        type=click.Choice(["y", "n"]),
        default="y",
    )
    return close[0] if answer == "y" else chosen


def _run(main: Coroutine[Any, Any, None]) -> None:
    """`asyncio.run(main)` under Python's own SIGINT handler (`session` records Ctrl-C with one of
    its own): only then does asyncio take Ctrl-C as its own, cancelling the chat at an await."""
    handler = signal.getsignal(signal.SIGINT)
    swap = callable(handler) and handler is not signal.default_int_handler
    swap = swap and threading.current_thread() is threading.main_thread()
    if swap:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        asyncio.run(main)
    finally:
        if swap:
            signal.signal(signal.SIGINT, handler)


def _printer() -> Callable[[str], None]:
    def out(line: str) -> None:  # the model's words and tool names shown, never acted on
        text = "\n".join(printable(piece, tabs=True) for piece in line.split("\n"))
        print(text, flush=True)  # under patch_stdout this lands above the prompt

    return out


@contextmanager
def _notes(out: Callable[[str], None]) -> Iterator[None]:
    """Warnings (an unknown model's window, a failed compaction) as one `note:` line each."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")

        def show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None):
            out(f"note: {message}")

        warnings.showwarning = show
        yield


def _banner(session: Session, label: str, root: Any, interactive: bool) -> str:
    head = session.head
    if head is None:
        state = "new session"
    else:
        commits = session.log()
        since = next((i for i, c in enumerate(commits) if c.is_reset), None)
        turns = since if since is not None else len(commits)
        if since is not None and commits[since].kind == "compaction":
            k = commits[since].extra.get("checkpoint")
            origin = f"checkpoints/{session.name}/{k} + {plural(turns, 'turn')}"
        elif since is not None:
            origin = f"the {commits[since].kind} {short_id(commits[since].id)} + {plural(turns, 'turn')}"
        else:
            origin = plural(turns, "turn")
        state = f"resumed {plural(session.persisted_count, 'message')} from {origin}"
    keys = "/help lists the commands, Ctrl-D leaves" if interactive else "/help lists the commands"
    return f"chat on {session.name!r} ({root}): {state} · model {label} · {keys}"


async def _piped(chat: Chat) -> None:
    """Lines from a pipe: each turn runs to its end before the next line is read."""
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            break
        if not await chat.handle(line):
            break
        if chat.job is not None:
            await chat.job
            chat.job = None
            chat.out(f"── {chat.footer_text()}")
    await chat.close()


async def _interactive(chat: Chat) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.patch_stdout import patch_stdout
    from prompt_toolkit.styles import Style

    prompt: PromptSession[str] = PromptSession(
        bottom_toolbar=lambda: FormattedText(chat.footer()),
        refresh_interval=0.5,
        style=Style.from_dict({"bottom-toolbar": "noreverse bg:ansiblack fg:ansiwhite"}),
        color_depth=None if colour_enabled() else _mono(),
    )

    def invalidate() -> None:
        if prompt.app.is_running:
            prompt.app.invalidate()

    chat.invalidate = invalidate
    with patch_stdout(raw=True):
        while True:
            try:
                line = await prompt.prompt_async("> ")
            except KeyboardInterrupt:
                chat.interrupt()
                continue
            except EOFError:
                break
            if not await chat.handle(line):
                break
        await chat.close()


def _mono() -> Any:
    from prompt_toolkit.output import ColorDepth

    return ColorDepth.MONOCHROME
