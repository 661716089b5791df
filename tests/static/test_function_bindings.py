"""A project module is lowered to resolve an imported name only where its text can bind that
name to a function (a ``def``, an assignment such as a ``partial``, an import of it): a class
imported from a big module is not worth its parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgguard.static.core.analysis import Analysis
from cgguard.static.rules.model import model


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ("def cap(x):\n    return x\n", True),
        ("async def cap():\n    pass\n", True),
        ("cap = partial(helper, 1)\n", True),
        ("from m import (\n    a,\n    cap,\n)\n", True),
        ("from m import a, \\\n    cap\n", True),
        ("from m import x as cap\n", True),
        ("class cap:\n    pass\n\n\nx = cap()\n", False),
        ("def f(a, cap):\n    return g(a, cap)\n", False),
        ("if cap == 1:\n    pass\n", False),
        ("capacity = 1\nmy_cap = 2\n", False),
        ("text = 'import cap'\n", False),  # no import statement: the line starts otherwise
    ],
)
def test_what_can_bind_a_name(tmp_path: Path, text: str, bound: bool) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "m.py").write_text(text)
    program = Analysis(model(), str(tmp_path))
    assert program.may_bind_function("m", "cap") is bound
    # ``m.cap()`` needs a def of its own.
    assert program.may_bind_function("m", "cap", def_only=True) is text.lstrip().startswith(
        ("def cap", "async def cap")
    )


def test_a_class_imported_from_a_module_is_not_lowered_to_resolve_a_call(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "batch.py").write_text(
        "class InputBatch:\n    def __init__(self, max_num_reqs):\n        self.n = max_num_reqs\n"
    )
    (tmp_path / "pkg" / "helpers.py").write_text(
        "def graph_tokens(c):\n    return c.max_cudagraph_capture_size\n"
    )
    runner = (
        "from pkg.batch import InputBatch\n"
        "from pkg.helpers import graph_tokens\n\n\n"
        "class Runner:\n"
        "    def setup(self):\n"
        "        self.batch = InputBatch(self.max_num_reqs)\n"
        "        self.cache_config.num_gpu_blocks_override = graph_tokens(self.c) or 1\n"
    )
    program = Analysis(model(), str(tmp_path))
    module = program.add(str(tmp_path / "pkg" / "runner.py"), runner)
    # Every use of the helper is a block count: the finding sits at its return.
    hits = [(Path(h.path or module.path).name, h.node.span.line) for h in program.hits(module)]
    assert hits == [("helpers.py", 2)]
    lowered = {Path(p).name for p, m in program.modules.items() if m is not None}
    assert lowered == {"runner.py", "helpers.py"}
