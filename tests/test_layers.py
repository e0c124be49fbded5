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
    "compaction": 3,
    "formats": 3,
    "memory": 4,
    "porcelain": 5,
    "integrations": 6,
    "cli": 7,
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
