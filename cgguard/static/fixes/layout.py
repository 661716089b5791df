"""Lay out a statement the way ``ruff format`` does, for the statements a fix rewrites.

A fix that would push a line past 88 columns rewrites the whole statement in ruff's
layout (vLLM is formatted with ruff; upstream's own fix reads that way). This module
turns libcst nodes into the documents ruff's formatter builds for them
(:mod:`cgguard.static.fixes.layoutdoc` prints them), following ruff's rules:

* the last expression of an assignment, ``return`` or ``if``/``while`` header gets
  optional parentheses: omitted when the expression ends (or starts) with brackets
  of its own that can split (``x = 1 or min(...)``), added otherwise
  (``x = (\\n    min(...)\\n    or 1\\n)``);
* call arguments first try one indented line, then one per line with a trailing
  comma; a magic trailing comma or an end-of-line comment keeps them one per line;
* boolean, binary and comparison chains break before each operator, conditional
  expressions before ``if`` and ``else``, only inside parentheses;
* end-of-line comments count toward the width, pragma comments (``# noqa``,
  ``# type:`` ...) do not.

Strings keep their quotes (a ruff-formatted file has ruff's already). Only what
these statements hold is supported; anything else (a comment elsewhere than at the
end of a line after an argument or element, strings over several lines, dicts,
comprehensions, lambdas, slices, fluent call chains such as ``a.b(c).d(e).f``, ...)
raises :class:`Unsupported` and the caller keeps a plainer layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from cgguard.static.fixes.layoutdoc import (
    SOFT,
    SOFT_SPACE,
    CondGroup,
    Doc,
    FitsExpanded,
    Group,
    IfBreaks,
    Indent,
    IndentIfBreaks,
    Line,
    LineSuffix,
    Printer,
    Text,
)

LINE_LENGTH = 88


class Unsupported(Exception):
    """The node holds something this layout does not reproduce as ruff would."""


@dataclass(frozen=True)
class _Level:
    """Where an expression sits (ruff's ``NodeLevel``): ``top`` outside brackets,
    ``optional`` inside optional parentheses (group ``gid``), ``paren`` inside brackets."""

    kind: str
    gid: int | None = None


TOP = _Level("top")
PAREN = _Level("paren")


class ExpandParent:
    """Forces the enclosing group to break (ruff's ``expand_parent``)."""


_PRAGMA = re.compile(r"#\s*(?:noqa|nosec|(?:isort|type|pyright|pylint|flake8|ruff):)", re.I)


def comment_width(comment: str) -> int:
    """Width ruff reserves for a trailing comment: none for pragma comments."""
    if _PRAGMA.match(comment):
        return 0
    return len(comment) + 2


# Precedence of the operator a chain would split at (ruff's formatter-local order:
# higher splits first).
(
    _NONE,
    _ATTRIBUTE,
    _EXPONENT,
    _INVERT,
    _MUL,
    _ADD,
    _SHIFT,
    _BITAND,
    _BITXOR,
    _BITOR,
    _COMPARE,
    _BOOL,
    _COND,
) = range(13)
_BINARY = {
    cst.Power: _EXPONENT,
    cst.Multiply: _MUL,
    cst.Divide: _MUL,
    cst.FloorDivide: _MUL,
    cst.Modulo: _MUL,
    cst.MatrixMultiply: _MUL,
    cst.Add: _ADD,
    cst.Subtract: _ADD,
    cst.LeftShift: _SHIFT,
    cst.RightShift: _SHIFT,
    cst.BitAnd: _BITAND,
    cst.BitXor: _BITXOR,
    cst.BitOr: _BITOR,
}
_BINARY_TEXT = {
    cst.Power: "**",
    cst.Multiply: "*",
    cst.Divide: "/",
    cst.FloorDivide: "//",
    cst.Modulo: "%",
    cst.MatrixMultiply: "@",
    cst.Add: "+",
    cst.Subtract: "-",
    cst.LeftShift: "<<",
    cst.RightShift: ">>",
    cst.BitAnd: "&",
    cst.BitXor: "^",
    cst.BitOr: "|",
}
_COMPARE_TEXT = {
    cst.LessThan: "<",
    cst.GreaterThan: ">",
    cst.LessThanEqual: "<=",
    cst.GreaterThanEqual: ">=",
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.In: "in",
    cst.NotIn: "not in",
    cst.Is: "is",
    cst.IsNot: "is not",
}
_UNARY_TEXT = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not "}
_TERMINALS = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)


def _no_fluent_chain(node: cst.BaseExpression) -> None:
    """ruff lays out a chain with two or more attributes after calls or subscripts
    (``a.b(c).d(e).f``) one attribute per line; that layout is not reproduced."""
    after_call = 0
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        if isinstance(node, cst.Attribute):
            if isinstance(node.value, (cst.Call, cst.Subscript)):
                after_call += 1
            node = node.value
        else:
            node = node.func if isinstance(node, cst.Call) else node.value
    if after_call >= 2:
        raise Unsupported("a fluent call chain")


def _comments(node: cst.CSTNode) -> int:
    if "#" not in cst.Module([]).code_for_node(node):
        return 0  # the common case, without a walk over the tree
    found = 0

    class Count(cst.CSTVisitor):
        def visit_Comment(self, _node: cst.Comment) -> None:
            nonlocal found
            found += 1

    node.visit(Count())
    return found


def _parenthesized(node: cst.CSTNode) -> bool:
    return bool(getattr(node, "lpar", None))


def _own_parens(node: cst.BaseExpression) -> str | None:
    """``"nonempty"``/``"empty"`` when the node brings brackets that can split (ruff's
    ``has_parentheses``), None otherwise."""
    if _parenthesized(node):
        return "nonempty"
    if isinstance(node, cst.Call):
        return "nonempty" if node.args else "empty"
    if isinstance(node, cst.Subscript):
        return "nonempty"
    if isinstance(node, (cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp)):
        return "nonempty"
    return None


class _CanOmit:
    """ruff's ``can_omit_optional_parentheses`` over libcst nodes."""

    def __init__(self, swap: dict[int, Any]) -> None:
        self.swap = dict(swap)  # the layout's pending swaps: the tree it will lay out
        self.max = _NONE
        self.count = 0
        self.any_parens = False
        self.last: cst.BaseExpression | None = None
        self.first: object = None  # None, "token" or the first expression

    def update(self, precedence: int, count: int = 1) -> None:
        if precedence > self.max:
            self.max, self.count = precedence, count
        elif precedence == self.max:
            self.count += count

    def visit(self, node: cst.BaseExpression) -> None:
        node = self.swap.pop(id(node), node)
        self.last = node
        if _parenthesized(node):
            self.any_parens = True
        else:
            self.subexpression(node)
        if self.first is None:
            self.first = node

    def subexpression(self, node: cst.BaseExpression) -> None:
        if isinstance(node, (cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp)):
            self.any_parens = True
            return
        if isinstance(node, cst.BooleanOperation):
            self.update(_BOOL)
        elif isinstance(node, cst.BinaryOperation):
            self.update(_BINARY[type(node.operator)])
        elif isinstance(node, cst.IfExp):
            self.update(_COND, 2)
        elif isinstance(node, cst.Comparison):
            self.update(_COMPARE, len(node.comparisons))
        elif isinstance(node, cst.Call):
            self.any_parens = True
            self.visit(node.func)
            self.last = node
            return
        elif isinstance(node, cst.Subscript):
            self.any_parens = True
            self.visit(node.value)
            self.last = node
            return
        elif isinstance(node, cst.Attribute):
            self.visit(node.value)
            if _own_parens(node.value) is not None:
                self.update(_ATTRIBUTE)
            self.last = node
            return
        elif isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.BitInvert):
                self.update(_INVERT)
            if self.first is None:
                self.first = "token"
        elif isinstance(node, (cst.Lambda, cst.Await, cst.Yield, cst.StarredElement)):
            if self.first is None:
                self.first = "token"
        elif isinstance(node, _TERMINALS):
            return
        for child in _child_expressions(node):
            self.visit(child)

    def result(self) -> bool:
        if not self.any_parens or self.count > 1:
            return False
        if self.max in (_NONE, _ATTRIBUTE):
            return True

        def splits(node: object) -> bool:
            return (
                isinstance(node, cst.BaseExpression)
                and not isinstance(node, cst.Subscript)
                and _own_parens(node) == "nonempty"
            )

        return splits(self.last) or splits(self.first)


