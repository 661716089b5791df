"""libcst's front end: a libcst module lowered to the intermediate form (:mod:`.ir`).

The Fixit rule and the codemod hand the core a module libcst has parsed already; this
module lowers it to the same form, with the same spans, as Python's ``ast`` front end
lowers the same text (a test holds both equal over every case and vLLM file). Spans
come from libcst's ``PositionProvider``, which the caller resolves once per module.

Only the adapters and fix placement import this module: checking a file never does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from cgguard.static.core import ir

Positions = Mapping[cst.CSTNode, CodeRange]

_BINARY = {
    cst.Add: "+",
    cst.Subtract: "-",
    cst.Multiply: "*",
    cst.MatrixMultiply: "@",
    cst.Divide: "/",
    cst.FloorDivide: "//",
    cst.Modulo: "%",
    cst.Power: "**",
    cst.LeftShift: "<<",
    cst.RightShift: ">>",
    cst.BitOr: "|",
    cst.BitXor: "^",
    cst.BitAnd: "&",
}
_AUGMENTED = {
    cst.AddAssign: "+",
    cst.SubtractAssign: "-",
    cst.MultiplyAssign: "*",
    cst.MatrixMultiplyAssign: "@",
    cst.DivideAssign: "/",
    cst.FloorDivideAssign: "//",
    cst.ModuloAssign: "%",
    cst.PowerAssign: "**",
    cst.LeftShiftAssign: "<<",
    cst.RightShiftAssign: ">>",
    cst.BitOrAssign: "|",
    cst.BitXorAssign: "^",
    cst.BitAndAssign: "&",
}
_UNARY = {cst.Minus: "-", cst.Plus: "+", cst.BitInvert: "~", cst.Not: "not"}
_COMPARE = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.Is: "is",
    cst.IsNot: "is not",
    cst.In: "in",
    cst.NotIn: "not in",
}
_CONSTANT_NAMES = {"True": True, "False": False, "None": None}
_SMALL_KINDS = {
    cst.Pass: "pass",
    cst.Break: "break",
    cst.Continue: "continue",
    cst.Global: "global",
    cst.Nonlocal: "nonlocal",
}


def lower_module(
    module: cst.Module, positions: Positions | None = None, text: str | None = None
) -> ir.Module:
    """``module`` in the intermediate form. ``positions``: its ``PositionProvider`` map, and
    ``text``: its code (each computed here when not given)."""
    if positions is None:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lowered = _Lowering(positions).statements(module.body)
    # The first line through the end of the last line's code (its line break left out).
    lines = (module.code if text is None else text).splitlines()
    last = len(lines) or 1
    return ir.Module(lowered, ir.Span(1, 0, last, len(lines[-1]) if lines else 0))


def parse_and_lower(text: str) -> ir.Module:
    """``text`` parsed by libcst and lowered (for tests and tools; the adapters hand over
    the module they have)."""
    return lower_module(cst.parse_module(text), text=text)


class _Lowering:
    def __init__(self, positions: Positions):
        self.positions = positions

    # ---- spans ----------------------------------------------------------------------

    def span(self, node: cst.CSTNode) -> ir.Span:
        r = self.positions[node]
        return ir.Span(r.start.line, r.start.column, r.end.line, r.end.column)

    def between(self, first: cst.CSTNode, last: cst.CSTNode) -> ir.Span:
        a, b = self.positions[first], self.positions[last]
        return ir.Span(a.start.line, a.start.column, b.end.line, b.end.column)

    # ---- module and statements ------------------------------------------------------

    def statements(self, body: Sequence[cst.CSTNode]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                out.extend(self.small(s) for s in stmt.body)
            else:
                out.append(self.compound(stmt))
        return tuple(out)

    def suite(self, suite: cst.BaseSuite) -> tuple[ir.Stmt, ...]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return tuple(self.small(s) for s in suite.body)
        return self.statements(suite.body)

    def orelse(self, node: cst.Else | None) -> tuple[ir.Stmt, ...]:
        return () if node is None else self.suite(node.body)

    def small(self, stmt: cst.BaseSmallStatement) -> ir.Stmt:
        span = self.span(stmt)
        if isinstance(stmt, cst.Assign):
            targets = tuple(self.expr(t.target) for t in stmt.targets)
            return ir.Assign(targets, self.expr(stmt.value), None, span)
        if isinstance(stmt, cst.AnnAssign):
            annotation = self.expr(stmt.annotation.annotation)
            if stmt.value is None:
                return ir.Other("annotation", (self.expr(stmt.target), annotation), span)
            return ir.Assign((self.expr(stmt.target),), self.expr(stmt.value), annotation, span)
        if isinstance(stmt, cst.AugAssign):
            op = _AUGMENTED[type(stmt.operator)]
            return ir.AugAssign(self.expr(stmt.target), op, self.expr(stmt.value), span)
        if isinstance(stmt, cst.Expr):
            return ir.ExprStmt(self.expr(stmt.value), span)
        if isinstance(stmt, cst.Return):
            value = None if stmt.value is None else self.expr(stmt.value)
            return ir.Return(value, span)
        if isinstance(stmt, cst.Import):
            names = tuple(self.alias(a) for a in stmt.names)
            return ir.Import(None, names, 0, False, span)
        if isinstance(stmt, cst.ImportFrom):
            return self.import_from(stmt, span)
        return ir.Other(*self.other(stmt), span)

    def other(self, stmt: cst.BaseSmallStatement) -> tuple[str, tuple[ir.Expr, ...]]:
        kind = _SMALL_KINDS.get(type(stmt))
        if kind is not None:
            return kind, ()
        if isinstance(stmt, cst.Del):
            target = stmt.target
            # ``del a, b``: Python's tree holds two targets; ``del (a, b)`` one tuple.
            if isinstance(target, cst.Tuple) and not target.lpar:
                return "del", tuple(self.expr(e.value) for e in target.elements)
            return "del", (self.expr(target),)
        if isinstance(stmt, cst.Assert):
            parts = [stmt.test] if stmt.msg is None else [stmt.test, stmt.msg]
            return "assert", tuple(self.expr(p) for p in parts)
        if isinstance(stmt, cst.Raise):
            parts = [p for p in (stmt.exc, stmt.cause.item if stmt.cause else None) if p]
            return "raise", tuple(self.expr(p) for p in parts)
        if isinstance(stmt, cst.TypeAlias):
            return "typealias", (self.expr(stmt.name), self.expr(stmt.value))
        raise TypeError(f"unknown statement {type(stmt).__name__}")

    def alias(self, alias: cst.ImportAlias) -> ir.Alias:
        asname = None
        if alias.asname is not None:
            assert isinstance(alias.asname.name, cst.Name)
            asname = alias.asname.name.value
        return ir.Alias(_dotted(alias.name), asname, self.span(alias))

    def import_from(self, stmt: cst.ImportFrom, span: ir.Span) -> ir.Import:
        module = None if stmt.module is None else _dotted(stmt.module)
        if isinstance(stmt.names, cst.ImportStar):
            names: tuple[ir.Alias, ...] = (ir.Alias("*", None, self.span(stmt.names)),)
        else:
            names = tuple(self.alias(a) for a in stmt.names)
        return ir.Import(module, names, len(stmt.relative), True, span)

    def compound(self, stmt: cst.CSTNode) -> ir.Stmt:
        span = self.span(stmt)
        if isinstance(stmt, cst.If):
            if isinstance(stmt.orelse, cst.If):
                orelse: tuple[ir.Stmt, ...] = (self.compound(stmt.orelse),)
            else:
                orelse = self.orelse(stmt.orelse)
            return ir.If(self.expr(stmt.test), self.suite(stmt.body), orelse, span)
        if isinstance(stmt, cst.While):
            body = self.suite(stmt.body)
            return ir.While(self.expr(stmt.test), body, self.orelse(stmt.orelse), span)
        if isinstance(stmt, cst.For):
            return ir.For(
                self.expr(stmt.target),
                self.expr(stmt.iter),
                self.suite(stmt.body),
                self.orelse(stmt.orelse),
                stmt.asynchronous is not None,
                span,
            )
        if isinstance(stmt, cst.With):
            items = tuple(self.with_item(item) for item in stmt.items)
            return ir.With(items, self.suite(stmt.body), stmt.asynchronous is not None, span)
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            handlers = tuple(self.handler(h) for h in stmt.handlers)
            final = () if stmt.finalbody is None else self.suite(stmt.finalbody.body)
            return ir.Try(self.suite(stmt.body), handlers, self.orelse(stmt.orelse), final, span)
        if isinstance(stmt, cst.Match):
            cases = tuple(self.case(c) for c in stmt.cases)
            return ir.Match(self.expr(stmt.subject), cases, span)
        if isinstance(stmt, cst.FunctionDef):
            return ir.FunctionDef(
                stmt.name.value,
                self.parameters(stmt.params),
                self.suite(stmt.body),
                tuple(self.expr(d.decorator) for d in stmt.decorators),
                None if stmt.returns is None else self.expr(stmt.returns.annotation),
                stmt.asynchronous is not None,
                span,
            )
        if isinstance(stmt, cst.ClassDef):
            bases = tuple(self.arg(a) for a in (*stmt.bases, *stmt.keywords))
            decorators = tuple(self.expr(d.decorator) for d in stmt.decorators)
            return ir.ClassDef(stmt.name.value, bases, self.suite(stmt.body), decorators, span)
        raise TypeError(f"unknown statement {type(stmt).__name__}")

    def with_item(self, item: cst.WithItem) -> ir.WithItem:
        context = self.expr(item.item)
        if item.asname is None:
            return ir.WithItem(context, None, context.span)
        target = self.expr(item.asname.name)
        span = ir.Span(
            context.span.line, context.span.col, target.span.end_line, target.span.end_col
        )
        return ir.WithItem(context, target, span)

    def handler(self, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> ir.Handler:
        name = None
        if handler.name is not None:
            assert isinstance(handler.name.name, cst.Name)
            name = handler.name.name.value
        kind = None if handler.type is None else self.expr(handler.type)
        return ir.Handler(kind, name, self.suite(handler.body), self.span(handler))

    def case(self, case: cst.MatchCase) -> ir.Case:
        guard = None if case.guard is None else self.expr(case.guard)
        return ir.Case(guard, self.suite(case.body), self.span(case))

    # ---- parameters and arguments ---------------------------------------------------

    def parameters(self, params: cst.Parameters) -> tuple[ir.Param, ...]:
        out = [self.param(p, "posonly") for p in params.posonly_params]
        out += [self.param(p, "pos") for p in params.params]
        if isinstance(params.star_arg, cst.Param):
            out.append(self.param(params.star_arg, "vararg"))
        out += [self.param(p, "kwonly") for p in params.kwonly_params]
        if params.star_kwarg is not None:
            out.append(self.param(params.star_kwarg, "kwarg"))
        return tuple(out)

    def param(self, param: cst.Param, kind: str) -> ir.Param:
        # The name through its annotation and default (without ``*`` or ``**``).
        annotation = None if param.annotation is None else self.expr(param.annotation.annotation)
        default = None if param.default is None else self.expr(param.default)
        start = self.positions[param.name].start
        # Python's tree ends a parameter at its annotation's closing parenthesis, if any.
        if default is not None:
            end = default.span
        elif param.annotation is not None:
            end = self.span(param.annotation)
        else:
            end = self.span(param.name)
        span = ir.Span(start.line, start.column, end.end_line, end.end_col)
        return ir.Param(param.name.value, kind, default, annotation, span)

    def arg(self, arg: cst.Arg) -> ir.Arg:
        value = self.expr(arg.value)
        keyword = None if arg.keyword is None else arg.keyword.value
        # A plain positional argument is its value (its parentheses stay outside, as for
        # any expression); ``*a``, ``**k`` and ``k=v`` run from their first character.
        span = value.span if not arg.star and keyword is None else self.span(arg)
        return ir.Arg(value, keyword, str(arg.star), span)

    # ---- expressions ----------------------------------------------------------------

    def exprs(self, nodes: Iterator[cst.BaseExpression] | Sequence[cst.BaseExpression]):
        return tuple(self.expr(n) for n in nodes)

    def expr(self, node: cst.BaseExpression) -> ir.Expr:
        lower = _EXPRESSIONS.get(type(node))
        if lower is None:
            raise TypeError(f"unknown expression {type(node).__name__}")
        return lower(self, node)

    def name(self, node: cst.Name) -> ir.Expr:
        if node.value in _CONSTANT_NAMES:
            return ir.Const(_CONSTANT_NAMES[node.value], self.span(node))
        return ir.Name(node.value, self.span(node))

    def const(self, node: cst.BaseExpression) -> ir.Expr:
        value = node.evaluated_value  # type: ignore[attr-defined]
        return ir.Const(value, self.span(node))

    def ellipsis(self, node: cst.Ellipsis) -> ir.Expr:
        return ir.Const(Ellipsis, self.span(node))

    def concatenated(self, node: cst.ConcatenatedString) -> ir.Expr:
        parts = list(_string_parts(node))
        if any(isinstance(p, cst.FormattedString) for p in parts):
            inner = [e for p in parts for e in _formatted_expressions(p)]
            return ir.Opaque("fstring", self.exprs(inner), self.span(node))
        return ir.Const(node.evaluated_value, self.span(node))

    def fstring(self, node: cst.FormattedString) -> ir.Expr:
        return ir.Opaque("fstring", self.exprs(list(_formatted_expressions(node))), self.span(node))

    def attribute(self, node: cst.Attribute) -> ir.Expr:
        return ir.Attribute(self.expr(node.value), node.attr.value, self.span(node))

    def subscript(self, node: cst.Subscript) -> ir.Expr:
        elements = node.slice
        alone = elements[0].slice if len(elements) == 1 else None
        index: ir.Expr
        if isinstance(alone, cst.Index) and alone.star is not None:
            # ``a[*b]``: Python's tree holds a tuple of one starred element.
            index = ir.Seq("tuple", (self.element(elements[0]),), self.span(alone))
        elif alone is not None and isinstance(elements[0].comma, cst.MaybeSentinel):
            index = self.element(elements[0])
        else:
            # ``a[i, j]``: a tuple from the first element to the last (its comma included).
            items = tuple(self.element(e) for e in elements)
            start = self.outer(elements[0].slice)[0]
            comma = elements[-1].comma
            if isinstance(comma, cst.Comma):
                end = self.positions[comma].end
            else:
                end = self.outer(elements[-1].slice)[1]
            index = ir.Seq("tuple", items, ir.Span(start.line, start.column, end.line, end.column))
        return ir.Subscript(self.expr(node.value), index, self.span(node))

    def outer(self, node: cst.CSTNode) -> tuple[CodePosition, CodePosition]:
        """Where ``node``'s code starts and ends with its own parentheses (a slice: from its
        first part or colon to its last, as Python's tree has it)."""
        if isinstance(node, cst.Index):
            start, end = self.outer(node.value)
            return (self.positions[node].start if node.star else start), end
        if isinstance(node, cst.Slice):
            first = self.positions[node.first_colon]
            start = first.start if node.lower is None else self.outer(node.lower)[0]
            if node.step is not None:
                end = self.outer(node.step)[1]
            elif isinstance(node.second_colon, cst.Colon):
                end = self.positions[node.second_colon].end
            elif node.upper is not None:
                end = self.outer(node.upper)[1]
            else:
                end = first.end
            return start, end
        lpar, rpar = getattr(node, "lpar", ()), getattr(node, "rpar", ())
        start = self.positions[lpar[0] if lpar else node].start
        return start, self.positions[rpar[-1] if rpar else node].end

    def element(self, element: cst.SubscriptElement) -> ir.Expr:
        inner = element.slice
        if isinstance(inner, cst.Slice):
            parts = [p for p in (inner.lower, inner.upper, inner.step) if p is not None]
            start, end = self.outer(inner)
            span = ir.Span(start.line, start.column, end.line, end.column)
            return ir.Opaque("slice", self.exprs(parts), span)
        assert isinstance(inner, cst.Index)
        value = self.expr(inner.value)
        if inner.star is not None:
            return ir.Starred(value, self.span(inner))
        return value

    def call(self, node: cst.Call) -> ir.Expr:
        return ir.Call(self.expr(node.func), tuple(self.arg(a) for a in node.args), self.span(node))

    def binary(self, node: cst.BinaryOperation) -> ir.Expr:
        op = _BINARY[type(node.operator)]
        return ir.BinOp(op, self.expr(node.left), self.expr(node.right), self.span(node))

    def unary(self, node: cst.UnaryOperation) -> ir.Expr:
        return ir.UnaryOp(_UNARY[type(node.operator)], self.expr(node.expression), self.span(node))

    def boolean(self, node: cst.BooleanOperation) -> ir.Expr:
        # Python's tree keeps ``a or b or c`` flat; libcst nests it (a parenthesised
        # operand stays its own operation in both).
        op = "and" if isinstance(node.operator, cst.And) else "or"
        values: list[cst.BaseExpression] = []
        stack: list[cst.BaseExpression] = [node]
        while stack:
            cur = stack.pop()
            if (
                isinstance(cur, cst.BooleanOperation)
                and (cur is node or not cur.lpar)
                and isinstance(cur.operator, type(node.operator))
            ):
                stack += [cur.right, cur.left]
            else:
                values.append(cur)
        return ir.BoolOp(op, self.exprs(values), self.span(node))

    def compare(self, node: cst.Comparison) -> ir.Expr:
        ops = tuple(_COMPARE[type(t.operator)] for t in node.comparisons)
        comparators = tuple(self.expr(t.comparator) for t in node.comparisons)
        return ir.Compare(self.expr(node.left), ops, comparators, self.span(node))

    def if_exp(self, node: cst.IfExp) -> ir.Expr:
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        return ir.IfExp(test, body, orelse, self.span(node))

    def display(self, node: cst.Tuple | cst.List | cst.Set) -> ir.Expr:
        kind = {cst.Tuple: "tuple", cst.List: "list", cst.Set: "set"}[type(node)]
        return ir.Seq(kind, tuple(self.display_element(e) for e in node.elements), self.span(node))

    def display_element(self, element: cst.BaseElement) -> ir.Expr:
        value = self.expr(element.value)
        if isinstance(element, cst.StarredElement):
            return ir.Starred(value, self.span(element))
        return value

    def dict(self, node: cst.Dict) -> ir.Expr:
        keys: list[ir.Expr | None] = []
        values: list[ir.Expr] = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                keys.append(self.expr(element.key))
            else:
                keys.append(None)  # ``**m``
            values.append(self.expr(element.value))
        return ir.Dict(tuple(keys), tuple(values), self.span(node))

    def named(self, node: cst.NamedExpr) -> ir.Expr:
        target = self.expr(node.target)
        assert isinstance(target, ir.Name)
        return ir.NamedExpr(target, self.expr(node.value), self.span(node))

    def lambda_(self, node: cst.Lambda) -> ir.Expr:
        return ir.Lambda(self.parameters(node.params), self.expr(node.body), self.span(node))

    def comprehension(self, node: cst.BaseSimpleComp | cst.DictComp) -> ir.Expr:
        kinds: dict[type, str] = {
            cst.ListComp: "list",
            cst.SetComp: "set",
            cst.DictComp: "dict",
            cst.GeneratorExp: "generator",
        }
        kind = kinds[type(node)]
        key = None
        if isinstance(node, cst.DictComp):
            key, elt = self.expr(node.key), self.expr(node.value)
        else:
            elt = self.expr(node.elt)
        generators = []
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            generators.append(self.comp_for(comp))
            comp = comp.inner_for_in
        return ir.Comprehension(kind, elt, key, tuple(generators), self.span(node))

    def comp_for(self, comp: cst.CompFor) -> ir.CompFor:
        target, iter_ = self.expr(comp.target), self.expr(comp.iter)
        ifs = tuple(self.expr(c.test) for c in comp.ifs)
        # From ``async`` or ``for`` (libcst's own position starts at the blank before it).
        ws = comp.whitespace_after_for
        if comp.asynchronous is not None:
            start = self.positions[comp.asynchronous].start
        elif isinstance(ws, cst.SimpleWhitespace):
            at = self.outer(comp.target)[0]  # a parenthesised target: from its "("
            start = CodePosition(at.line, at.column - len(ws.value) - len("for"))
        else:  # ``for`` ends its line (inside brackets)
            at, before = self.positions[comp].start, comp.whitespace_before
            blank = len(before.value) if isinstance(before, cst.SimpleWhitespace) else 0
            start = CodePosition(at.line, at.column + blank)
        end = (ifs[-1] if ifs else iter_).span
        span = ir.Span(start.line, start.column, end.end_line, end.end_col)
        return ir.CompFor(target, iter_, ifs, comp.asynchronous is not None, span)

    def await_(self, node: cst.Await) -> ir.Expr:
        return ir.Opaque("await", (self.expr(node.expression),), self.span(node))

    def yield_(self, node: cst.Yield) -> ir.Expr:
        value = node.value
        if isinstance(value, cst.From):
            return ir.Opaque("yield from", (self.expr(value.item),), self.span(node))
        parts = () if value is None else (self.expr(value),)
        return ir.Opaque("yield", parts, self.span(node))


