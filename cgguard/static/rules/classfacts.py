"""What a class offers the fix, read from a parsed tree: its bases and its attributes.

The fix's request count depends on the class around the capture size: a model runner
(its name or a base class names one, ``GPUModelRunner as Base`` resolved through the
file's imports) has ``self.max_num_reqs``; another class offers what it sets on
``self`` or declares in its body. These facts are read from the tree the caller
already has -- libcst's node where the analysis parsed the class, Python's ``ast``
node where only Python's parser read the file -- never from the source text, where a
string, a comment or a docstring would look like code.

No libcst import at the top: the driver's screen uses the ``ast`` half before libcst
is imported (the libcst half imports it when called, on a node that exists already).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from cgguard.static.rules import pytree

_RUNNER = re.compile(r"ModelRunner")


@dataclass(frozen=True)
class ClassTree:
    """A class's bases as written (``pkg.GPUModelRunner``, ``Base``; subscripts dropped)
    and the attributes it sets on ``self`` (in any method) or declares in its body."""

    bases: tuple[str, ...] = ()
    attrs: frozenset[str] = frozenset()


EMPTY = ClassTree()


def names_model_runner(
    name: str, bases: tuple[str, ...] | list[str], aliases: dict[str, str] | None = None
) -> bool:
    """A model runner: the class's name or one of its bases names one (``...ModelRunner``).

    A base imported under another name is read under its own (``aliases``, from
    :func:`cgguard.static.rules.reach.import_aliases`): ``GPUModelRunner as Base`` is a
    runner, ``ProfilingMixin as ModelRunner`` is not; ``module.GPUModelRunner`` is read
    by its last name.
    """
    if _RUNNER.search(name):
        return True
    aliases = aliases or {}
    for chain in bases:
        first, _, rest = chain.partition(".")
        real = chain if rest else aliases.get(first, first)
        if _RUNNER.search(real.rsplit(".", 1)[-1]):
            return True
    return False


# ---- from Python's tree ------------------------------------------------------------------


def of_ast(node: ast.ClassDef) -> ClassTree:
    bases = []
    for base in node.bases:  # keywords (metaclass=...) are not bases
        if isinstance(base, ast.Subscript):
            base = base.value  # Generic[T] -> Generic
        chain = _ast_dotted(base)
        if chain is not None:
            bases.append(chain)
    attrs: set[str] = set()
    for stmt in node.body:
        targets = _ast_targets(stmt)
        attrs.update(t.id for t in targets if isinstance(t, ast.Name))
    for sub in pytree.statements(node):  # an assignment is a statement
        for target in _ast_targets(sub, annotated_only_with_value=True):
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                attrs.add(target.attr)
    return ClassTree(tuple(bases), frozenset(attrs))


def _ast_targets(stmt: ast.AST, annotated_only_with_value: bool = False) -> list[ast.AST]:
    """The names and attributes an assignment statement binds (tuples unpacked)."""
    if isinstance(stmt, ast.Assign):
        raw = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign) and (
        stmt.value is not None or not annotated_only_with_value
    ):
        raw = [stmt.target]
    else:
        return []
    out: list[ast.AST] = []
    while raw:
        t = raw.pop()
        if isinstance(t, (ast.Tuple, ast.List)):
            raw.extend(t.elts)
        elif isinstance(t, ast.Starred):
            raw.append(t.value)
        else:
            out.append(t)
    return out


def _ast_dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# ---- from libcst's tree -------------------------------------------------------------------


def of_cst(node) -> ClassTree:
    """The same facts from a ``libcst.ClassDef`` the analysis parsed."""
    import libcst as cst

    from cgguard.static.rules import nodes

    bases = []
    for arg in node.bases:
        if arg.keyword is not None or arg.star:
            continue
        value = arg.value
        if isinstance(value, cst.Subscript):
            value = value.value
        chain = nodes.dotted(value)
        if chain is not None:
            bases.append(chain)
    attrs: set[str] = set()
    for stmt in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                attrs.update(t.value for t in _cst_targets(small, cst) if isinstance(t, cst.Name))
    if not isinstance(node.body, cst.IndentedBlock):  # class X: a = 1
        for small in node.body.body:
            attrs.update(t.value for t in _cst_targets(small, cst) if isinstance(t, cst.Name))
    for sub in nodes.walk(node):
        for target in _cst_targets(sub, cst, annotated_only_with_value=True):
            if (
                isinstance(target, cst.Attribute)
                and isinstance(target.value, cst.Name)
                and target.value.value == "self"
            ):
                attrs.add(target.attr.value)
    return ClassTree(tuple(bases), frozenset(attrs))


def _cst_targets(stmt, cst, annotated_only_with_value: bool = False) -> list:
    if isinstance(stmt, cst.Assign):
        raw = [t.target for t in stmt.targets]
    elif isinstance(stmt, cst.AnnAssign) and (
        stmt.value is not None or not annotated_only_with_value
    ):
        raw = [stmt.target]
    else:
        return []
    out = []
    while raw:
        t = raw.pop()
        if isinstance(t, (cst.Tuple, cst.List)):
            raw.extend(e.value for e in t.elements)
        elif isinstance(t, cst.StarredElement):
            raw.append(t.value)
        else:
            out.append(t)
    return out