def _child_expressions(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation)):
        return [node.left, node.right]
    if isinstance(node, cst.Comparison):
        return [node.left, *(c.comparator for c in node.comparisons)]
    if isinstance(node, cst.IfExp):
        return [node.body, node.test, node.orelse]
    if isinstance(node, cst.NamedExpr):
        return [node.target, node.value]
    if isinstance(node, cst.Tuple):
        return [e.value for e in node.elements]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    return []


def can_omit_optional_parentheses(
    node: cst.BaseExpression, swap: dict[int, cst.CSTNode] | None = None
) -> bool:
    visitor = _CanOmit(swap or {})
    visitor.subexpression(node)
    return visitor.result()


class Layout:
    """Builds the documents; counts the comments it places so none is lost."""

    def __init__(self, swap: dict[int, cst.CSTNode] | None = None) -> None:
        self._ids = 0
        self.placed_comments = 0
        # Nodes laid out in place of others (the fix's new count in the statement).
        self.swap = swap or {}
        self.swapped = 0

    def sub(self, node: cst.CSTNode) -> Any:
        # Once only: the new node holds the old one (``min(R, <old>)``).
        new = self.swap.pop(id(node), None)
        if new is None:
            return node
        self.swapped += 1
        return new

    def gid(self) -> int:
        self._ids += 1
        return self._ids

    # ---- helpers ------------------------------------------------------------
    @staticmethod
    def in_parens_group(items: list, level: _Level) -> Doc:
        if level.kind == "optional":
            assert level.gid is not None  # an optional level always names its group
            return CondGroup(items, level.gid)
        if level.kind == "paren":
            return Group(items)
        return items

    @staticmethod
    def in_parens_space(level: _Level) -> Doc:
        if level.kind == "optional":
            return [
                IfBreaks([Line(SOFT_SPACE)], level.gid),
                IfBreaks([Text(" ")], level.gid, flat=True),
            ]
        if level.kind == "paren":
            return Line(SOFT_SPACE)
        return Text(" ")

    @staticmethod
    def parenthesized(left: str, content: Doc, right: str, level: _Level) -> Doc:
        group = Group([Text(left), Indent([Line(SOFT), content]), Line(SOFT), Text(right)])
        if level.kind == "optional":
            return FitsExpanded([group], level.gid)
        return group

    def optional_parentheses(self, node: cst.BaseExpression) -> Doc:
        gid = self.gid()
        content = self.bare(node, _Level("optional", gid))
        return Group(
            [
                IfBreaks([Text("(")], gid),
                IndentIfBreaks([Line(SOFT), content], gid),
                Line(SOFT),
                IfBreaks([Text(")")], gid),
            ],
            gid,
        )

    def parenthesize_if_expands(self, content: Doc) -> Doc:
        gid = self.gid()
        return Group(
            [
                IfBreaks([Text("(")], gid),
                IndentIfBreaks([Line(SOFT), content], gid),
                Line(SOFT),
                IfBreaks([Text(")")], gid),
            ],
            gid,
        )

    # ---- expressions --------------------------------------------------------
    def expr(self, node: cst.BaseExpression, level: _Level) -> Doc:
        node = self.sub(node)
        if _parenthesized(node):
            if len(node.lpar) > 1:
                raise Unsupported("nested parentheses")
            if isinstance(node, cst.Tuple):
                return self.collection("(", node.elements, ")", level)
            inner = self.bare(node, PAREN)
            return self.parenthesized("(", inner, ")", level)
        return self.bare(node, level)

    def bare(self, node: cst.BaseExpression, level: _Level) -> Doc:
        if isinstance(node, (cst.SimpleString, cst.FormattedString)):
            code = cst.Module([]).code_for_node(node.with_changes(lpar=[], rpar=[]))
            if "\n" in code:
                raise Unsupported("a string over several lines")
            return Text(code)
        if isinstance(node, cst.List):
            return self.collection("[", node.elements, "]", level)
        if isinstance(node, cst.Set):
            return self.collection("{", node.elements, "}", level)
        if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Imaginary)):
            return Text(node.value)
        if isinstance(node, cst.Ellipsis):
            return Text("...")
        if isinstance(node, cst.Attribute):
            _no_fluent_chain(node)
            return [self.expr(node.value, level), Text("." + node.attr.value)]
        if isinstance(node, cst.Call):
            _no_fluent_chain(node)
            return [self.expr(node.func, level), self.arguments(node, level)]
        if isinstance(node, cst.Subscript):
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                raise Unsupported("a slice")
            index = node.slice[0].slice
            if index.star is not None:
                raise Unsupported("a starred index")
            inner = self.expr(index.value, PAREN)
            return [self.expr(node.value, level), self.parenthesized("[", inner, "]", level)]
        if isinstance(node, cst.UnaryOperation):
            return [Text(_UNARY_TEXT[type(node.operator)]), self.expr(node.expression, level)]
        if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation, cst.Comparison)):
            return self.chain(node, level)
        if isinstance(node, cst.IfExp):
            return self.in_parens_group(self.if_exp(node, level), level)
        if isinstance(node, cst.NamedExpr):
            return [
                Group([self.expr(node.target, level), self.in_parens_space(level)]),
                Text(":= "),
                self.expr(node.value, level),
            ]
        if isinstance(node, cst.Tuple):
            if not node.elements:
                return Text("()")
            return self.sequence([e.value for e in node.elements], node.elements[-1].comma)
        raise Unsupported(type(node).__name__)

    def if_exp(self, node: cst.IfExp, level: _Level) -> list:
        items = [
            self.expr(node.body, level),
            self.in_parens_space(level),
            Text("if "),
            self.expr(node.test, level),
            self.in_parens_space(level),
            Text("else "),
        ]
        orelse = node.orelse
        if isinstance(orelse, cst.IfExp) and not _parenthesized(orelse):
            items.extend(self.if_exp(orelse, level))
        else:
            items.append(self.expr(orelse, level))
        return items

    def chain(self, node: cst.BaseExpression, level: _Level) -> Doc:
        """``a op b op c`` (one precedence): breaks before each operator."""
        operands: list[cst.BaseExpression] = []
        operators: list[str] = []

        def key(n: cst.BaseExpression) -> object:
            if isinstance(n, cst.BooleanOperation):
                return type(n.operator)
            if isinstance(n, cst.BinaryOperation):
                return ("binary", _BINARY[type(n.operator)])
            return None

        def flatten(n: Any) -> None:
            if isinstance(n, cst.Comparison):
                operands.append(n.left)
                for target in n.comparisons:
                    operators.append(_COMPARE_TEXT[type(target.operator)])
                    operands.append(target.comparator)
                return
            left = n.left
            if key(left) == key(n) and not _parenthesized(left):
                flatten(left)
            else:
                operands.append(left)
            if isinstance(n, cst.BooleanOperation):
                operators.append("or" if isinstance(n.operator, cst.Or) else "and")
            else:
                operators.append(_BINARY_TEXT[type(n.operator)])
            operands.append(n.right)

        flatten(node)
        items: list = [self.expr(operands[0], level)]
        for op, operand in zip(operators, operands[1:]):
            items += [self.in_parens_space(level), Text(op + " "), self.expr(operand, level)]
        return self.in_parens_group(items, level)

    def arguments(self, call: cst.Call, level: _Level) -> Doc:
        if not call.args:
            return Text("()")
        entries = []
        for arg in call.args:
            if arg.keyword is not None:
                entry: list = [Text(arg.keyword.value + "="), self.expr(arg.value, PAREN)]
            else:
                entry = [Text(arg.star), self.expr(arg.value, PAREN)]
            entries.append((entry, arg.comma, arg.whitespace_after_arg))
        return self.parenthesized("(", Group(self.joined(entries)), ")", level)

    def collection(
        self, left: str, elements: Sequence[cst.BaseElement], right: str, level: _Level
    ) -> Doc:
        """A list, set or parenthesized tuple: one element per line when it breaks."""
        if not elements:
            return Text(left + right)
        if left == "(" and len(elements) == 1:
            raise Unsupported("a one-element tuple")
        entries = []
        for element in elements:
            star = "*" if isinstance(element, cst.StarredElement) else ""
            entries.append(([Text(star), self.expr(element.value, PAREN)], element.comma, None))
        return self.parenthesized(left, self.joined(entries), right, level)

    def sequence(self, values: list[cst.BaseExpression], last_comma: object) -> Doc:
        """An unparenthesized tuple: parentheses only when it breaks."""
        entries: list[tuple[Doc, object, object]] = [
            (self.expr(v, PAREN), None, None) for v in values
        ]
        entries[-1] = (entries[-1][0], last_comma, None)
        return self.parenthesize_if_expands(self.joined(entries))

    def joined(self, entries: list) -> list:
        """Comma-separated entries with ruff's trailing comma (and its magic)."""
        items: list = []
        magic = False
        for i, (entry, comma, ws) in enumerate(entries):
            last = i == len(entries) - 1
            items.append(entry)
            # An end-of-line comment after the entry (before or after its comma)
            # trails it, after the comma.
            comment = self._line_comment(ws)
            if isinstance(comma, cst.Comma):
                after_comma = self._line_comment(comma.whitespace_after)
                if after_comma is not None and comment is not None:
                    raise Unsupported("two comments after one entry")
                comment = after_comma or comment
            if not last:
                items.append(Text(","))
            else:
                magic = isinstance(comma, cst.Comma)
                # A single entry keeps a trailing comma it has but never gets one.
                if magic or len(entries) > 1:
                    items.append(IfBreaks([Text(",")]))
            if comment is not None:
                items += [LineSuffix("  " + comment, comment_width(comment)), ExpandParent()]
            if not last:
                items.append(Line(SOFT_SPACE))
        if magic:
            items.append(ExpandParent())
        return items

    def _line_comment(self, ws: object) -> str | None:
        if isinstance(ws, cst.ParenthesizedWhitespace):
            if ws.empty_lines and any(line.comment for line in ws.empty_lines):
                raise Unsupported("an own-line comment")
            if ws.first_line.comment is not None:
                self.placed_comments += 1
                return ws.first_line.comment.value
        return None

    # ---- statements ---------------------------------------------------------
    def last_expression(self, value: cst.BaseExpression) -> Doc:
        """ruff's layout of the value after ``=``, ``return`` or ``if``: optional parentheses."""
        value = self.sub(value)
        if _parenthesized(value):
            if len(value.lpar) > 1:
                raise Unsupported("nested parentheses")
            value = value.with_changes(lpar=[], rpar=[])
        if isinstance(value, cst.Tuple):
            if not value.elements:
                return Text("()")
            return self.sequence([e.value for e in value.elements], value.elements[-1].comma)
        if isinstance(value, (cst.Call, cst.Subscript)) or can_omit_optional_parentheses(
            value, self.swap
        ):
            return self.optional_parentheses(value)
        if isinstance(value, _TERMINALS + (cst.Attribute,)):
            raise Unsupported("a value without split points")
        return self.parenthesize_if_expands(self.bare(value, PAREN))

    def statement(self, node: cst.CSTNode) -> Doc:
        """The document of a small statement (or a compound statement's test)."""
        if isinstance(node, cst.Assign):
            items: list = []
            for target in node.targets:
                items += [self.target(target.target), Text(" = ")]
            return [*items, self.last_expression(node.value)]
        if isinstance(node, cst.AugAssign):
            op = cst.Module([]).code_for_node(node.operator).strip()
            return [self.target(node.target), Text(f" {op} "), self.last_expression(node.value)]
        if isinstance(node, cst.AnnAssign):
            if node.value is None:
                raise Unsupported("an annotation without a value")
            annotation = self.expr(node.annotation.annotation, TOP)
            return [
                self.target(node.target),
                Text(": "),
                annotation,
                Text(" = "),
                self.last_expression(node.value),
            ]
        if isinstance(node, cst.Return):
            if node.value is None:
                return Text("return")
            return [Text("return "), self.last_expression(node.value)]
        if isinstance(node, cst.Expr):
            return self.last_expression(node.value)
        raise Unsupported(type(node).__name__)

    def target(self, node: cst.BaseExpression) -> Doc:
        node = self.sub(node)
        if isinstance(node, cst.Tuple) and not _parenthesized(node):
            parts: list = []
            for i, element in enumerate(node.elements):
                if i:
                    parts.append(Text(", "))
                parts.append(self.expr(element.value, TOP))
            return parts
        return self.expr(node, TOP)