_EXPRESSIONS: dict[type, Callable[..., ir.Expr]] = {
    cst.Name: _Lowering.name,
    cst.Integer: _Lowering.const,
    cst.Float: _Lowering.const,
    cst.Imaginary: _Lowering.const,
    cst.SimpleString: _Lowering.const,
    cst.Ellipsis: _Lowering.ellipsis,
    cst.ConcatenatedString: _Lowering.concatenated,
    cst.FormattedString: _Lowering.fstring,
    cst.Attribute: _Lowering.attribute,
    cst.Subscript: _Lowering.subscript,
    cst.Call: _Lowering.call,
    cst.BinaryOperation: _Lowering.binary,
    cst.UnaryOperation: _Lowering.unary,
    cst.BooleanOperation: _Lowering.boolean,
    cst.Comparison: _Lowering.compare,
    cst.IfExp: _Lowering.if_exp,
    cst.Tuple: _Lowering.display,
    cst.List: _Lowering.display,
    cst.Set: _Lowering.display,
    cst.Dict: _Lowering.dict,
    cst.NamedExpr: _Lowering.named,
    cst.Lambda: _Lowering.lambda_,
    cst.ListComp: _Lowering.comprehension,
    cst.SetComp: _Lowering.comprehension,
    cst.DictComp: _Lowering.comprehension,
    cst.GeneratorExp: _Lowering.comprehension,
    cst.Await: _Lowering.await_,
    cst.Yield: _Lowering.yield_,
}


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    assert isinstance(node, cst.Attribute)
    return f"{_dotted(node.value)}.{node.attr.value}"


def _string_parts(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(node, cst.ConcatenatedString):
        yield from _string_parts(node.left)
        yield from _string_parts(node.right)
    else:
        yield node


def _formatted_expressions(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The expressions of an f-string's replacement fields, in source order (a format
    spec's own fields, ``{x:{width}}``, are not followed)."""
    if isinstance(node, cst.FormattedString):
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                yield part.expression
