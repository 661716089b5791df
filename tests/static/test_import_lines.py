"""How the run finds, from a file's text, the project modules it imports (to read those for a
source): each import statement's module, resolved against the file's package, and its names
only where they are asked for."""

from __future__ import annotations

from pathlib import Path

from cgguard.static.core.modulefiles import ModuleFiles, import_names, import_statements
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


def test_a_file_importing_only_from_elsewhere_takes_no_count(tmp_path: Path) -> None:
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
    assert not context.takes_a_count("import os\nfrom torch import nn\nn = nn(1)\n", user, root)
    assert not context.takes_a_count("from pkg.plain import f\nn = f()\n", user, root)
    assert context.takes_a_count("from pkg.helpers import cap\nn = cap(c)\n", user, root)
    assert context.takes_a_count("from .helpers import cap\nn = cap(c)\n", user, root)
    assert context.takes_a_count("from pkg import helpers\nn = helpers.cap(c)\n", user, root)
    assert context.takes_a_count("import pkg.helpers as h\nn = h.cap(c)\n", user, root)
    # Imported but never used: it brings nothing.
    assert not context.takes_a_count("from pkg.helpers import cap\n", user, root)


def _project(tmp_path: Path, tops: tuple[str, ...]) -> ModuleFiles:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for top in tops:
        (tmp_path / top).mkdir()
        (tmp_path / top / "__init__.py").write_text("")
    return ModuleFiles(str(tmp_path))


def test_bytes_that_may_import_a_project_module(tmp_path: Path) -> None:
    files = _project(tmp_path, ("pkg", "tree"))
    inside = str(tmp_path / "pkg" / "user.py")  # a module of the project: pkg.user
    outside = str(tmp_path / "not-a-package" / "user.py")  # no dotted name
    for text in (
        "from pkg.helpers import cap\n",
        "import os, tree\n",
        "import os, \\\n    tree\n",
        "from  tree  import x\n",
        "if True: import pkg\n",
        "x = 1; import pkg.helpers as h\n",
        "from\ttree import x\n",
        "from .tree import x\n",
        "import(tree)\n",  # no Python, but the statements read it: the parser reports it
    ):
        assert files.may_import(text.encode(), outside), text
    assert files.may_import(b"from . import helpers\n", inside)
    assert files.may_import(b"from ..up import helpers\n", inside)
    for text in (
        "import os\nfrom torch import nn\n",
        "from treelib import Tree\nimport pkgutil\n",
        "from . import helpers\n",  # outside any package: resolves to no module
        "x = 'a \\\n b'\nimport os\n",
    ):
        assert not files.may_import(text.encode(), outside), text


def test_may_import_holds_every_import_the_statements_find(
    tmp_path: Path, vllm_dir: Path
) -> None:
    """On every installed vLLM file and every rule case, the byte test is a superset of the
    import statements read from the text: a file it passes over imports no top."""
    tops = ("torch", "transformers", "vllm_ext", "tree", "fix")
    files = _project(tmp_path, tops)
    outside = str(tmp_path / "not-a-package" / "m.py")
    sources = list(vllm_dir.rglob("*.py"))
    sources += list((Path(__file__).parents[2] / "rules").rglob("*.pycase"))
    found = passed_over = 0
    for source in sources:
        data = source.read_bytes()
        text = data.decode("utf-8", errors="replace")
        imported = [
            name
            for module, rest in import_statements(text, "", False)
            for name in ([module] if module is not None else import_names(rest))
        ]
        if any(name.split(".", 1)[0] in tops for name in imported):
            found += 1
            assert files.may_import(data, outside), source
        elif not files.may_import(data, outside):
            passed_over += 1
    assert found > 100 and passed_over > 100  # both answers are exercised


def test_the_screen_decodes_only_files_that_may_import_from_their_project(tmp_path: Path) -> None:
    from cgguard.static.driver.run import FileResult, screen_file

    files = _project(tmp_path, ("pkg",))
    (tmp_path / "pkg" / "helpers.py").write_text(
        "def cap(c):\n    return c.max_cudagraph_capture_size\n"
    )
    (tmp_path / "copied").mkdir()
    elsewhere = tmp_path / "copied" / "runner.py"
    elsewhere.write_text("from vllm.config import limits\nc.num_gpu_blocks_override = limits(c)\n")
    ours = tmp_path / "copied" / "worker.py"
    ours.write_text("from pkg.helpers import cap\nc.num_gpu_blocks_override = cap(c)\n")
    context = RunContext()
    assert isinstance(screen_file(str(elsewhere), context), FileResult)
    assert screen_file(str(ours), context) == (ours.read_text(), False)
    assert files.tops() == {"pkg", "copied"}  # vllm is none of the project's
