"""The ``ast`` front end: Python's own parser on the whole file, lowered to the intermediate form.

The whole file is parsed, so what a string holds is never code. Python's positions count
UTF-8 bytes; the form counts characters, so columns are converted on lines that are not
ASCII. A parenthesised tuple's span leaves out its parentheses, as libcst's does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from cgguard.static.core import ir

_make_tuple = tuple.__new__

_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
}
_UNARY = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_OTHER_STMTS = {
    ast.Pass: "pass",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.Delete: "del",
    ast.Assert: "assert",
    ast.Raise: "raise",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
}


def parse(text: str, path: str = "<string>", *, lazy: bool = False) -> ir.Module:
    """The file's intermediate form. Raises SyntaxError (or ValueError, RecursionError).

    ``lazy``: function bodies are lowered when first read (:class:`ir.Deferred`)."""
    return lower(ast.parse(text, filename=path), text, lazy=lazy)


def lower(tree: ast.Module, text: str, *, lazy: bool = False) -> ir.Module:
    lines = physical_lines(text)
    body = _Lowering(lines, lazy, text.isascii()).block(tree.body)
    last = len(lines) or 1
    end_col = len(lines[-1].rstrip("\r\n")) if lines else 0
    return ir.Module(body, ir.Span(1, 0, last, end_col))


# Python's tokenizer ends a line only at these (str.splitlines also splits at \f, \v...).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def physical_lines(text: str) -> list[str]:
    """The text's lines with their endings, split where Python's tokenizer splits them."""
    if any(c in text for c in _ODD_BREAKS):
        return _LINE.findall(text)
    return text.splitlines(keepends=True)


_ODD_BREAKS = "\f\v\x1c\x1d\x1e\x85\u2028\u2029"


class _Lowering:
    def __init__(self, lines: list[str], lazy: bool = False, ascii_only: bool = False):
        self.lines = lines
        self.lazy = lazy
        # Python's offsets count UTF-8 bytes, the form's count characters: the same in a
        # text that is ASCII throughout (most files), where no line need be looked at.
        self.ascii_only = ascii_only
        self.expr_of: dict[type, Callable[[Any], ir.Expr]] = {
            ast.Name: self.name,
            ast.Constant: self.constant,
            ast.Attribute: self.attribute,
            ast.Subscript: self.subscript,
            ast.Call: self.call,
            ast.BinOp: self.binop,
            ast.UnaryOp: self.unaryop,
            ast.BoolOp: self.boolop,
            ast.Compare: self.compare,
            ast.IfExp: self.ifexp,
            ast.Tuple: self.tuple_,
            ast.List: self.list_,
            ast.Set: self.set_,
            ast.Dict: self.dict_,
            ast.Starred: self.starred,
            ast.NamedExpr: self.namedexpr,
            ast.Lambda: self.lambda_,
            ast.ListComp: self.comp,
            ast.SetComp: self.comp,
            ast.GeneratorExp: self.comp,
            ast.DictComp: self.comp,
            ast.Slice: self.slice_,
            ast.JoinedStr: self.fstring,
            ast.FormattedValue: self.formatted,
            ast.Await: self.opaque,
            ast.Yield: self.opaque,
            ast.YieldFrom: self.opaque,
        }

    # ---- spans ------------------------------------------------------------------------

    def span(self, node: Any) -> ir.Span:
        line, end_line = node.lineno, node.end_lineno
        col, end_col = node.col_offset, node.end_col_offset
        if self.ascii_only:
            # ``tuple.__new__`` makes the same Span without the named tuple's own ``__new__``
            # (a Python function): this runs once for every node of every lowered body.
            return _make_tuple(ir.Span, (line, col, end_line, end_col))
        text = self.lines[line - 1]
        if not text.isascii():
            col = len(text.encode("utf-8")[:col].decode("utf-8", errors="replace"))
        text = self.lines[end_line - 1]
        if not text.isascii():
            end_col = len(text.encode("utf-8")[:end_col].decode("utf-8", errors="replace"))
        return _make_tuple(ir.Span, (line, col, end_line, end_col))

    # ---- statements --------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        return tuple(self.stmt(s) for s in stmts)

    def stmt(self, node: ast.stmt) -> ir.Stmt:
        e = self.expr
        span = self.span(node)
        if isinstance(node, ast.Expr):
            return ir.ExprStmt(e(node.value), span)
        if isinstance(node, ast.Assign):
            targets = tuple(e(t) for t in node.targets)
            return ir.Assign(targets, e(node.value), None, span)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                return ir.Other("annotation", (e(node.target), e(node.annotation)), span)
            return ir.Assign((e(node.target),), e(node.value), e(node.annotation), span)
        if isinstance(node, ast.AugAssign):
            return ir.AugAssign(e(node.target), _BINOPS[type(node.op)], e(node.value), span)
        if isinstance(node, ast.Return):
            return ir.Return(None if node.value is None else e(node.value), span)
        if isinstance(node, ast.If):
            return ir.If(e(node.test), self.block(node.body), self.block(node.orelse), span)
        if isinstance(node, ast.While):
            return ir.While(e(node.test), self.block(node.body), self.block(node.orelse), span)
        if isinstance(node, ast.For | ast.AsyncFor):
            return ir.For(
                e(node.target),
                e(node.iter),
                self.block(node.body),
                self.block(node.orelse),
                isinstance(node, ast.AsyncFor),
                span,
            )
        if isinstance(node, ast.With | ast.AsyncWith):
            items = tuple(self.withitem(item) for item in node.items)
            return ir.With(items, self.block(node.body), isinstance(node, ast.AsyncWith), span)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body: tuple[ir.Stmt, ...] | ir.Deferred
            if self.lazy:
                stmts = node.body
                body = ir.Deferred(lambda: self.block(stmts))
            else:
                body = self.block(node.body)
            return ir.FunctionDef(
                node.name,
                self.params(node.args),
                body,
                tuple(e(d) for d in node.decorator_list),
                None if node.returns is None else e(node.returns),
                isinstance(node, ast.AsyncFunctionDef),
                span,
            )
        if isinstance(node, ast.ClassDef):
            bases = tuple(self.arg(b) for b in node.bases) + tuple(
                self.keyword(k) for k in node.keywords
            )
            return ir.ClassDef(
                node.name,
                bases,
                self.block(node.body),
                tuple(e(d) for d in node.decorator_list),
                span,
            )
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers = tuple(
                ir.Handler(
                    None if h.type is None else e(h.type),
                    h.name,
                    self.block(h.body),
                    self.span(h),
                )
                for h in node.handlers  # type: ignore[attr-defined]
            )
            return ir.Try(
                self.block(node.body),  # type: ignore[attr-defined]
                handlers,
                self.block(node.orelse),  # type: ignore[attr-defined]
                self.block(node.finalbody),  # type: ignore[attr-defined]
                span,
            )
        if isinstance(node, ast.Import):
            names = tuple(ir.Alias(a.name, a.asname, self.span(a)) for a in node.names)
            return ir.Import(None, names, 0, False, span)
        if isinstance(node, ast.ImportFrom):
            names = tuple(ir.Alias(a.name, a.asname, self.span(a)) for a in node.names)
            return ir.Import(node.module, names, node.level or 0, True, span)
        if isinstance(node, ast.Match):
            cases = tuple(
                ir.Case(
                    None if c.guard is None else e(c.guard),
                    self.block(c.body),
                    self._case_span(c),
                )
                for c in node.cases
            )
            return ir.Match(e(node.subject), cases, span)
        kind = _OTHER_STMTS.get(type(node), type(node).__name__.lower())
        return ir.Other(kind, tuple(self.expr(x) for x in _expressions_of(node)), span)

    def _case_span(self, case: ast.match_case) -> ir.Span:
        first = self.span(case.pattern)
        last = self.span(case.body[-1])
        # ``case`` sits on the pattern's line, four characters and a space before it at least.
        text = self.lines[first.line - 1]
        col = text.rfind("case", 0, first.col + 1)
        return ir.Span(first.line, max(col, 0), last.end_line, last.end_col)

    def withitem(self, item: ast.withitem) -> ir.WithItem:
        context = self.expr(item.context_expr)
        target = None if item.optional_vars is None else self.expr(item.optional_vars)
        end = (target or context).span
        span = ir.Span(context.span.line, context.span.col, end.end_line, end.end_col)
        return ir.WithItem(context, target, span)

    def params(self, args: ast.arguments) -> tuple[ir.Param, ...]:
        found: list[ir.Param] = []
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults.extend(args.defaults)
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            kind = "posonly" if i < len(args.posonlyargs) else "pos"
            found.append(self.param(arg, kind, default))
        if args.vararg is not None:
            found.append(self.param(args.vararg, "vararg", None))
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            found.append(self.param(arg, "kwonly", kw_default))
        if args.kwarg is not None:
            found.append(self.param(args.kwarg, "kwarg", None))
        return tuple(found)

    def param(self, arg: ast.arg, kind: str, default: ast.expr | None) -> ir.Param:
        span = self.span(arg)
        low = None if default is None else self.expr(default)
        if low is not None:
            span = ir.Span(span.line, span.col, low.span.end_line, low.span.end_col)
        note = None if arg.annotation is None else self.expr(arg.annotation)
        return ir.Param(arg.arg, kind, low, note, span)

    # ---- expressions -------------------------------------------------------------------

    def expr(self, node: ast.expr) -> ir.Expr:
        return self.expr_of[type(node)](node)

    def name(self, node: ast.Name) -> ir.Expr:
        return ir.Name(node.id, self.span(node))

    def constant(self, node: ast.Constant) -> ir.Expr:
        return ir.Const(node.value, self.span(node))

    def attribute(self, node: ast.Attribute) -> ir.Expr:
        return ir.Attribute(self.expr(node.value), node.attr, self.span(node))

    def subscript(self, node: ast.Subscript) -> ir.Expr:
        return ir.Subscript(self.expr(node.value), self.expr(node.slice), self.span(node))

    def arg(self, node: ast.expr) -> ir.Arg:
        if isinstance(node, ast.Starred):
            return ir.Arg(self.expr(node.value), None, "*", self.span(node))
        value = self.expr(node)
        return ir.Arg(value, None, "", value.span)

    def keyword(self, node: ast.keyword) -> ir.Arg:
        return ir.Arg(self.expr(node.value), node.arg, "" if node.arg else "**", self.span(node))

    def call(self, node: ast.Call) -> ir.Expr:
        args = [self.arg(a) for a in node.args] + [self.keyword(k) for k in node.keywords]
        # Python keeps keywords apart from positional arguments; the form keeps source order.
        args.sort(key=lambda a: (a.span.line, a.span.col))
        return ir.Call(self.expr(node.func), tuple(args), self.span(node))

    def binop(self, node: ast.BinOp) -> ir.Expr:
        return ir.BinOp(
            _BINOPS[type(node.op)], self.expr(node.left), self.expr(node.right), self.span(node)
        )

    def unaryop(self, node: ast.UnaryOp) -> ir.Expr:
        return ir.UnaryOp(_UNARY[type(node.op)], self.expr(node.operand), self.span(node))

    def boolop(self, node: ast.BoolOp) -> ir.Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        return ir.BoolOp(op, tuple(self.expr(v) for v in node.values), self.span(node))

    def compare(self, node: ast.Compare) -> ir.Expr:
        return ir.Compare(
            self.expr(node.left),
            tuple(_CMP[type(op)] for op in node.ops),
            tuple(self.expr(c) for c in node.comparators),
            self.span(node),
        )

    def ifexp(self, node: ast.IfExp) -> ir.Expr:
        return ir.IfExp(
            self.expr(node.test), self.expr(node.body), self.expr(node.orelse), self.span(node)
        )

    def tuple_(self, node: ast.Tuple) -> ir.Expr:
        elts = tuple(self.expr(x) for x in node.elts)
        return ir.Seq("tuple", elts, self._tuple_span(node, elts))

    def _tuple_span(self, node: ast.Tuple, elts: tuple[ir.Expr, ...]) -> ir.Span:
        span = self.span(node)
        first = self.lines[span.line - 1][span.col : span.col + 1]
        if first != "(":
            return span
        if not _encloses(self.lines, span):
            return span  # ``(a), b``: the parenthesis is the first element's
        return _inside_parens(self.lines, span, elts[-1].span if elts else None)

    def list_(self, node: ast.List) -> ir.Expr:
        return ir.Seq("list", tuple(self.expr(x) for x in node.elts), self.span(node))

    def set_(self, node: ast.Set) -> ir.Expr:
        return ir.Seq("set", tuple(self.expr(x) for x in node.elts), self.span(node))

    def dict_(self, node: ast.Dict) -> ir.Expr:
        keys = tuple(None if k is None else self.expr(k) for k in node.keys)
        return ir.Dict(keys, tuple(self.expr(v) for v in node.values), self.span(node))

    def starred(self, node: ast.Starred) -> ir.Expr:
        return ir.Starred(self.expr(node.value), self.span(node))

    def namedexpr(self, node: ast.NamedExpr) -> ir.Expr:
        target = ir.Name(node.target.id, self.span(node.target))
        return ir.NamedExpr(target, self.expr(node.value), self.span(node))

    def lambda_(self, node: ast.Lambda) -> ir.Expr:
        return ir.Lambda(self.params(node.args), self.expr(node.body), self.span(node))

    def comp(self, node: Any) -> ir.Expr:
        kind = {
            ast.ListComp: "list",
            ast.SetComp: "set",
            ast.GeneratorExp: "generator",
            ast.DictComp: "dict",
        }[type(node)]
        generators = tuple(self.compfor(g) for g in node.generators)
        span = self.span(node)
        if kind == "generator":
            span = _inside_parens(self.lines, span, generators[-1].span)
        if kind == "dict":
            return ir.Comprehension(
                kind, self.expr(node.value), self.expr(node.key), generators, span
            )
        return ir.Comprehension(kind, self.expr(node.elt), None, generators, span)

    def compfor(self, node: ast.comprehension) -> ir.CompFor:
        target = self.expr(node.target)
        iter_ = self.expr(node.iter)
        ifs = tuple(self.expr(x) for x in node.ifs)
        end = (ifs[-1] if ifs else iter_).span
        text = self.lines[target.span.line - 1]
        col = text.rfind("for", 0, target.span.col)
        if node.is_async:
            col = text.rfind("async", 0, max(col, 0) + 1)
        span = ir.Span(target.span.line, max(col, 0), end.end_line, end.end_col)
        return ir.CompFor(target, iter_, ifs, bool(node.is_async), span)

    def slice_(self, node: ast.Slice) -> ir.Expr:
        parts = tuple(self.expr(x) for x in (node.lower, node.upper, node.step) if x is not None)
        return ir.Opaque("slice", parts, self.span(node))

    def fstring(self, node: ast.JoinedStr) -> ir.Expr:
        parts = tuple(self.expr(v.value) for v in node.values if isinstance(v, ast.FormattedValue))
        return ir.Opaque("fstring", parts, self.span(node))

    def formatted(self, node: ast.FormattedValue) -> ir.Expr:
        return ir.Opaque("fstring", (self.expr(node.value),), self.span(node))

    def opaque(self, node: Any) -> ir.Expr:
        kind = {ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from"}[type(node)]
        parts = () if node.value is None else (self.expr(node.value),)
        return ir.Opaque(kind, parts, self.span(node))


def _expressions_of(node: ast.stmt) -> list[ast.expr]:
    """The expressions directly inside a statement the form keeps as :class:`ir.Other`."""
    found: list[ast.expr] = []
    for _, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if isinstance(v, ast.expr))
    return found


def _inside_parens(lines: list[str], span: ir.Span, last: ir.Span | None) -> ir.Span:
    """libcst's span of a node Python's spans with its parentheses: from the first token after
    ``(`` (blanks, line breaks and comments skipped) to the end of the last element, or of the
    ``)`` or ``,`` after it; ``last`` is the last element's span (None for ``()``)."""
    line, col = span.line, span.col + 1
    while True:
        text = lines[line - 1]
        while col < len(text) and text[col] in " \t\f\\":
            col += 1
        if col < len(text) and text[col] not in "#\r\n":
            break
        line, col = line + 1, 0
    if last is None:
        return ir.Span(line, col, line, col)
    end_line, end_col = last.end_line, last.end_col
    at_line, at_col = end_line, end_col
    while (at_line, at_col) < (span.end_line, span.end_col - 1):
        text = lines[at_line - 1]
        if at_col >= len(text) or text[at_col] == "#":
            at_line, at_col = at_line + 1, 0
            continue
        if text[at_col] in "),":
            end_line, end_col = at_line, at_col + 1
        at_col += 1
    return ir.Span(line, col, end_line, end_col)


def _encloses(lines: list[str], span: ir.Span) -> bool:
    """Does the ``(`` at the span's start close at its end (strings skipped)?"""
    depth = 0
    quote = ""
    line, col = span.line, span.col
    while (line, col) < (span.end_line, span.end_col):
        text = lines[line - 1]
        if col >= len(text):
            line, col = line + 1, 0
            continue
        c = text[col]
        if quote:
            if c == "\\":
                col += 2
                continue
            if text.startswith(quote, col):
                col += len(quote)
                quote = ""
                continue
        elif c in "'\"":
            quote = c * 3 if text.startswith(c * 3, col) else c
            col += len(quote)
            continue
        elif c == "#":
            line, col = line + 1, 0
            continue
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return (line, col + 1) == (span.end_line, span.end_col)
        col += 1
    return False
