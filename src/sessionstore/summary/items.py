"""What the extraction finds: typed items and the collection of them (DESIGN §7).

`Item` is one thing a summary must keep (a rule, a fact, a decision, ...), with the values its text
binds and the subject it binds them to; `resolve` (extraction.py) marks an item superseded and links
it to the item that replaced it. `Extraction` holds the items plus the goal, requests, files,
commands and identifiers; its methods say what is current: items nothing superseded, and files no
user correction, rename or "stop touching" retired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sessionstore.summary.values import is_path, stated, subject, values

__all__ = ["Extraction", "Item"]


@dataclass
class Item:
    """One thing to keep: its kind, its words as the transcript said them, and what they bind."""

    kind: str  # constraint | fact | decision | conclusion | question | blocked | done
    text: str
    order: int
    source: str = "user"  # user | assistant | tool | summary
    values: tuple[str, ...] = ()
    subject: str | None = None
    superseded: bool = False
    replaced_by: Item | None = field(default=None, repr=False, compare=False)
    """The later item that superseded this one (`resolve`); it may sit in the verbatim tail."""

    def successor(self) -> Item | None:
        """The item that is current in this one's place: `replaced_by`, followed while superseded."""
        seen: set[int] = set()
        nxt = self.replaced_by
        while nxt is not None and nxt.superseded and nxt.replaced_by is not None and id(nxt) not in seen:
            seen.add(id(nxt))
            nxt = nxt.replaced_by
        return nxt


@dataclass
class Extraction:
    """Everything `extract` found, plus what a previous summary carried (render.parse_summary)."""

    messages: int = 0
    goal: str = ""
    earlier_goals: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    in_progress: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    pasted: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    """Paths the user said are done with (`values.retired_paths`), unless taken up again later."""
    moved: dict[str, str] = field(default_factory=dict)
    """{old path: the path the user renamed or moved it to} (`values.moves`), the latest rename kept."""
    counter: int = 0

    def add(self, kind: str, text: str, source: str) -> Item:
        """Append an item (values and subject derived from its text), numbered after all earlier ones."""
        text = " ".join(text.split())
        found = values(text)
        self.counter += 1
        item = Item(kind, text, self.counter, source, tuple(found), subject(text, found))
        self.items.append(item)
        return item

    def current(self, kind: str, source: str | None = None) -> list[Item]:
        """Items of `kind` (and `source`) that no later item superseded, oldest first."""
        return [
            i
            for i in self.items
            if i.kind == kind and not i.superseded and (source is None or i.source == source)
        ]

    def superseded(self) -> list[Item]:
        return [i for i in self.items if i.superseded]

    def retired_files(self) -> list[str]:
        """Paths no longer current: retired by the user (and mentioned in `files`), or a value only
        superseded items state (the config file before its correction); in order of first mention."""
        bound = [i for i in self.items if i.kind in ("constraint", "fact") and i.source != "tool"]
        current = {v for i in bound if not i.superseded for v in stated(i.text, list(i.values))}
        old = {v for i in self.superseded() for v in stated(i.text, list(i.values)) if is_path(v)}
        order = {p: n for n, p in reversed(list(enumerate(self.files)))}
        out = {p for p in self.retired if p in order} | (old - current)  # mentioned in this part
        return sorted(out, key=lambda p: (order.get(p, len(order)), p))

    def replacement(self, path: str) -> str | None:
        """The path current in retired `path`'s place: its rename's target (`moved`) or its correction's
        path (the successor of a superseded item stating it), followed while that one is retired too;
        None when nothing replaced it ("stop touching a.py") or `path` is current."""
        gone = set(self.retired) | set(self.retired_files())
        seen = {path}
        now: str | None = None
        while path in gone:
            nxt = self.moved.get(path) or self._corrected(path)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            now = path = nxt
        return now

    def _corrected(self, path: str) -> str | None:
        for item in self.superseded():
            successor = item.successor()
            if successor is not None and path in stated(item.text, list(item.values)):
                new = [v for v in stated(successor.text, list(successor.values)) if is_path(v)]
                if len(new) == 1 and new[0] != path:
                    return new[0]
        return None

    def set_goal(self, goal: str) -> None:
        goal = " ".join(goal.split())
        if goal and goal != self.goal:
            if self.goal:
                self.earlier_goals.append(self.goal)
            self.goal = goal
