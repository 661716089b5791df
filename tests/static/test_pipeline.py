"""One way through the driver (issue 17): discover -> screen -> parse -> analyse -> report -> fix.

Each stage is a module with one job, and no module calls a later stage or goes back
to an earlier one: :mod:`cgguard.static.driver.check` calls them in turn. Held here on
the modules' own imports (module level and inside functions, which is where the
driver imports what it needs late), read from their source with Python's parser.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cgguard.static.driver as driver_pkg
import cgguard.static.rules as rules_pkg

DRIVER = Path(driver_pkg.__file__).parent
RULES = Path(rules_pkg.__file__).parent

# The driver's modules by stage, in the order a file's text goes through them.
# Infrastructure imports no other driver module (text, bytes, findings, processes).
STAGES: list[tuple[str, set[str]]] = [
    ("infrastructure", {"findings", "sourcefile", "sourcetext", "prefilter", "parallel", "projectroot"}),
    ("screen", {"screen", "helperscreen"}),
    ("parse", {"parse"}),
    ("analyse", {"analyse"}),
    ("report", {"report"}),
    ("project index", {"projectindex"}),
    ("project", {"project"}),
    ("check", {"check"}),
    ("fix", {"fixer"}),
    ("run", {"run"}),
]
STAGE_OF = {module: i for i, (_, modules) in enumerate(STAGES) for module in modules}


def _driver_imports(path: Path) -> set[str]:
    """The driver modules ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "cgguard.static.driver":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("cgguard.static.driver."):
                found.add(node.module.split(".")[3])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cgguard.static.driver."):
                    found.add(alias.name.split(".")[3])
    return found


def test_every_driver_module_has_a_stage():
    modules = {p.stem for p in DRIVER.glob("*.py")} - {"__init__"}
    assert modules == set(STAGE_OF), "a new driver module needs its place in STAGES"


@pytest.mark.parametrize("module", sorted(STAGE_OF))
def test_a_stage_imports_no_later_stage(module):
    mine = STAGE_OF[module]
    later = {m for m in _driver_imports(DRIVER / f"{module}.py") if STAGE_OF[m] > mine}
    assert not later, f"{module} ({STAGES[mine][0]}) imports a later stage: {sorted(later)}"


def test_infrastructure_imports_no_stage():
    for module in STAGES[0][1]:
        assert not _driver_imports(DRIVER / f"{module}.py") - STAGES[0][1], module


def test_the_screen_helpers_do_not_call_back_into_the_screen():
    # helperscreen is the screen's library: the screen calls it, never the other way.
    assert "screen" not in _driver_imports(DRIVER / "helperscreen.py")


def test_the_rules_never_call_the_driver():
    # The rules are the analysis library every front end (driver, Fixit, codemod) calls.
    for path in RULES.glob("*.py"):
        assert not _driver_imports(path), path.name


def test_the_checker_calls_each_stage_in_order():
    """check.py names the stages in the order a text goes through them."""
    source = (DRIVER / "check.py").read_text(encoding="utf-8")
    body = source[source.index("def own_findings(") :]
    # The plan comes first; what is parsed, analysed and reported follows in that order.
    steps = [body.index(call) for call in ("screen.plan(", "parse.pieces(", "analyse.hits(", "report.findings(")]
    assert steps == sorted(steps)