def _propagate(doc: Doc) -> bool:
    """Mark groups that must break (ruff's ``propagate_expand``); True when ``doc``
    forces its parent to break."""
    if isinstance(doc, list):
        expands = False
        for item in doc:
            expands = _propagate(item) or expands
        return expands
    if isinstance(doc, ExpandParent):
        return True
    if isinstance(doc, (Group, CondGroup)):
        if _propagate(doc.items):
            doc.expand = True
        return getattr(doc, "expand", False)
    if isinstance(doc, FitsExpanded):
        if _propagate(doc.items):
            doc.propagate = True
        return False
    if isinstance(doc, (Indent, IndentIfBreaks, IfBreaks)):
        return _propagate(doc.items)
    return False


def _strip_markers(doc: Doc) -> Doc:
    if isinstance(doc, list):
        return [_strip_markers(d) for d in doc if not isinstance(d, ExpandParent)]
    if hasattr(doc, "items"):
        doc.items = _strip_markers(doc.items)
    return doc


def render(
    node: cst.CSTNode,
    *,
    column: int,
    indent: str,
    after: str = "",
    comment: str | None = None,
    width: int = LINE_LENGTH,
    top: bool = False,
    has_comments: bool = True,
    swap: tuple[cst.CSTNode, cst.CSTNode] | None = None,
) -> str:
    """The text of ``node`` laid out from ``column`` (continuation lines start with
    ``indent`` plus ruff's indentation), followed on its last line by ``after``
    (code such as ``:``) and ``comment`` (counted, not written). ``has_comments``
    False spares the search for comments when the caller knows there are none.
    With ``swap`` (old, new), ``new`` is laid out where ``node`` holds ``old``
    (:class:`Unsupported` when the layout never meets ``old``).

    A small statement is laid out whole; an expression as the last expression of a
    statement (optional parentheses), or with ``top`` as one that may split only at
    brackets of its own (it sits in a statement kept as it is).
    """
    layout = Layout({id(swap[0]): swap[1]} if swap else None)
    if top:
        assert isinstance(node, cst.BaseExpression)
        body = layout.expr(node, TOP)
    elif isinstance(node, cst.BaseSmallStatement):
        body = layout.statement(node)
    else:
        assert isinstance(node, cst.BaseExpression)
        body = layout.last_expression(node)
    # Every comment in the node must have found its place (False: the caller knows
    # the node's source holds no `#` at all).
    if (_comments(node) if has_comments else 0) != layout.placed_comments:
        raise Unsupported("a comment the layout would move")
    if swap and layout.swapped != 1:
        raise Unsupported("the node to swap is not where the layout looks")
    doc: list = [body, Text(after)]
    if comment is not None:
        doc.append(LineSuffix("  " + comment, comment_width(comment)))
    _propagate(doc)
    unit = "\t" if "\t" in indent else "    "
    text = Printer(width=width, unit=unit).print(_strip_markers(doc), indent, column)
    if comment is not None:
        text = text[: len(text) - len("  " + comment)]
    return text[: len(text) - len(after)] if after else text
