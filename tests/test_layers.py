"""Imports point down the layers (DESIGN §1), checked on the source of every module.

Lazy imports inside functions count too: a layer may not reach up, however late it does so.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sessionstore"

RANKS = {
    "errors": 0,
    "plumbing": 1,
    "accounting": 2,
    "memory": 3,
    "summary": 4,
    "compaction": 5,
    "formats": 5,
    "porcelain": 6,
    "integrations": 7,
    "cli": 8,
}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "sessionstore" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in RANKS else None


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.append(module)
            out.extend(f"{module}.{alias.name}" for alias in node.names)
    return out


MODULES = sorted(p for p in SRC.rglob("*.py") if _layer(_module_name(p)))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_imports_point_down(path: Path) -> None:
    mine = _layer(_module_name(path))
    assert mine is not None
    upward = sorted(
        {m for m in _imports(path) if (other := _layer(m)) is not None and RANKS[other] > RANKS[mine]}
    )
    assert not upward, f"{_module_name(path)} ({mine}) imports upward: {upward}"


def test_plumbing_imports_no_llm_library_at_import_time() -> None:
    """Plumbing knows nothing of LLMs: pydantic-ai only inside functions or for type checking."""
    for path in (SRC / "plumbing").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.startswith("pydantic_ai") for n in names), path.name


def test_every_layer_is_checked() -> None:
    """A new top-level package must be given a rank, or this test would silently skip it."""
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(RANKS), packages - set(RANKS)


# --- no cycles anywhere, and no reach-ins into other modules' private names ---------------------------


def _graph() -> dict[str, set[str]]:
    """Module -> the sessionstore modules it imports (lazy and type-checking imports included)."""
    names = {_module_name(p) for p in MODULES} | {"sessionstore"}
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        mine = _module_name(path)
        targets = set()
        for imported in _imports(path):
            # `from .pkg import mod` names the module itself; `from .mod import name` names the module
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != mine and imported in names and not _is_package(imported):
                targets.add(imported)
        graph[mine] = targets
    return graph


def _is_package(module: str) -> bool:
    return (SRC.parent / module.replace(".", "/") / "__init__.py").is_file()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycle_anywhere_even_inside_a_package() -> None:
    assert [c for c in _cycles(_graph()) if c not in KNOWN_CYCLES] == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """Positive control: a planted cycle is reported."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _private_reach_ins(source: str) -> list[str]:
    """`x._name` where `_name` is defined nowhere in this module: a reach into another module's privates."""
    tree = ast.parse(source)
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
        elif isinstance(node, ast.alias):
            defined.add(node.asname or node.name)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            defined.add(node.arg)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            attr = node.attr
            if attr.startswith("_") and not attr.startswith("__") and attr not in defined:
                out.append(f"line {node.lineno}: .{attr}")
    return out


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_no_module_reaches_into_another_modules_private_names(path: Path) -> None:
    assert _private_reach_ins(path.read_text()) == []


def test_the_private_check_catches_a_reach_in() -> None:
    """Positive control: reading another object's private name is caught; our own privates are not."""
    assert _private_reach_ins("def f(session):\n    return session._history\n") == ["line 2: ._history"]
    own = "class A:\n    def f(self):\n        self._x = 1\n        return self._x\n"
    assert _private_reach_ins(own) == []


# Floors inside porcelain/ (DESIGN §1), derived from the imports themselves: each sub-package is a unit,
# the modules at porcelain/'s root are the facade above them all. No hand-kept list to drift.
FACADE = "(facade)"


def _porcelain_unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["sessionstore", "porcelain"] or len(parts) < 3:
        return None
    return parts[2] if _is_package(".".join(parts[:3])) else FACADE


def porcelain_units() -> dict[str, set[str]]:
    """Sub-package -> the other sub-packages (or the facade) its modules import."""
    units: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        mine = _porcelain_unit(module)
        if mine is None:
            continue
        deps = units.setdefault(mine, set())
        deps.update(u for t in targets if (u := _porcelain_unit(t)) is not None and u != mine)
    return units


def floors(units: dict[str, set[str]]) -> dict[str, int]:
    """Each unit's floor: one above the highest unit it imports (0 for none). Raises on a cycle."""
    out: dict[str, int] = {}
    visiting: set[str] = set()

    def floor(u: str) -> int:
        if u in out:
            return out[u]
        if u in visiting:
            raise ValueError(f"import cycle between porcelain sub-packages through {u}")
        visiting.add(u)
        out[u] = 1 + max((floor(d) for d in units.get(u, ())), default=-1)
        visiting.discard(u)
        return out[u]

    for u in sorted(units):
        floor(u)
    return out


def test_porcelain_subpackages_form_floors_with_the_facade_on_top() -> None:
    units = porcelain_units()
    ranked = floors(units)  # raises on a cycle between sub-packages
    assert set(units) - {FACADE}, "porcelain/ has sub-packages"
    assert all(FACADE not in deps for unit, deps in units.items() if unit != FACADE), (
        "only the facade sits on top"
    )
    assert ranked[FACADE] == max(ranked.values())
    assert ranked["session"] == 0, "session/ is the floor the other sub-packages stand on"


def test_porcelain_root_holds_only_the_facade() -> None:
    root = SRC / "porcelain"
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py", "store.py"]


def test_the_floor_finder_ranks_and_finds_a_cycle() -> None:
    """Positive control: a chain is ranked bottom-up, a planted cycle raises."""
    assert floors({"a": set(), "b": {"a"}, "c": {"a", "b"}}) == {"a": 0, "b": 1, "c": 2}
    with pytest.raises(ValueError, match="cycle"):
        floors({"a": {"b"}, "b": {"a"}})


LINE_WRITERS = {"make_line", "append_durable", "truncate_durable", "append_verified", "write_commit"}
"""What builds or appends a log line. Only plumbing (commits, logs, fsutil) and the one commit writer
define or call them; everything above calls the writer (`write_commit`, `append_verified`) or `Lockstep`."""
WRITER_USERS = {
    "sessionstore.porcelain.session.writer": LINE_WRITERS,
    "sessionstore.plumbing.commits": LINE_WRITERS,
    "sessionstore.plumbing.logs": LINE_WRITERS,
    "sessionstore.plumbing.fsutil": LINE_WRITERS,
    "sessionstore.porcelain.sharing.remote_commits": {"append_verified"},
    "sessionstore.integrations.conversation_store": {"write_commit"},
}


def _line_writers_used(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in LINE_WRITERS:
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in LINE_WRITERS:
            names.add(node.attr)
        elif isinstance(node, ast.alias) and node.name in LINE_WRITERS:
            names.add(node.name)
    return names


def test_one_commit_writer() -> None:
    """Log lines are built and appended in one place (issue 9): nothing else names the line writers."""
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        used = _line_writers_used(path.read_text()) - WRITER_USERS.get(module, set())
        if used:
            offenders[module] = sorted(used)
    assert offenders == {}


def test_the_writer_check_catches_a_second_writer() -> None:
    source = "from ..plumbing.commits import make_line\nline, body = make_line(parent=None)\n"
    assert _line_writers_used(source) == {"make_line"}
    assert _line_writers_used("fsutil.append_durable(path, data)\n") == {"append_durable"}
