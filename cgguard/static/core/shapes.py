"""Shapes of the intermediate form the flow's parts ask about: a call's positional arguments,
an integer literal, the pairs an unpacking assigns, a source's receiver and the name it reads,
the argument a call passes for a parameter, whether a fix's bound needs parentheses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cgguard.static.core import ir
from cgguard.static.core.patterns import getattr_name, last_name

if TYPE_CHECKING:
    from cgguard.static.core.taint import FunctionInfo


def source_name(source: ir.Expr) -> str | None:
    """The attribute or list a source reads (``cc.max_cudagraph_capture_size``,
    ``getattr(cc, "max_capture_size")``, ``sizes[-1]``, ``max(sizes)``), or None."""
    if isinstance(source, ir.Attribute):
        return source.attr
    if isinstance(source, ir.Subscript):
        return last_name(source.value)
    if isinstance(source, ir.Call):
        name = getattr_name(source)
        if name is not None:
            return name
        args = positional(source)
        return last_name(args[0].value) if len(args) == 1 and not args[0].star else None
    return None


def or_operands(node: ir.Expr) -> list[ir.Expr]:
    return list(node.values) if isinstance(node, ir.BoolOp) else [node]


def getattr_read(node: ir.Call) -> ir.Attribute | None:
    """``getattr(x, "name"[, default])`` as the read ``x.name`` it is."""
    name = getattr_name(node)
    return None if name is None else ir.Attribute(node.args[0].value, name, node.span)


def is_self_member(node: ir.Expr) -> bool:
    return isinstance(node, ir.Attribute) and is_name(node.value, "self")


def identifier(value: object) -> bool:
    return isinstance(value, str) and value.isidentifier()


def lambda_function(name: str, value: ir.Expr) -> ir.FunctionDef | None:
    """``name = lambda ...: body`` as the function it is: one that returns ``body``."""
    if not isinstance(value, ir.Lambda):
        return None
    body = (ir.Return(value.body, value.body.span),)
    return ir.FunctionDef(name, value.params, body, (), None, False, value.span)


def local_place(target: ir.Expr) -> bool:
    """A local, or a field of a local object (``settings.num_blocks``), not of ``self``."""
    if isinstance(target, ir.Name):
        return True
    return (
        isinstance(target, ir.Attribute)
        and isinstance(target.value, ir.Name)
        and target.value.id not in ("self", "cls")
    )


def ref_id(read: ir.Call | ir.Attribute) -> int:
    """The node a reference search finds for a member's call or read (its name)."""
    return id(read.func) if isinstance(read, ir.Call) else id(read)


def positional(call: ir.Call) -> list[ir.Arg]:
    return [a for a in call.args if a.keyword is None and a.star != "**"]


def is_name(node: object, name: str) -> bool:
    return isinstance(node, ir.Name) and node.id == name


def int_const(node: ir.Expr) -> int | None:
    if (
        isinstance(node, ir.Const)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    return None


def unpack_pairs(target: ir.Expr, value: ir.Expr | None) -> list[tuple[ir.Expr, ir.Expr | None]]:
    if not isinstance(target, ir.Seq):
        return [(target, value)]
    elements = target.elts
    if (
        isinstance(value, ir.Seq)
        and value.kind in ("tuple", "list")
        and len(value.elts) == len(elements)
        and not any(isinstance(e, ir.Starred) for e in (*elements, *value.elts))
    ):
        out: list[tuple[ir.Expr, ir.Expr | None]] = []
        for t, v in zip(elements, value.elts, strict=True):
            out.extend(unpack_pairs(t, v))
        return out
    out = []
    for t in elements:
        out.extend(unpack_pairs(t, None))
    return out


def element_parent(value: ir.Expr, node: ir.Expr) -> ir.Expr | None:
    if not isinstance(value, ir.Seq):
        return None
    for e in value.elts:
        if e is node:
            return value
        found = element_parent(e, node)
        if found is not None:
            return found
    return None


def call_argument(call: ir.Call, owner: FunctionInfo, param: str) -> ir.Expr | None:
    """The expression a call passes for ``param`` of ``owner``."""
    for a in call.args:
        if a.keyword == param:
            return a.value
    params = owner.positional()
    if param not in params:
        return None
    index = params.index(param) - (1 if owner.implicit_first else 0)
    given = positional(call)
    if 0 <= index < len(given) and not any(a.star for a in given[: index + 1]):
        return given[index].value
    return None


def receiver(source: ir.Expr) -> ir.Expr | None:
    if isinstance(source, ir.Attribute):
        return source.value
    if isinstance(source, ir.Subscript) and isinstance(source.value, ir.Attribute):
        return source.value.value
    if isinstance(source, ir.Subscript) and isinstance(source.value, ir.Name):
        return source.value
    if isinstance(source, ir.Call) and source.args:
        first = source.args[0].value
        if isinstance(source.func, ir.Name) and source.func.id == "getattr":
            return first
        if isinstance(first, ir.Attribute):
            return first.value
        if isinstance(first, ir.Name):
            return first
    return None


def needs_parens(node: ir.Expr, parent: object | None) -> bool:
    if parent is None:
        return False
    if isinstance(parent, ir.BoolOp) and parent.op == "or":
        return False
    if isinstance(parent, ir.Call) and any(a.value is node for a in positional(parent)):
        return False
    if isinstance(parent, ir.NamedExpr):
        return False
    if isinstance(parent, ir.IfExp) and node is not parent.test:
        return False
    return not (isinstance(parent, ir.Seq) and parent.kind in ("tuple", "list"))
