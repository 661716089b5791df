"""Matching libcst nodes against the taint model: names, chains, capture-size sources.

The node-level half of :mod:`cgguard.static.rules.model` (which stays free of
libcst, so the driver can screen text without importing it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

from cgguard.static.rules.model import (
    CAPTURE_LIST_NAMES,
    GETATTR,
    REQUEST_COUNT_NAMES,
    is_capture_attr_name,
)

# Fields that hold only layout (whitespace, brackets, separators, operators): never
# an expression or a statement, so walks skip them.
_LAYOUT = (
    "whitespace",
    "lpar",
    "rpar",
    "lbracket",
    "rbracket",
    "lbrace",
    "rbrace",
    "comma",
    "semicolon",
    "operator",
    "colon",
    "equal",
    "newline",
    "leading_lines",
    "header",
    "footer",
    "trailing_whitespace",
    "lines_after_decorators",
    "indent",
    "star_tok",
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(kind)
            if not any(f.name.startswith(p) for p in _LAYOUT)
        )
        _FIELDS[kind] = names
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Child nodes in source order, without layout nodes."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(children(cur))


def last_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` -> ``c``; ``c`` -> ``c``; anything else -> None."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def dotted(node: cst.CSTNode) -> str | None:
    """``self.cache_config.x`` -> that text; None unless a pure chain of names."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def positional(call: cst.Call) -> list[cst.Arg]:
    """Positional arguments, ``*args`` included (as in ast's ``Call.args``)."""
    return [a for a in call.args if a.keyword is None and a.star != "**"]


def is_minus_one(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and node.expression.evaluated_value == 1
    )


def single_index(node: cst.Subscript) -> cst.BaseExpression | None:
    """``x[i]`` -> ``i``; None for slices, tuples and starred indexes."""
    if len(node.slice) != 1:
        return None
    element = node.slice[0]
    if not isinstance(element.slice, cst.Index) or element.slice.star is not None:
        return None
    if isinstance(element.comma, cst.Comma):
        return None  # x[i,] is a tuple index
    return element.slice.value


def capture_source_kind(node: cst.CSTNode) -> bool:
    """True for an expression that *is* the largest capture size (tokens).

    ``<x>.max_cudagraph_capture_size``, ``<x>.max_capture_size``,
    ``<x>.cudagraph_batch_sizes[-1]``, ``max(<x>.cudagraph_capture_sizes)``,
    ``getattr(<x>, "max_cudagraph_capture_size"[, default])``.
    """
    if isinstance(node, cst.Attribute):
        return is_capture_attr_name(node.attr.value)
    if isinstance(node, cst.Subscript):
        index = single_index(node)
        return (
            last_name(node.value) in CAPTURE_LIST_NAMES
            and index is not None
            and is_minus_one(index)
        )
    if isinstance(node, cst.Call):
        if getattr_name(node) is not None:
            return True
        return (
            isinstance(node.func, cst.Name)
            and node.func.value == "max"
            and len(node.args) == 1
            and node.args[0].keyword is None
            and node.args[0].star == ""
            and last_name(node.args[0].value) in CAPTURE_LIST_NAMES
        )
    return False


def getattr_name(node: cst.CSTNode) -> str | None:
    """``getattr(x, "max_capture_size", default)`` -> that name, when it reads a capture size."""
    if not (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == GETATTR
    ):
        return None
    args = node.args
    if len(args) not in (2, 3) or any(a.keyword is not None or a.star for a in args):
        return None
    name = args[1].value
    value = name.evaluated_value if isinstance(name, cst.SimpleString) else None
    return value if is_capture_attr_name(value) else None


def getattr_default(node: cst.Call) -> cst.BaseExpression | None:
    """The default of a ``getattr`` source (None without one)."""
    return node.args[2].value if len(node.args) == 3 else None


def mentions_request_count(node: cst.CSTNode) -> bool:
    """True when the expression involves a request count anywhere (bounded by it)."""
    return any(last_name(sub) in REQUEST_COUNT_NAMES for sub in walk(node))


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """The node without its own parentheses (ast positions never include them)."""
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=(), rpar=())
    return node
