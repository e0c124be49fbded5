"""Session names, validated before any path is built from them (DESIGN §2), and store addresses."""

from __future__ import annotations

import os
import re
from collections.abc import Collection

from ..errors import InvalidSessionName, SessionStoreError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_valid_name(name: object) -> bool:
    """True when `name` may name a session (what `check_name` accepts)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None and ".." not in name


_NAMES = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}/)*")


def invalid_names(names: Collection[str]) -> set[str]:
    """The names among `names` that `is_valid_name` refuses (usually none): one match over them all
    joined by '/', which no name may hold, so a store of thousands is checked without a call per
    name."""
    joined = "/".join(names)
    if _NAMES.fullmatch(f"{joined}/" if names else "") is not None and ".." not in joined:
        return set()
    return {name for name in names if not is_valid_name(name)}


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


SCHEMES = ("s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "memory")
"""URL schemes a store may be opened at (obstore's `from_url`; `memory:` is a process's own store)."""


def refuse_mangled_url(path: os.PathLike[str]) -> None:
    """Refuse a path whose first part is a URL scheme (`s3:/bucket/x`: a URL made into a `Path`, which
    collapsed its `//`): it would create a local directory named `s3:`."""
    first = os.fspath(path).split("/", 1)[0]
    if first.endswith(":") and first[:-1].lower() in SCHEMES:
        raise SessionStoreError(
            f"{os.fspath(path)} looks like a URL turned into a path: pass the store as the text "
            f"'{first}//...' (a str, not a Path)"
        )
