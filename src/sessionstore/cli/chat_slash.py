"""What `session chat` makes of a typed line: a message for the model, or a slash command (pure).

Slash commands are parsed before anything is sent, so a mistyped command never reaches the model: an
unknown `/word` is an error naming `/help`. A line starting with `//` sends the rest with one `/`
(for a message that must start with a slash). Blank lines do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

COMMANDS: dict[str, tuple[str, str]] = {
    "compact": ("[FOCUS]", "full compaction now (summary + recent tail, a checkpoint); only when idle"),
    "gauge": ("", "how full the context window is, as `session gauge` prints it"),
    "log": ("[N]", "the newest N commits of the session (default 10), as `session log --oneline`"),
    "checkout": ("REV", "move the head to REV (NAME@SEQ, @SEQ, ~K, an id, checkpoints/NAME/K)"),
    "fork": ("NEW", "start session NEW from the head and continue the chat in it"),
    "help": ("", "this list"),
    "exit": ("", "leave (Ctrl-D too); writes the session's MEMORY.md bullet if it changed"),
}
"""Each command's argument synopsis and one-line help, in the order `/help` lists them."""

_NEEDS_ARG = {"checkout", "fork"}
_NO_ARG = {"gauge", "help", "exit"}


@dataclass(frozen=True)
class Message:
    """Text to send to the model."""

    text: str


@dataclass(frozen=True)
class Command:
    """A slash command and its argument (None when none was given)."""

    name: str
    arg: str | None = None


@dataclass(frozen=True)
class Invalid:
    """A line that is neither: `error` is the one line to show; nothing is sent or changed."""

    error: str


Parsed = Message | Command | Invalid | None


def parse(line: str) -> Parsed:
    """`line` as a `Message`, a `Command`, an `Invalid` (with the line to print), or None (blank)."""
    text = line.strip()
    if not text:
        return None
    if text.startswith("//"):
        return Message(text[1:])
    if not text.startswith("/"):
        return Message(line.strip("\n"))
    body = text[1:]
    cut = next((i for i, c in enumerate(body) if c.isspace()), len(body))  # a newline ends it too
    word, rest = body[:cut], body[cut:]
    name, arg = word.lower(), rest.strip() or None
    if name == "quit":
        name = "exit"
    if name not in COMMANDS:
        return Invalid(f"unknown command /{word}: /help lists the commands (start with // to send a '/')")
    synopsis = COMMANDS[name][0]
    if name in _NEEDS_ARG and arg is None:
        return Invalid(f"/{name} needs {synopsis}: /{name} {synopsis}")
    if name in _NO_ARG and arg is not None:
        return Invalid(f"/{name} takes no argument (got {arg!r})")
    if name == "log" and arg is not None and not (arg.isdigit() and int(arg) > 0):
        return Invalid(f"/log takes a positive number of commits, not {arg!r}: /log 20")
    if name in _NEEDS_ARG and len(arg.split()) > 1:  # type: ignore[union-attr]
        return Invalid(f"/{name} takes one {synopsis}, not {arg!r}")
    return Command(name, arg)


def help_lines() -> list[str]:
    """The `/help` text: one line per command, then the keys."""
    width = max(len(f"/{n} {s}".rstrip()) for n, (s, _) in COMMANDS.items())
    lines = [f"  {f'/{n} {s}'.rstrip():<{width}}  {h}" for n, (s, h) in COMMANDS.items()]
    return [
        *lines,
        "  Ctrl-C cancels the running request (what is persisted stays); Ctrl-D leaves.",
        "  Any other line is sent to the model (start with // to send a line beginning with '/').",
    ]


def session_rev(rev: str, session: str) -> str:
    """A revision typed in the chat, relative to its session: `@3` and `~2` mean `SESSION@3`, `SESSION~2`."""
    return f"{session}{rev}" if rev[:1] in ("@", "~") else rev
