"""Python's ``ast`` and libcst lower the same code to the same intermediate form.

``cgguard check`` reads files through the ``ast`` front end; the Fixit rule and the codemod
through libcst's. The core sees only the form, so both must give every node the same kind,
fields and span. Checked on every rule case (fixed versions included) and on every file of
the installed vLLM that the byte prefilter hands to the core; and the core's hits on every
case must be the same through both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cgguard.static.core import cst_frontend, ir, pyast
from cgguard.static.core.analysis import Analysis
from cgguard.static.driver.prefilter import has_needle
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
from cgguard.static.rules.model import MODEL

RULES = Path(__file__).resolve().parents[2] / "rules"
CASE_FILES = sorted(RULES.glob("*/cases/**/*.pycase"))


def _full(node: object) -> object:
    """``node``'s structure with its spans, as nested tuples (deferred bodies lowered)."""
    if isinstance(node, ir.Deferred):
        node = node.get()
    if isinstance(node, tuple):
        return tuple(_full(item) for item in node)
    if isinstance(node, ir.Span):
        return (node.line, node.col, node.end_line, node.end_col)
    if not ir.is_node(node):
        return node
    return (type(node).__name__, *((f, _full(getattr(node, f))) for f in ir.fields_of(node)))


def _first_difference(a: object, b: object, where: str = "") -> str | None:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if i == 0 and isinstance(x, str) and x == y:
                continue  # a node's kind, or a field's name
            step = a[0] if isinstance(a[0], str) and len(a) == 2 and i == 1 else str(i)
            label = x[0] if isinstance(x, tuple) and x and isinstance(x[0], str) else step
            found = _first_difference(x, y, f"{where}/{label}")
            if found is not None:
                return found
        return None
    if a == b and type(a) is type(b):
        return None
    return f"at {where}:\n  ast:    {str(a)[:300]}\n  libcst: {str(b)[:300]}"


def _assert_same(text: str, name: str) -> None:
    by_ast = _full(pyast.parse(text, name))
    by_cst = _full(cst_frontend.parse_and_lower(text))
    difference = _first_difference(by_ast, by_cst)
    assert difference is None, f"{name}: the front ends differ {difference}"


def test_the_cases_are_there() -> None:
    assert len(CASE_FILES) > 100


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: str(p.relative_to(RULES)))
def test_every_case_lowers_the_same_through_both(path: Path) -> None:
    _assert_same(path.read_text(encoding="utf-8"), str(path))


def test_spans_that_python_and_libcst_place_differently() -> None:
    # Non-ASCII columns, parenthesised tuples and generator expressions (with blanks and
    # comments inside the parentheses), a tuple that only starts and ends with parentheses,
    # chained boolean operators, subscripts with slices, f-strings, every parameter kind.
    text = """\
é = ("é", b) + ( c, )
x = (
    a,  # one
    b,
)
(k, v), (p, q) = pairs
y = sum(n for n in (1, 2))
z = f(
    n for n in m if n
)
w = a or b or (c or d) and e and f
s = a[1:2, ::3, :], a[i,], a[(1):(2), (i), ::(3)], a[ : ], a[(i), ]
r = a[
    :, b, :
]
t = f"{x!r:>{w}} and {y}" "tail"
def g(p, /, q: int = 1, *r, s, t: "T" = 2, v: (A | B), **u) -> None:
    async def h():
        async with m as n, (o):
            return [i async for i in n if i], [k for (k, v) in m], {k for(k)in m}
    lam = lambda a, *b, c=3, **d: (yield a)
    del a, (b, c)
    assert a, "m"
    raise E from c
    global G
try:
    pass
except (E, F) as e:
    pass
match v:
    case [1, *rest] if rest:
        pass
"""
    _assert_same(text, "<spans>")


def test_starred_subscripts_place_the_same() -> None:
    text = "s = a[*b], a[1:2:, *b], a[i, *b, (j)]\n"
    if sys.version_info < (3, 11):
        # Python 3.10 has no starred subscripts: the file is a syntax error, not code to lower.
        with pytest.raises(SyntaxError):
            pyast.parse(text, "<starred>")
        return
    _assert_same(text, "<starred>")


def test_every_prefiltered_vllm_file_lowers_the_same_through_both(vllm_dir: Path) -> None:
    checked = 0
    for path in sorted(vllm_dir.rglob("*.py")):
        data = path.read_bytes()
        if not has_needle(data, (CAPTURE_SIZE_BLOCKS,)):
            continue
        _assert_same(data.decode("utf-8"), str(path))
        checked += 1
    # The runner, the attention backends and the compilation config carry a capture size.
    assert checked >= 20


def _hits(path: Path, lower) -> list[tuple]:
    text = path.read_text(encoding="utf-8")
    program = Analysis(MODEL, str(path.parent), lower=lower)
    hits = program.hits(program.add(str(path), text))
    return sorted(
        (
            sorted(h.labels),
            _full(h.node.span),
            h.sink,
            None if h.rewrite is None else _full(h.rewrite.target.span),
            h.request,
            h.guessed,
        )
        for h in hits
    )


def _libcst_lower(text: str, path: str) -> ir.Module:
    return cst_frontend.parse_and_lower(text)


@pytest.mark.parametrize(
    "path",
    [p for p in CASE_FILES if not p.name.endswith(".fixed.pycase")],
    ids=lambda p: str(p.relative_to(RULES)),
)
def test_the_core_finds_the_same_through_both(path: Path) -> None:
    assert _hits(path, _libcst_lower) == _hits(path, None)
