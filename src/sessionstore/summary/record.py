"""What a tool call did, read from its structured arguments and its return: no prose is interpreted.

A call reads a file when its arguments name one (`file_path`, `path`, ...) and carry nothing to write,
or when it is a shell command that prints a file (`cat`, `head`, `tail`, `sed -n`, ...); it changes
files when its arguments carry content to write (`content`, `new_string`, `edits`, ...) or a patch
(Codex's `apply_patch` names each file on a `*** Update File:` line); it runs a command when its
arguments hold one (`command`, `cmd`). A return failed when pydantic-ai says so (`outcome`), or when a
shell's header reports a non-zero exit code ("Process exited with code 1", Codex's format).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple, Protocol

import orjson
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryFeedbackPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.summary.boilerplate import clean
from sessionstore.summary.text import user_text

__all__ = ["Call", "Reader", "call_of", "exit_code", "failed", "walk"]

_PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file")
_WRITE_KEYS = ("content", "new_string", "old_string", "edits", "patch", "diff", "new_source", "contents")
_COMMAND_KEYS = ("command", "cmd")
_WRITES = frozenset(_WRITE_KEYS)
_KEYS = frozenset((*_PATH_KEYS, *_WRITE_KEYS, *_COMMAND_KEYS, "input", "patch"))
_PRINTERS = frozenset({"cat", "head", "tail", "sed", "less", "more", "bat", "nl", "type"})
_PATCH = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_QUOTING = frozenset("'\"\\")
_SHELL_BLANKS = " \t\r\n"
"""`shlex`'s whitespace: with nothing quoted or escaped, `shlex.split` splits on runs of these only."""
_SHELL_SPACE = re.compile(f"[{_SHELL_BLANKS}]+")
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?|exit code:?|exit status:?)\s*(-?\d+)")


class Call(NamedTuple):
    """One tool call: its name, the file it read, the files it changed, the command it ran."""

    tool: str
    read: str | None = None
    changed: tuple[str, ...] = ()
    command: str | None = None


def _args(part: ToolCallPart) -> dict[str, Any] | str:
    args = part.args
    if type(args) is dict:
        return args
    if isinstance(args, str):
        try:
            loaded = orjson.loads(args)
        except orjson.JSONDecodeError:
            return args
        return loaded if isinstance(loaded, dict) else args
    return args if isinstance(args, dict) else {}


def _printed(command: str) -> str | None:
    """The file a shell command prints: the last argument of `cat`/`head`/`sed -n ...`, when it is
    the whole command (no pipe or redirection)."""
    first = command.split(None, 1)[0] if command.strip() else ""
    if first.rsplit("/", 1)[-1] not in _PRINTERS or any(c in command for c in "|><;&"):
        return None
    if _QUOTING.isdisjoint(command):  # nothing quoted or escaped: shlex would split on its whitespace alone
        words = _SHELL_SPACE.split(command.strip(_SHELL_BLANKS))
    else:
        try:
            words = shlex.split(command)
        except ValueError:
            return None
    if len(words) < 2 or words[0].rsplit("/", 1)[-1] not in _PRINTERS or words[-1].startswith("-"):
        return None
    return words[-1]


def call_of(part: ToolCallPart) -> Call:
    """What `part` does, from its arguments (see the module docstring)."""
    args = _args(part)
    if isinstance(args, str):
        return Call(part.tool_name, changed=_patched(args))
    keys = args.keys() & _KEYS
    if not keys:
        return _plain(part.tool_name)  # a tool with other arguments (an id, a query): nothing to read
    path = _first(args, _PATH_KEYS, keys)
    command = _first(args, _COMMAND_KEYS, keys)
    if command is None and isinstance(args.get("command"), list):
        command = " ".join(str(w) for w in args["command"])
    patch = _first(args, ("input", "patch"), keys)
    changed = _patched(patch) if patch else ()
    if path is not None and keys & _WRITES:
        return Call(part.tool_name, changed=(path, *changed))
    if path is not None:
        return Call(part.tool_name, read=path, changed=changed)
    if command is not None:
        return Call(part.tool_name, read=_printed(command), changed=changed, command=command)
    return Call(part.tool_name, changed=changed)


@cache
def _plain(tool: str) -> Call:
    return Call(tool)


def _first(args: dict[str, Any], names: tuple[str, ...], keys: set[str]) -> str | None:
    for name in names:
        if name in keys and isinstance(args[name], str) and args[name]:
            return args[name]
    return None


def _patched(patch: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in _PATCH.findall(patch)) if "*** " in patch else ()


def exit_code(part: ToolReturnPart) -> int | None:
    """The exit code a shell return reports in its first lines, if it does."""
    content = part.content
    if not isinstance(content, str):
        return None
    head = content[:300]
    if "code" not in head and "status" not in head:
        return None  # the cheap test first: most returns say nothing of an exit
    found = _EXIT.search(head)
    return int(found.group(1)) if found else None


def failed(part: ToolReturnPart, *, command: bool = True) -> bool:
    """Whether the call failed: pydantic-ai's outcome says so, or (`command`: the call ran a shell
    command) a non-zero exit code."""
    return part.outcome != "success" or (command and bool(exit_code(part)))


class Reader(Protocol):
    """What `walk` feeds (work_log.Log, file_rules.Scanner, user_words.Prompts): a reader defines the
    methods for the parts it wants, any of `prompt`, `returned`, `retried` and `response`."""


def walk(messages: Iterable[ModelMessage], *readers: Reader) -> None:
    """Feed every message of `messages` to `readers`, in order, once: each user prompt with its text
    cleaned of injected blocks (boilerplate.clean, once for all readers), each tool return, each
    retry, and each response with what each of its tool calls did (`call_of`, once for all readers).
    One pass over the history builds every mechanical section; a reader is called only for the parts
    it has a method for."""
    prompts = [f for r in readers if (f := getattr(r, "prompt", None)) is not None]
    returns = [f for r in readers if (f := getattr(r, "returned", None)) is not None]
    retries = [f for r in readers if (f := getattr(r, "retried", None)) is not None]
    responses = [f for r in readers if (f := getattr(r, "response", None)) is not None]
    for msg in messages:
        if type(msg) is ModelResponse:
            calls = [(part, call_of(part)) for part in msg.parts if type(part) is ToolCallPart]
            for respond in responses:
                respond(msg, calls)
            continue
        for part in msg.parts:
            kind = type(part)
            if kind is ToolReturnPart:
                for give in returns:
                    give(part)
            elif kind is UserPromptPart:
                cleaned = clean(user_text(part))
                for give in prompts:
                    give(cleaned)
            elif kind is RetryFeedbackPart:
                for give in retries:
                    give(part)
