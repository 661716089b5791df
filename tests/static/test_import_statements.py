"""One reader of import statements for the project index, held to Python's own parser.

``projectindex._import_statements`` finds a file's imports from each ``import`` word.
Two uses read it: the byte screen (``_import_specs``: may this file import a helper of
the project? a superset, or a flow is missed) and the import table the analysis
follows (``_import_tree``: each statement parsed alone). Both must see every import
``ast`` sees, however it is written: backslash continuations before or after
``import``, several aliases, after ``;`` or a compound statement's ``:``, spaces
around dots, CRLF line ends. The two scanners this replaces missed
``from m import a, \\`` + ``helper``, ``import os, pkg.m as m`` and ``from m \\`` +
``import helper``: a flow through the helper was not reported.
"""

from __future__ import annotations

import ast

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cgguard.static.driver import projectindex as pi

NAME = st.sampled_from(["a", "helper", "pkg", "mod", "x_1", "größe"])
DOTTED = st.lists(NAME, min_size=1, max_size=3).map(".".join)
SP = st.sampled_from([" ", "  ", "\t", " \\\n    ", "\f"])  # a space, maybe a continuation


@st.composite
def statement(draw) -> str:
    kind = draw(st.sampled_from(["from", "import", "from_paren"]))
    if kind == "import":
        parts = [draw(DOTTED) + (f" as {draw(NAME)}" if draw(st.booleans()) else "") for _ in range(draw(st.integers(1, 3)))]
        sep = draw(st.sampled_from([", ", ",", ", \\\n  "]))
        return "import" + draw(SP) + sep.join(parts)
    if kind == "from" and draw(st.integers(0, 9)) == 0:
        return f"from {draw(DOTTED)} import" + draw(st.sampled_from([" *", "*"]))
    dots = draw(st.sampled_from(["", ".", ".."]))
    module = draw(DOTTED) if not dots or draw(st.booleans()) else ""
    if draw(st.booleans()) and "." in module:
        module = module.replace(".", draw(st.sampled_from([" . ", ".", " .\\\n "])), 1)
    names = [draw(NAME) + (f" as {draw(NAME)}" if draw(st.booleans()) else "") for _ in range(draw(st.integers(1, 3)))]
    spec = dots + module
    head = "from" + draw(SP) + spec + draw(SP)
    if kind == "from_paren":
        inner = draw(st.sampled_from([", ", ",\n    ", ",  # note\n    "])).join(names)
        return head + "import (" + draw(st.sampled_from(["", "\n    ", "  # why\n    "])) + inner + draw(st.sampled_from(["", ",", ",\n"])) + ")"
    return head + "import" + draw(SP) + draw(st.sampled_from([", ", ", \\\n    "])).join(names)


@st.composite
def source(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        stmt = draw(statement())
        where = draw(st.sampled_from(["top", "semi", "compound", "def", "comment_before", "docstring_before"]))
        if where == "semi":
            stmt = "x = 1; " + stmt
        elif where == "compound":
            stmt = "if x:  " + stmt.replace("\n", "\n    ") if "(" not in stmt else stmt
        elif where == "def":
            stmt = "def f():\n    " + stmt.replace("\n", "\n    ")
        elif where == "comment_before":
            stmt = "# a comment ending in a backslash \\\n" + stmt
        elif where == "docstring_before":
            stmt = '"""from docs import example\n"""\n' + stmt
        lines.append(stmt)
    text = "x = 0\n" + "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


def _truth(text: str) -> list[ast.stmt]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        assume(False)
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


@settings(max_examples=500, deadline=None)
@given(source())
def test_the_screen_sees_every_import_python_sees(text: str) -> None:
    readings = list(pi._import_specs(text))
    for node in _truth(text):
        if isinstance(node, ast.ImportFrom):
            spec = "." * node.level + (node.module or "")
            assert any(
                kind == "from" and s == spec
                and {a.name for a in node.names if a.name != "*"} <= set(pi._NAMES.findall(pi._AS_NAME.sub("", names)))
                for kind, s, names in readings
            ), (ast.dump(node), readings)
        else:
            for alias in node.names:
                if alias.asname:
                    assert ("import", alias.name, "") in readings, (ast.dump(node), readings)


@settings(max_examples=500, deadline=None)
@given(source())
def test_the_import_table_reads_every_import_as_python_does(text: str) -> None:
    truth = sorted(ast.dump(n) for n in _truth(text))
    found = sorted(ast.dump(n) for n in pi._import_tree(text).body if isinstance(n, (ast.Import, ast.ImportFrom)))
    assert found == truth


def test_the_three_shapes_the_old_scanners_missed() -> None:
    cases = {
        "from pkg.limits import other, \\\n    helper\n": ("from", "pkg.limits", "helper"),
        "import os, pkg.limits as lim\n": ("import", "pkg.limits", ""),
        "from pkg.limits \\\n    import helper\n": ("from", "pkg.limits", "helper"),
    }
    for text, (kind, spec, name) in cases.items():
        readings = list(pi._import_specs(text))
        assert any(k == kind and s == spec and name in n + ("" if name else "") for k, s, n in readings), (text, readings)
        assert [ast.dump(n) for n in pi._import_tree(text).body] == [ast.dump(n) for n in ast.parse(text).body]
