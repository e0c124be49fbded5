"""MEMORY.md merges by structure: each heading once, every line under the heading it was written under.

git's `merge=union` keeps both sides of a conflicting hunk, line by line, so when two clones add bullets
in neighbouring sections it can repeat a heading (`## Session notes` twice) and file one side's Gotchas
bullet under the other side's Session notes. Two tools here:

- `merge_three(base, ours, theirs)`, the merge driver `session hooks install` registers: a three-way
  merge per section. A unit (a bullet with its sub-bullets, a paragraph, a code block, a table) that
  one side added is added under its own heading, after ours (newest last); one that one side deleted
  and the other kept unchanged is deleted; duplicates go. The caps are applied by the caller.
- `merge_duplicate_headings(lines)`, what `session memory squash` runs on every file: sections whose
  headings say the same (level and title, any case) UNDER THE SAME PARENTS become one, at the first
  one's place, their units in file order, their subsections after them. It cannot tell where a
  misfiled line belongs; only the driver can.

A section's identity is its heading's whole path, never its text alone: `### From conftest.py` under
`## Key Fixtures` and `### From conftest.py` under `## Assertion Helpers` are two sections, and both
stay where they are. The driver matches sections across versions by the same path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dedupe import Shrunk
from .document import Unit, heading_of, parse_units

Key = tuple[tuple[int, str], ...] | None
"""A section's identity: the (heading level, casefolded title) of its heading and of every heading it
sits under, outermost first; None for the text before any heading."""


@dataclass
class Section:
    key: Key
    heading: Unit | None
    body: list[Unit] = field(default_factory=list)

    @property
    def title(self) -> str:
        """The casefolded heading title ("" for the text before any heading)."""
        return self.key[-1][1] if self.key else ""

    def content(self) -> list[Unit]:
        """The body without its leading and trailing blank lines."""
        body = list(self.body)
        while body and body[0].kind == "blank":
            body.pop(0)
        while body and body[-1].kind == "blank":
            body.pop()
        return body

    def opens_with_blank(self) -> bool:
        return bool(self.body) and self.body[0].kind == "blank"


def split_sections(lines: list[str]) -> list[Section]:
    """The sections of `lines` in order (a preamble section first when text precedes every heading)."""
    out: list[Section] = []
    open_path: tuple[tuple[int, str], ...] = ()  # the headings the next line sits under
    for unit in parse_units(lines):
        if unit.kind == "heading":
            parsed = heading_of(unit.lines[0])
            assert parsed is not None
            depth = parsed[0]
            while open_path and open_path[-1][0] >= depth:  # a heading closes those at its depth or deeper
                open_path = open_path[:-1]
            open_path = (*open_path, (depth, parsed[1].casefold()))
            out.append(Section(open_path, unit))
        elif not out:
            out.append(Section(None, None, [unit]))
        else:
            out[-1].body.append(unit)
    return out


def _identity(unit: Unit) -> str:
    return "\n".join(line.rstrip() for line in unit.lines)


def _closed(fence: Unit) -> bool:
    marker = fence.lines[0].strip()
    run = len(marker) - len(marker.lstrip(marker[0]))
    return len(fence.lines) > 1 and fence.lines[-1].strip().startswith(marker[0] * run)


def render(sections: list[Section]) -> list[str]:
    """Lines of `sections`: each heading, a blank under it when it had one, its content, and one
    blank line between sections. A code block left open (it ran to the end of its file) is closed
    when something now follows it, which would otherwise become part of it."""
    out: list[str] = []
    for i, section in enumerate(sections):
        if section.heading is not None:
            out.extend(section.heading.lines)
        content = section.content()
        if content and section.opens_with_blank():
            out.append("")
        for unit in content:
            out.extend(unit.lines)
            if (
                unit.kind == "fence"
                and not _closed(unit)
                and (i + 1 < len(sections) or unit is not content[-1])
            ):
                out.append(unit.lines[0].strip()[:3])  # else it would swallow what follows it
        if i + 1 < len(sections) and (content or section.opens_with_blank()):
            out.append("")
    return out


def _grouped(sections: list[Section]) -> list[Section]:
    """Sections with repeated keys folded into the first of each key, content in file order, and
    each placed under its own parent: a repeated `## A` brings its subsections to the first `## A`
    (after those it had), never leaves them under whatever section now precedes them."""
    by_key: dict[Key, Section] = {}
    children: dict[Key, list[Key]] = {}
    for section in sections:
        first = by_key.get(section.key)
        if first is None:
            by_key[section.key] = Section(section.key, section.heading, list(section.body))
            parent = section.key[:-1] if section.key else ()  # () is the top: the file itself
            children.setdefault(parent, []).append(section.key)
            continue
        keep = first.content()
        lead = [Unit("blank", ("",), -1)] if first.opens_with_blank() or section.opens_with_blank() else []
        first.body = lead + keep + section.content()

    def ordered(parent: Key) -> list[Key]:
        # First appearance, deeper headings first: `### X` directly under `# T` must precede T's
        # `## A`, or it would read as A's. In one file's own order they already do (stable sort).
        kids = children.get(parent, [])
        return sorted(kids, key=lambda k: -k[-1][0] if k else -7)

    out: list[Section] = []
    pending: list[Key] = ordered(())[::-1]
    while pending:  # depth first
        key = pending.pop()
        out.append(by_key[key])
        if key:
            pending.extend(ordered(key)[::-1])
    return out


def merge_duplicate_headings(lines: list[str]) -> Shrunk:
    """`lines` with each heading once; `removed` lists the repeated heading lines that went."""
    sections = split_sections(lines)
    keys = [s.key for s in sections]
    if len(set(keys)) == len(keys):
        return Shrunk(list(lines), [])
    seen: set[Key] = set()
    removed: list[str] = []
    for section in sections:
        if section.key in seen and section.heading is not None:
            removed.extend(section.heading.lines)
        seen.add(section.key)
    grouped = _grouped(sections)
    for section in grouped:
        section.body = _deduped(section.body, removed)
    return Shrunk(_settled(render(grouped), removed), removed)


def _settled(lines: list[str], removed: list[str]) -> list[str]:
    """Dedupe again until nothing changes: joining sections can re-attach an indented line that opened
    one to the bullet now above it, making a unit that repeats another (lines only ever go)."""
    while True:
        sections = split_sections(lines)
        for section in sections:
            section.body = _deduped(section.body, removed)
        again = render(sections)
        if again == lines:
            return lines
        lines = again


def _deduped(body: list[Unit], removed: list[str]) -> list[Unit]:
    """`body` with each repeated unit kept at its last place (lower is newer) and blank runs made one;
    what went is added to `removed`."""
    seen: set[str] = set()
    keep: list[Unit] = []
    for unit in reversed(body):
        if unit.kind == "blank":
            if keep and keep[-1].kind == "blank":
                continue
        elif (key := _identity(unit)) in seen:
            removed.extend(unit.lines)
            continue
        else:
            seen.add(key)
        keep.append(unit)
    return keep[::-1]


def merge_three(base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    """The structured three-way merge of three versions of a MEMORY.md (the caps are not applied).

    Section order is ours, with a section only theirs has placed after the section it follows in
    theirs (before the one it precedes, when it comes first; at the end, when theirs shares none).
    Within a section: our units, less those theirs deleted (present in base, absent from theirs),
    then theirs' additions (absent from base and ours), in their order. A section one side
    removed whole while the other left it as in base is removed; one changed on the kept side stays.
    """
    b = {s.key: s for s in _grouped(split_sections(base))}
    o_list = _grouped(split_sections(ours))
    t_list = _grouped(split_sections(theirs))
    o = {s.key: s for s in o_list}
    t = {s.key: s for s in t_list}
    order = [s.key for s in o_list]
    for i, section in enumerate(t_list):
        if section.key in o:
            continue
        before = [t_list[j].key for j in range(i - 1, -1, -1) if t_list[j].key in order]
        after = [t_list[j].key for j in range(i + 1, len(t_list)) if t_list[j].key in order]
        at = order.index(before[0]) + 1 if before else order.index(after[0]) if after else len(order)
        order.insert(0 if section.key is None else at, section.key)  # text before any heading stays so
    merged: list[Section] = []
    for key in order:
        section = _merge_section(b.get(key), o.get(key), t.get(key))
        if section is not None:
            section.body = _deduped(section.body, [])
            merged.append(section)
    return _settled(render(_grouped(merged)), [])  # parents before their subsections


def _merge_section(base: Section | None, ours: Section | None, theirs: Section | None) -> Section | None:
    def ids(section: Section | None) -> list[str]:
        return [_identity(u) for u in section.content() if u.kind != "blank"] if section else []

    if ours is None or theirs is None:
        kept = ours or theirs
        assert kept is not None
        if base is not None and ids(kept) == ids(base):
            return None  # one side removed the section, the other did not touch it
        return kept
    in_base, in_ours, in_theirs = set(ids(base)), set(ids(ours)), set(ids(theirs))
    content = [u for u in ours.content() if u.kind == "blank" or _identity(u) not in in_base - in_theirs]
    added = [
        u
        for u in theirs.content()
        if u.kind != "blank" and _identity(u) not in in_base and _identity(u) not in in_ours
    ]
    while content and content[-1].kind == "blank":
        content.pop()
    lead = [Unit("blank", ("",), -1)] if ours.opens_with_blank() else []
    return Section(ours.key, ours.heading, lead + content + added)
