"""Report: the core's hits as findings (positions, messages, fixes as text edits).

The core decides what is a finding, on the intermediate form. libcst is imported here
only, and only for a file with a hit: it parses the functions that hold the hits (cut at
the spans Python's parser gave them, so a string is never taken for code), finds the
nodes at the hits' spans, and the rules write the message and the fix on them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cgguard.static.core import flow as core
from cgguard.static.core import ir
from cgguard.static.source.findings import Finding, Fix, TextEdit
from cgguard.static.source.sourcetext import SourceText

Span = tuple[int, int, int, int]


def findings(
    hits: list[core.Hit],
    tree: ir.Module,
    text: str,
    lines: list[str],
    path: str,
    source_lines: Callable[[core.Hit], list[str]],
) -> list[Finding]:
    """The findings of ``hits`` (all in this file), in file order, each once.
    ``source_lines(hit)``: the lines of the file holding the hit's source."""
    from cgguard.static.driver import parse

    src = SourceText(text, lines)
    groups: dict[tuple[int, int], list[core.Hit]] = {}
    for hit in hits:
        groups.setdefault(_chunk_of(tree, hit), []).append(hit)

    def work() -> list[Finding]:
        out: list[Finding] = []
        none_checked: dict[str, bool] = {}
        for (start, end), group in groups.items():
            module, offset = _parse_chunk(lines, start, end, path)
            positions = parse.Positions(module, offset)
            old = cst_hits(group, module, positions, source_lines)
            out += _findings_of(old, module, positions, src, path, none_checked)
        return out

    return sorted(set(parse.deep(work)), key=Finding.sort_key)


def _chunk_of(tree: ir.Module, hit: core.Hit) -> tuple[int, int]:
    """(first line index, end index) of the innermost function holding the hit's statement
    (the module's top statement where none does)."""
    spans = [hit.node.span]
    if isinstance(hit.stmt, ir.FunctionDef | ir.ClassDef) or hit.stmt is None:
        pass
    else:
        spans.append(hit.stmt.span)  # type: ignore[union-attr]
    if hit.rewrite is not None:
        spans.append(hit.rewrite.target.span)
    first = min(s.line for s in spans)
    last = max(s.end_line for s in spans)
    best: ir.Span | None = None
    body: tuple[ir.Stmt, ...] = tree.body
    while True:
        inner = None
        for stmt in body:
            sp = stmt.span
            if sp.line <= first and last <= sp.end_line:
                inner = stmt
                break
        if inner is None:
            break
        if isinstance(inner, ir.FunctionDef):
            best = inner.span
            body = ir.body_of(inner)
        elif isinstance(inner, ir.ClassDef):
            if best is None:
                best = inner.span
            body = inner.body
        else:
            if best is None:
                best = inner.span
            body = tuple(s for s in _blocks(inner))
    if best is None:
        best = ir.Span(first, 0, last, 0)
    return best.line - 1, best.end_line


def _blocks(stmt: ir.Stmt) -> list[ir.Stmt]:
    out: list[ir.Stmt] = []
    for child in ir.children(stmt):
        if isinstance(child, ir.Handler | ir.Case):
            out.extend(child.body)
        elif isinstance(
            child,
            ir.Assign
            | ir.AugAssign
            | ir.ExprStmt
            | ir.Return
            | ir.If
            | ir.While
            | ir.For
            | ir.With
            | ir.Try
            | ir.Match
            | ir.FunctionDef
            | ir.ClassDef
            | ir.Import
            | ir.Other,
        ):
            out.append(child)
    return out


def _parse_chunk(lines: list[str], start: int, end: int, path: str):
    """libcst's module of the file's lines ``start:end`` (an indented one under ``if 1:``),
    and the line offset of its line 1 in the file."""
    from cgguard.static.driver.parse import parse

    chunk = "".join(lines[start:end])
    if lines[start][:1] in (" ", "\t"):
        return parse("if 1:\n" + chunk, path), start - 1
    return parse(chunk, path), start


