"""Session names: validated before any path is built from them (DESIGN §2)."""

from __future__ import annotations

import re

from ..errors import InvalidSessionName

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_valid_name(name: object) -> bool:
    """True when `name` may name a session (what `check_name` accepts)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None and ".." not in name


def check_name(name: object) -> str:
    """Return `name` if it is a valid session name, else raise `InvalidSessionName`."""
    if not isinstance(name, str):
        raise InvalidSessionName(f"a session name is a string like 'fix-auth', not {type(name).__name__}")
    if not is_valid_name(name):
        raise InvalidSessionName(
            f"invalid session name {name!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..'"
        )
    return name
