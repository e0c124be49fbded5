"""Taking apart a file that git's merge left with conflict markers (a session log appended in two
clones, or a checkpoint ref both clones created): the two sides, each as it was in its clone.

A session log only grows, so a merge of two clones' copies is always "common prefix, then a hunk
holding ours and theirs" (git's diff3 style adds the base between `|||||||` and `=======`). Outside
the hunks both sides keep every line; inside, each keeps its own. Nothing here writes: fsck --repair
decides what becomes of the sides (DESIGN §2: ours stays NAME, theirs becomes NAME-<short id>).
"""

from __future__ import annotations

from .logs import is_conflict_marker


class UnresolvableConflict(ValueError):
    """Markers that do not form hunks git writes (say, an `=======` with no `<<<<<<<` before it)."""


def split_conflict(data: bytes) -> tuple[bytes, bytes]:
    """(ours, theirs): the bytes each side of the merge had, markers and the diff3 base dropped.

    `UnresolvableConflict` names the line when the markers are not balanced.
    """
    ours: list[bytes] = []
    theirs: list[bytes] = []
    state = "both"
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        bare = line.rstrip(b"\r\n")
        marker = bare[:7] if is_conflict_marker(bare) else b""
        expected = {
            b"<<<<<<<": state == "both",
            b"|||||||": state == "ours",
            b"=======": state in ("ours", "base"),
            b">>>>>>>": state == "theirs",
        }
        if marker and not expected[marker]:
            raise UnresolvableConflict(f"line {number}: {marker.decode()} where git writes none")
        if marker == b"<<<<<<<":
            state = "ours"
        elif marker == b"|||||||":
            state = "base"
        elif marker == b"=======":
            state = "theirs"
        elif marker == b">>>>>>>":
            state = "both"
        elif state == "both":
            ours.append(line)
            theirs.append(line)
        elif state == "ours":
            ours.append(line)
        elif state == "theirs":
            theirs.append(line)
    if state != "both":
        raise UnresolvableConflict("the file ends inside a conflict hunk (no closing >>>>>>>)")
    return b"".join(ours), b"".join(theirs)


def has_conflict(data: bytes) -> bool:
    """True when some line of `data` is a git conflict marker."""
    return any(is_conflict_marker(line.rstrip(b"\r")) for line in data.split(b"\n"))
