"""One way through the static half: discover -> prefilter -> core -> report -> fix.

Each stage is a module with one job, and no module calls a later stage or goes back
to an earlier one: :mod:`cgguard.static.driver.check` calls them in turn. The packages
of ``cgguard/static`` import each other one way only: the core (the intermediate form,
its front ends, the data flow) imports no other package, the rules build on the core,
the driver on both. Held here on the modules' own imports (module level and inside
functions, which is where the driver imports what it needs late), read from their
source with Python's parser.
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
    (
        "infrastructure",
        {"prefilter", "parallel", "projectroot", "prescan", "context"},
    ),
    ("parse", {"parse"}),
    ("report", {"report"}),
    ("check", {"check"}),
    ("fix", {"fixer"}),
    ("run", {"run"}),
    # CGG100 judges each directive against a run of the rules without suppressions.
    ("unused suppressions", {"unusednoqa"}),
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


def test_the_rules_never_call_the_driver():
    # The rules are the analysis library every front end (driver, Fixit, codemod) calls.
    for path in RULES.glob("*.py"):
        assert not _driver_imports(path), path.name


def test_the_checker_calls_each_stage_in_order():
    """check.py runs the core, then reports what it found."""
    source = (DRIVER / "check.py").read_text(encoding="utf-8")
    steps = [source.index(call) for call in ("program.hits(", "report.findings(")]
    assert steps == sorted(steps) or source.index("def check_source(") < steps[1]


STATIC = DRIVER.parent
# The packages of the static half, lowest first: each may import only those before it.
PACKAGES = ["core", "source", "fixes", "rules", "workflow", "driver"]


def _static_imports(path: Path) -> set[str]:
    """The packages of ``cgguard.static`` that ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["cgguard", "static"] and len(parts) > 2 and parts[2] in PACKAGES:
                found.add(parts[2])
    return found


def test_every_static_package_has_its_place():
    packages = {p.name for p in STATIC.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert packages == set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_packages_below_it(package):
    allowed = set(PACKAGES[: PACKAGES.index(package) + 1])
    for path in sorted((STATIC / package).glob("*.py")):
        above = _static_imports(path) - allowed
        assert not above, f"{package}/{path.name} imports {sorted(above)}"


def test_the_core_imports_nothing_of_cgguard_outside_it():
    for path in sorted((STATIC / "core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cgguard"):
                assert node.module.startswith("cgguard.static.core"), (path.name, node.module)
