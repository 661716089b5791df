"""Walks of the intermediate form that the whole-program part shares: a block's statements,
a module's functions (nested ones too), its class and module scopes, what a class sets on
``self``, a body's ``return`` statements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from cgguard.static.core import ir
from cgguard.static.core.flow import FunctionInfo

if TYPE_CHECKING:
    from cgguard.static.core.project import ModuleInfo


def is_name(node: object, name: str) -> bool:
    return isinstance(node, ir.Name) and node.id == name


def block_stmts(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    """Statements of a block, looking into ``if``/``try`` blocks at the same level."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.If):
            yield from block_stmts(stmt.body)
            yield from block_stmts(stmt.orelse)
        elif isinstance(stmt, ir.Try):
            yield from block_stmts(stmt.body)
            for h in stmt.handlers:
                yield from block_stmts(h.body)
            yield from block_stmts(stmt.orelse)
            yield from block_stmts(stmt.finalbody)


def all_functions(module: ModuleInfo) -> Iterator[FunctionInfo]:
    """Every function of the module, nested ones included (each its own scope)."""
    yield from module.functions.values()
    for cls in module.classes.values():
        yield from cls.methods.values()
    known = {id(f.node) for f in module.functions.values()}
    known |= {id(f.node) for c in module.classes.values() for f in c.methods.values()}
    for node, owner in _nested_functions(module.tree.body, None):
        if id(node) not in known:
            yield FunctionInfo(node, owner, module.path)


def functions_inside(func: FunctionInfo, lines: list[str]) -> list[FunctionInfo]:
    """The functions ``func`` defines in its body (each a scope of its own). A body whose
    text after the first line holds neither ``def`` nor ``class`` defines none: it is not
    walked for them."""
    span = func.node.span
    if not any("def" in line or "class" in line for line in lines[span.line : span.end_line]):
        return []
    return [
        FunctionInfo(node, None, func.path)
        for node, _ in _nested_functions(ir.body_of(func.node), None)
    ]


def _nested_functions(
    body: tuple[ir.Stmt, ...], cls: ir.ClassDef | None
) -> Iterator[tuple[ir.FunctionDef, ir.ClassDef | None]]:
    for stmt in body:
        if isinstance(stmt, ir.FunctionDef):
            yield stmt, cls  # its own nested functions: found once it is walked
        elif isinstance(stmt, ir.ClassDef):
            yield from _nested_functions(stmt.body, stmt)
        else:
            for child in ir.children(stmt):
                if isinstance(child, ir.FunctionDef | ir.ClassDef):
                    yield from _nested_functions((child,), cls)
                elif isinstance(child, ir.Handler | ir.Case):
                    yield from _nested_functions(child.body, cls)
                elif _is_stmt(child):
                    yield from _nested_functions((child,), cls)  # type: ignore[arg-type]


def _is_stmt(node: object) -> bool:
    return isinstance(node, ir.If | ir.For | ir.While | ir.With | ir.Try | ir.Match)


def class_and_module_scopes(
    module: ModuleInfo,
) -> Iterator[tuple[tuple[ir.Stmt, ...], ir.ClassDef | None]]:
    yield module.tree.body, None
    stack: list[ir.Stmt] = list(module.tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ir.ClassDef):
            yield stmt.body, stmt
            stack.extend(stmt.body)
        elif isinstance(stmt, ir.FunctionDef):
            continue
        else:
            for child in ir.children(stmt):
                if isinstance(child, ir.ClassDef | ir.FunctionDef) or _is_stmt(child):
                    stack.append(child)  # type: ignore[arg-type]
                elif isinstance(child, ir.Handler | ir.Case):
                    stack.extend(child.body)
            if isinstance(stmt, ir.If | ir.For | ir.While | ir.With | ir.Try):
                stack.extend(s for s in stmt.body if not isinstance(s, ir.FunctionDef))


def own_attrs(node: ir.ClassDef) -> set[str]:
    """Attributes a class sets on ``self`` in its methods or declares in its body."""
    found: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, ir.Assign):
            found.update(t.id for t in stmt.targets if isinstance(t, ir.Name))
        elif isinstance(stmt, ir.Other) and stmt.kind == "annotation" and stmt.exprs:
            if isinstance(stmt.exprs[0], ir.Name):
                found.add(stmt.exprs[0].id)
        elif isinstance(stmt, ir.FunctionDef):
            found.add(stmt.name)
            for sub in walk_stmts(ir.body_of(stmt)):
                if isinstance(sub, ir.Assign | ir.AugAssign):
                    targets = sub.targets if isinstance(sub, ir.Assign) else (sub.target,)
                    for t in targets:
                        for leaf in target_leaves(t):
                            if isinstance(leaf, ir.Attribute) and is_name(leaf.value, "self"):
                                found.add(leaf.attr)
    return found


def target_leaves(target: ir.Expr) -> Iterator[ir.Expr]:
    if isinstance(target, ir.Seq):
        for e in target.elts:
            yield from target_leaves(e)
    elif isinstance(target, ir.Starred):
        yield from target_leaves(target.value)
    else:
        yield target


def walk_stmts(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.FunctionDef | ir.ClassDef):
            continue
        for child in ir.children(stmt):
            if isinstance(child, ir.Handler | ir.Case):
                yield from walk_stmts(child.body)
            elif _is_stmt(child) or isinstance(
                child, ir.Assign | ir.AugAssign | ir.ExprStmt | ir.Return | ir.Other
            ):
                yield from walk_stmts((child,))  # type: ignore[arg-type]


def returns_of(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Return]:
    for stmt in walk_stmts(body):
        if isinstance(stmt, ir.Return):
            yield stmt
