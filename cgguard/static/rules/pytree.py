"""Walks over Python's own tree (``ast``) that the screen and the rules share.

Imports nothing heavy: the driver's screen uses it before libcst is imported.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Iterator


def statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement nested in ``node`` (functions, classes, blocks), no expression.

    Imports and assignments are statements, and most of a big module's nodes are
    expressions: this visits a tenth of what ``ast.walk`` does.
    """
    stack = list(getattr(node, "body", ()))
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(block)
        for sub in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            stack.extend(sub.body)


# Nodes no walk yields: expression contexts and operators (``Load``, ``Add``, ``Eq``...).
# They have no children and nothing here looks at them (a name's context is read from
# the name, ``node.ctx``); one rides along with most names and every operation: 39% of
# the nodes of vLLM's model runner.
LEAVES = frozenset(
    k
    for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
    for k in base.__subclasses__()
)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included) but the :data:`LEAVES`, in no promised
    order: ``ast.walk``'s nodes at about twice its speed (no generator per node; the
    screens walk every function that holds a capture size, some a thousand lines long)."""
    stack: list = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    leaves = LEAVES
    while stack:
        current = pop()
        if current.__class__ in leaves or not isinstance(current, ast.AST):
            continue  # a list's other items: Global's names, Dict's None keys
        yield current
        for name in current._fields:
            value = getattr(current, name, None)
            if value.__class__ is list:
                extend(value)
            elif value.__class__ not in leaves and isinstance(value, ast.AST):
                push(value)


def children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, faster, without the :data:`LEAVES`."""
    out: list[ast.AST] = []
    leaves = LEAVES
    for name in node._fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            out += [v for v in value if v.__class__ not in leaves and isinstance(v, ast.AST)]
        elif value.__class__ not in leaves and isinstance(value, ast.AST):
            out.append(value)
    return out


def statements_at(tree: ast.Module, lineno: int, cache: dict[int, list[int]]) -> list[ast.stmt]:
    """The statements holding line ``lineno``, outermost first (bisection, block by block)."""
    chain: list[ast.stmt] = []
    block: list[ast.stmt] | None = tree.body
    while block:
        starts = cache.get(id(block))
        if starts is None:
            starts = cache[id(block)] = [first_line(stmt) for stmt in block]
        i = bisect_right(starts, lineno) - 1
        if i < 0 or block[i].end_lineno < lineno:
            break
        chain.append(block[i])
        block = inner_block(block[i], lineno)
    return chain


def outermost_function(chain: list[ast.stmt]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The outermost function of a :func:`statements_at` chain: the one the screen cuts out."""
    return next((n for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)


def first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def inner_block(stmt: ast.stmt, lineno: int) -> list[ast.stmt] | None:
    """The statement list nested in ``stmt`` that holds line ``lineno``, if any."""
    blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(stmt, "handlers", ())]
    blocks += [c.body for c in getattr(stmt, "cases", ())]
    for block in blocks:
        if isinstance(block, list) and block and block[0].lineno <= lineno <= block[-1].end_lineno:
            return block
    return None


def parameter_defaults(func: ast.AST) -> list[tuple[ast.arg, ast.expr]]:
    """(parameter, its default) for each parameter of ``func`` that has one."""
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
    return pairs + [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
