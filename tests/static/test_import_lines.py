"""How the run finds, from a file's text, the project modules it imports (to read those for a
source): each import statement's module, resolved against the file's package, and its names
only where they are asked for."""

from __future__ import annotations

from pathlib import Path

from cgguard.static.core.modulefiles import import_names, import_statements
from cgguard.static.driver.context import RunContext


def _modules(text: str, package: str = "pkg.sub.mod") -> list[str | None]:
    return [module for module, _ in import_statements(text, package, False)]


def test_each_statement_gives_its_module_resolved() -> None:
    text = (
        "from . import x\n"
        "from .a.b import (\n    c,\n    d,\n)\n"
        "  from cgguard.static import core\n"
        "import os, cgguard.cli as cli\n"
        "if True:\n    import cgguard\n"
        "from  cgguard  import  x\n"
        "from ..up import y\n"
        "from .... import too_far\n"
        "x = 'import this'  # import that\n"
    )
    assert _modules(text) == [
        "pkg.sub",
        "pkg.sub.a.b",
        "cgguard.static",
        None,
        None,
        "cgguard",
        "pkg.up",
    ]


def test_names_are_split_where_asked() -> None:
    rests = [
        rest
        for _, rest in import_statements(
            "import os, a.b as c\nfrom m import (x,\n y)\n", "", False
        )
    ]
    assert [import_names(r) for r in rests] == [["os", "a.b"], ["x", "y"]]
    continued = "from m import a, \\\n    b\nc = 1\n"
    assert [import_names(r) for _, r in import_statements(continued, "", False)] == [["a", "b"]]


def test_a_file_importing_only_from_elsewhere_leads_to_no_source(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(
        "def cap(c):\n    return c.max_cudagraph_capture_size\n"
    )
    (tmp_path / "pkg" / "plain.py").write_text("def f():\n    return 1\n")
    user = str(tmp_path / "pkg" / "user.py")
    root = str(tmp_path)
    context = RunContext()
    assert not context.imports_a_source("import os\nfrom torch import nn\n", user, root)
    assert not context.imports_a_source("from pkg.plain import f\n", user, root)
    assert context.imports_a_source("from pkg.helpers import cap\n", user, root)
    assert context.imports_a_source("from .helpers import cap\n", user, root)
    assert context.imports_a_source("from pkg import helpers\n", user, root)
    assert context.imports_a_source("import pkg.helpers\n", user, root)

