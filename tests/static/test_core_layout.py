"""The layout docs/architecture.md gives the inter-procedural part of the core: the modules its
table names exist, no class of them is longer than 400 lines, and the core's modules import
one another without a cycle (an import only a type checker reads is left out)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "cgguard" / "static" / "core"
MAX_CLASS_LINES = 400


def _parts() -> list[str]:
    """The modules the table under ``core/analysis.py`` in docs/architecture.md names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("| Module | Holds and answers |", 1)[1].split("\n\n", 1)[0]
    return [
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`(\w+\.py)`", row.split("|")[1])
    ]


def _runtime_imports(path: Path) -> set[str]:
    """The core modules ``path`` imports when it runs (not under ``if TYPE_CHECKING``)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "cgguard.static.core":
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "cgguard.static.core."
        ):
            found.add(node.module.split(".")[3])  # type: ignore[union-attr]
    return found


def test_the_parts_the_architecture_names_exist_and_their_classes_are_short():
    parts = _parts()
    assert "summaries.py" in parts and "fixpoint.py" in parts
    for name in ["analysis.py", *parts]:
        tree = ast.parse((CORE / name).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                assert length <= MAX_CLASS_LINES, (name, node.name, length)


def test_the_core_modules_import_one_another_without_a_cycle():
    graph = {p.stem: _runtime_imports(p) for p in CORE.glob("*.py")}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path, name))
        if name in done:
            return
        for imported in sorted(graph.get(name, ())):
            visit(imported, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
