"""Report from spans: the core's hits as findings, libcst parsing only each fix's statement.

Positions come from the intermediate form's spans, messages from the file's text at them
(:func:`cgguard.static.fixes.edit.bound_text`); libcst is imported only for a hit with a
fix, and parses only the statement that holds it (:func:`cgguard.static.fixes.edit.fix_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate

from cgguard.static.core import flow as core
from cgguard.static.core import ir
from cgguard.static.source.findings import UNSAFE, Finding, Fix


def code_of(hit: core.Hit) -> str:
    return "CGG001" if hit.kind == core.TOKEN else "CGG002"


def findings(
    hits: list[core.Hit],
    text: str,
    lines: list[str],
    path: str,
    source_lines: Callable[[core.Hit], list[str]],
) -> list[Finding]:
    """The findings of ``hits`` (all in this file), in file order, each once.
    ``source_lines(hit)``: the lines of the file holding the hit's source."""
    from cgguard.static.driver.parse import deep

    starts = list(accumulate(map(len, lines), initial=0))

    def work() -> list[Finding]:
        return [finding(hit, text, lines, path, source_lines(hit), starts) for hit in hits]

    # libcst recurses once per nesting level: a deeply nested statement needs a large stack.
    found = deep(work) if any(h.rewrite is not None and h.request for h in hits) else work()
    return sorted(set(found), key=Finding.sort_key)


def finding(
    hit: core.Hit,
    text: str,
    lines: list[str],
    path: str,
    source_lines: list[str] | None = None,
    line_starts: list[int] | None = None,
) -> Finding:
    from cgguard.static.fixes.edit import bound_text, fix_for
    from cgguard.static.rules.messages import message_for

    code = code_of(hit)
    made = fix_for(code, hit, text, lines, line_starts)
    fix = None if made is None else Fix(made.applicability, made.description, made.edits)
    bound = bound_text(hit, lines, source_lines)
    unsafe = fix is not None and fix.applicability == UNSAFE
    message = message_for(code, hit, None, bound, unsafe=unsafe)  # type: ignore[arg-type]
    s = hit.node.span
    return Finding(
        path=path,
        line=s.line,
        col=s.col + 1,
        end_line=s.end_line,
        end_col=s.end_col + 1,
        code=code,
        message=message,
        fix=fix,
        stmt_lines=statement_lines(hit.stmt),  # type: ignore[arg-type]
    )


def statement_lines(stmt: ir.Stmt | None) -> tuple[int, int]:
    """Lines a suppression comment may sit on: the statement, or a compound one's header."""
    if stmt is None:
        return (0, 0)
    first, last = stmt.span.line, stmt.span.end_line
    header: list[ir.Node] = []
    if isinstance(stmt, (ir.If, ir.While)):
        header = [stmt.test]
    elif isinstance(stmt, ir.For):
        header = [stmt.target, stmt.iter]
    elif isinstance(stmt, ir.With):
        header = [item.target or item.context for item in stmt.items]
    elif isinstance(stmt, ir.Match):
        header = [stmt.subject]
    elif isinstance(stmt, ir.Try):
        return (first, first)
    else:
        return (first, last)
    return (first, max(h.span.end_line for h in header))
