"""A module's outline: its imports and class headers read from its text, a superset of what
the parsed module binds, and the classes of other modules a class derives from, followed
through modules that are never parsed (cgguard/static/core/outlines.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from cgguard.static.core.modulefiles import ModuleFiles
from cgguard.static.core.outlines import Outlines, outline
from cgguard.static.rules.model import SOURCE_NAMES

TEXT = '''"""A module.

It says: from the docs import this. And: import stability.
"""
import os, fork.a.b as ab
from . import sibling
from ..up import (
    Helper as H,  # a comment (with parentheses)
    other,
)
from fork.limits import cap; x = 1
if TYPE_CHECKING: from fork.config import Config
from fork.base import \\
    Base


class Plain:
    pass


class Runner(Base, H, mixins.Mixin, Generic[T], metaclass=Meta):
    def run(self):
        from fork.late import late_helper
        class Inner(Plain):
            pass
'''


def test_the_outline_binds_every_import_and_class_the_parse_does() -> None:
    found = outline(TEXT, "fork.pkg.mod", False, names_source=False, code=True)
    assert found.imports == {
        "os": [("os", None)],
        "ab": [("fork.a.b", None)],
        "sibling": [("fork.pkg", "sibling")],
        "H": [("fork.up", "Helper")],
        "other": [("fork.up", "other")],
        "cap": [("fork.limits", "cap")],
        "Config": [("fork.config", "Config")],
        "Base": [("fork.base", "Base")],
        "late_helper": [("fork.late", "late_helper")],
        # Prose of the docstring that reads as an import statement binds nothing that leads
        # anywhere ("from the docs import this": no module name; "import stability.": none).
    }
    # Every class header at any depth; the bases the core follows (names, dotted names).
    assert found.classes == {"Plain": [], "Runner": ["Base", "H", "mixins.Mixin"], "Inner": ["Plain"]}
    # The code without its import statements: where a name is used, not bound.
    assert found.code is not None
    assert "import" not in found.code.split('"""', 2)[2]
    assert "x = 1" in found.code and "class Runner(Base, H" in found.code


def test_the_outline_is_a_superset_of_the_parse_on_real_code(vllm_dir: Path) -> None:
    """Every name a parsed module of the installed vLLM binds by an import (at any depth) is
    bound in its outline, and every class it defines is there."""
    checked = 0
    files = ModuleFiles(str(vllm_dir.parent))
    for path in sorted(vllm_dir.rglob("*.py"))[:600]:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        dotted = files.dotted_of(str(path))
        found = outline(text, dotted, path.name == "__init__.py", names_source=False)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > len((dotted or "").split(".")):
                continue  # past the top package: the core binds nothing either
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        local = alias.asname or alias.name.split(".")[0]
                        assert local in found.imports, (path, local)
            elif isinstance(node, ast.ClassDef):
                assert node.name in found.classes, (path, node.name)
        checked += 1
    assert checked > 500


def test_bases_are_followed_through_modules_that_name_no_source(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    pkg = tmp_path / "fork"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from fork.middle import Middle as Exported\n")
    (pkg / "sizes.py").write_text(
        "class Sizes:\n    def f(self, c):\n        self.n = c.max_cudagraph_capture_size\n"
    )
    (pkg / "middle.py").write_text("from .sizes import Sizes\n\n\nclass Middle(Sizes):\n    pass\n")
    (pkg / "unrelated.py").write_text("import torch\n\n\nclass Other(torch.nn.Module):\n    pass\n")
    outlines = Outlines(ModuleFiles(str(tmp_path)), tuple(SOURCE_NAMES))
    user = outline(
        "import fork\nfrom fork import unrelated\n\n\n"
        "class A(fork.Exported):\n    pass\n\n\nclass B(unrelated.Other):\n    pass\n",
        "fork.user",
        False,
        names_source=False,
    )
    found = outlines.bases_of(user)
    sizes, middle, other = (str(pkg / n) for n in ("sizes.py", "middle.py", "unrelated.py"))
    # Through the package's re-export and the module between; torch's class is no module
    # of the project: the chain stops there.
    assert found == {(middle, "Middle"), (sizes, "Sizes"), (other, "Other")}
    # Only the class of the module naming a source lends its members.
    assert [p for p, _ in found if outlines.names_source(p)] == [sizes]


def test_import_statements_are_told_from_words_holding_import() -> None:
    """A word that holds ``import`` (``imports``, ``important``, ``reimport``) or an
    ``import`` that ends its line starts no statement; every statement is still found."""
    from cgguard.static.core.modulefiles import import_spans

    text = (
        "# imports, important, reimport x\n"
        "important = 1\n"
        "x.import_\n"
        "def reimport(): pass\n"
        "import\n"
        "import os\n"
        "from a import(b)\n"
        "if x: import c; from d import e\n"
        "from f import \\\n"
        "    g\n"
    )
    found = [(head, rest.strip()) for _, _, head, rest in import_spans(text)]
    assert found == [
        ("", "os"),
        ("from a", "(b)"),
        ("", "c"),
        ("from d", "e"),
        ("from f", "\\\n    g"),
    ]