def _findings_of(old, module, positions, src: SourceText, path: str, none_checked) -> list[Finding]:
    from cgguard.static.rules.base import Context
    from cgguard.static.rules.engine import reports, statement_lines

    ctx = Context(module, src.text, src.lines, positions, none_checked)
    out = []
    for report in reports(old, ctx):
        line, col, end_line, end_col = ctx.span(report.hit.node)
        fix = None
        if report.fix is not None:
            rep = report.fix.replacement
            first, c0, last, c1 = ctx.span(rep.old)
            edit = TextEdit(
                src.char_offset(first, c0), src.char_offset(last, c1), ctx.code(rep.core)
            )
            fix = Fix(report.fix.applicability, report.fix.description, (edit,))
        out.append(
            Finding(
                path=path,
                line=line,
                col=col + 1,
                end_line=end_line,
                end_col=end_col + 1,
                code=report.code,
                message=report.message,
                fix=fix,
                stmt_lines=statement_lines(report.hit.stmt, ctx),
            )
        )
    return out


# ---- from the core's spans to libcst's nodes ----------------------------------------------


@dataclass
class _Index:
    """libcst's nodes of a module by their span (the outermost of a span first)."""

    expressions: dict[Span, object]
    statements: dict[tuple[int, int], object]


def _index(module, position: Callable[[object], Span]) -> _Index:
    import libcst as cst

    expressions: dict[Span, object] = {}
    statements: dict[tuple[int, int], object] = {}
    stack = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BaseExpression):
            expressions.setdefault(position(node), node)
        elif isinstance(node, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            span = position(node)
            statements.setdefault((span[0], span[1]), node)
        stack.extend(reversed(node.children))
    return _Index(expressions, statements)


def cst_hits(
    hits: list[core.Hit],
    module,
    position: Callable[[object], Span],
    source_lines: Callable[[core.Hit], list[str]],
):
    """The rules' hits (libcst's nodes) for the core's hits in ``module``."""
    from cgguard.static.rules import flow as rules

    index = _index(module, position)
    out = []
    for hit in hits:
        node = _expr(index, hit.node)
        if node is None:
            continue
        rewrite = None
        rw = hit.rewrite
        if rw is not None:
            target = _expr(index, rw.target)
            whole = _expr(index, rw.whole)
            fallbacks = tuple(_expr(index, f) for f in rw.fallbacks)
            if target is not None and None not in fallbacks:
                rewrite = rules.Rewrite(
                    target,
                    has_fallback=rw.has_fallback,
                    needs_parens=rw.needs_parens,
                    whole=whole,
                    fallbacks=fallbacks,  # type: ignore[arg-type]
                    insert=rw.insert,
                )
        stmt = None
        if hit.stmt is not None:
            span = hit.stmt.span  # type: ignore[attr-defined]
            stmt = index.statements.get((span.line, span.col))
        out.append(
            rules.Hit(
                kind=rules.TOKEN if hit.kind == core.TOKEN else rules.MAX,
                sink=hit.sink,
                node=node,
                source=_expr(index, hit.source) or _parsed(hit.source, source_lines(hit)),
                rewrite=rewrite,
                request=hit.request,
                stmt=stmt,
                guessed=hit.guessed,
                via=hit.via,
            )
        )
    return out


def _expr(index: _Index, node: ir.Expr | None):
    if node is None:
        return None
    s = node.span
    return index.expressions.get((s.line, s.col, s.end_line, s.end_col))


def _parsed(node: ir.Expr, lines: list[str]):
    """An expression outside the parsed chunk (a helper's source), parsed from its text."""
    import libcst as cst

    s = node.span
    if s.line == s.end_line:
        text = lines[s.line - 1][s.col : s.end_col]
    else:
        text = lines[s.line - 1][s.col :] + "".join(lines[s.line : s.end_line - 1])
        text += lines[s.end_line - 1][: s.end_col]
    try:
        return cst.parse_expression(f"({text})" if "\n" in text else text)
    except Exception:  # noqa: BLE001 - a span the other module's text no longer holds
        return cst.Name("count")
