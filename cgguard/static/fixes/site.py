"""The libcst nodes a fix changes, found by the core's spans.

The core reports where a fix goes as spans of the intermediate form. A :class:`Site` holds
libcst's tree of the code around them and finds each node by its span, in file coordinates.
The Fixit rule and the codemod have the whole module parsed already (:func:`module_site`);
``cgguard check`` and ``fix`` parse only the statement that holds the fix
(:func:`statement_site`), however large the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from cgguard.static.core import ir

# (first line, first column, last line, end column): lines 1-based in the file, columns
# 0-based in characters, parentheses around the node excluded (libcst's PositionProvider).
Span = tuple[int, int, int, int]


class Site:
    """One parsed piece of a file: its libcst nodes by span, in the file's coordinates."""

    def __init__(
        self,
        module: cst.Module,
        positions: Mapping[cst.CSTNode, CodeRange],
        lines: list[str],
        line_offset: int = 0,
    ):
        self.module = module
        self.lines = lines  # the whole file's physical lines, with their endings
        self._positions = positions
        self._offset = line_offset
        self._exprs: dict[Span, cst.BaseExpression] | None = None
        self._stmts: dict[tuple[int, int], cst.CSTNode] | None = None

    def span(self, node: cst.CSTNode) -> Span:
        r = self._positions[node]
        off = self._offset
        return (r.start.line + off, r.start.column, r.end.line + off, r.end.column)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def expr(self, span: ir.Span) -> cst.BaseExpression | None:
        """The outermost expression at exactly ``span``."""
        if self._exprs is None:
            # Positions are recorded as a node's code ends: a parent after its children.
            self._exprs = {
                self.span(node): node
                for node in self._positions
                if isinstance(node, cst.BaseExpression)
            }
        return self._exprs.get(_key(span))

    def stmt(self, span: ir.Span) -> cst.CSTNode | None:
        """The statement starting where ``span`` starts (a small one, or a compound one)."""
        if self._stmts is None:
            self._stmts = {}
            for node in self._positions:
                if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                    self._stmts.setdefault(self.span(node)[:2], node)
        return self._stmts.get((span.line, span.col))


def _key(span: ir.Span) -> Span:
    return (span.line, span.col, span.end_line, span.end_col)


def module_site(
    module: cst.Module, positions: Mapping[cst.CSTNode, CodeRange], lines: list[str]
) -> Site:
    """The whole module the Fixit rule or the codemod parsed."""
    return Site(module, positions, lines)


def statement_site(stmt: ir.Stmt, needed: ir.Span, lines: list[str]) -> Site | None:
    """libcst's tree of only what a fix at ``needed`` inside ``stmt`` reads: a small statement
    whole, an ``if``/``while`` header with its test, else the expression itself (or the whole
    statement where the expression alone does not parse). None when nothing parses (the
    file then parses neither, and the caller reports no fix)."""
    attempts = []
    if not isinstance(stmt, _COMPOUND):
        attempts.append(_piece(lines, stmt.span))
    elif isinstance(stmt, (ir.If, ir.While)) and _inside(needed, stmt.test.span):
        attempts.append(_header(lines, stmt, stmt.test.span))
    elif isinstance(stmt, ir.With) and _inside(needed, _items_span(stmt)):
        attempts.append(_header(lines, stmt, stmt.items[-1].span))
    else:
        attempts.append(_piece(lines, needed))
        attempts.append(_piece(lines, stmt.span))
    for attempt in attempts:
        if attempt is None:
            continue
        source, offset = attempt
        try:
            module = cst.parse_module(source)
        except (cst.ParserSyntaxError, RecursionError):
            continue
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return Site(module, positions, lines, offset)
    return None


_COMPOUND = (ir.If, ir.While, ir.For, ir.With, ir.Try, ir.Match, ir.FunctionDef, ir.ClassDef)


def _inside(inner: ir.Span, outer: ir.Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (
        inner.end_line,
        inner.end_col,
    ) <= (outer.end_line, outer.end_col)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :] or "\n"


def _piece(lines: list[str], span: ir.Span) -> tuple[str, int] | None:
    """The code at ``span`` as a module whose lines and columns are the file's: the text
    before it on its first line blanked, under ``if 1:`` when that leaves it indented."""
    first, last = span.line, span.end_line
    if last > len(lines):
        return None
    chunk = [lines[i - 1] for i in range(first, last + 1)]
    end = chunk[-1]
    chunk[-1] = end[: span.end_col] + _newline(end) if first != last else end
    head = chunk[0]
    stop = span.end_col if first == last else len(head.rstrip("\r\n"))
    chunk[0] = " " * span.col + head[span.col : stop] + _newline(head)
    if span.col == 0:
        return "".join(chunk), first - 1
    return "if 1:" + _newline(head) + "".join(chunk), first - 2


def _items_span(stmt: ir.With) -> ir.Span:
    first, last = stmt.items[0].span, stmt.items[-1].span
    return ir.Span(first.line, first.col, last.end_line, last.end_col)


def _header(lines: list[str], stmt: ir.If | ir.While | ir.With, last: ir.Span):
    """A compound statement's header (through ``last``, the span its colon follows) with
    ``pass`` for its body (``elif`` read as ``if``)."""
    first = stmt.span.line
    colon = _colon(lines, last.end_line, last.end_col)
    if colon is None:
        return None
    line_no, col = colon
    chunk = [lines[i - 1] for i in range(first, line_no + 1)]
    chunk[-1] = chunk[-1][: col + 1] + " pass" + _newline(chunk[-1])
    head = chunk[0][stmt.span.col :]
    if head.startswith("elif"):
        head = "if  " + head[4:]
    chunk[0] = " " * stmt.span.col + head
    if stmt.span.col == 0:
        return "".join(chunk), first - 1
    return "if 1:" + _newline(lines[first - 1]) + "".join(chunk), first - 2


_BETWEEN = re.compile(r"[ \t\f)\\]*")


def _colon(lines: list[str], line_no: int, col: int) -> tuple[int, int] | None:
    """Where the header's ``:`` is, after the test's end (closing parentheses, blanks,
    comments and line breaks may come first)."""
    while line_no <= len(lines):
        text = lines[line_no - 1]
        at = _BETWEEN.match(text, col).end()  # type: ignore[union-attr]
        if at < len(text) and text[at] == ":":
            return line_no, at
        if at < len(text) and text[at] not in "#\r\n":
            return None
        line_no, col = line_no + 1, 0
    return None
