"""Report: the core's hits as findings (positions, messages, fixes as text edits).

The core decides what is a finding, on the intermediate form. Positions are its spans,
messages come from the file's text at them (:mod:`cgguard.static.rules.verdict`). libcst is
imported only for a hit with a fix, and parses only the statement that holds it
(:func:`cgguard.static.fixes.edit.text_edit`): a silent file is never parsed by it.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate

from cgguard.static.core import flow as core
from cgguard.static.core import ir
from cgguard.static.source.findings import Finding, Fix


def findings(
    hits: list[core.Hit],
    text: str,
    lines: list[str],
    path: str,
    source_lines: Callable[[core.Hit], list[str]],
    lay_out: bool = True,
) -> list[Finding]:
    """The findings of ``hits`` (all in this file), in file order, each once.
    ``source_lines(hit)``: the lines of the file holding the hit's source. ``lay_out``:
    whether a fix that does not fit its line is laid out (:func:`.fixes.edit.text_edit`)."""
    from cgguard.static.driver.parse import deep
    from cgguard.static.rules.cgg001 import names_tested_for_none

    starts = list(accumulate(map(len, lines), initial=0))
    none_tested = names_tested_for_none(text)  # once per file, not once per finding

    def work() -> list[Finding]:
        return [
            finding(hit, text, lines, path, source_lines(hit), starts, none_tested, lay_out)
            for hit in hits
        ]

    # libcst recurses once per nesting level: a deeply nested statement needs a large stack.
    fixable = any(h.rewrite is not None and h.request is not None for h in hits)
    return sorted(set(deep(work) if fixable else work()), key=Finding.sort_key)


def finding(
    hit: core.Hit,
    text: str,
    lines: list[str],
    path: str,
    source_lines: list[str] | None = None,
    line_starts: list[int] | None = None,
    none_tested: frozenset[str] | None = None,
    lay_out: bool = True,
) -> Finding:
    """One hit's finding: where, what the rule says, and its fix as a text edit."""
    from cgguard.static.fixes.edit import text_edit
    from cgguard.static.rules.verdict import verdict

    edit = text_edit(hit, lines, line_starts, lay_out)
    said = verdict(hit, text, lines, source_lines, edit is not None, none_tested)
    fix = None
    if edit is not None and said.applicability is not None and said.description is not None:
        fix = Fix(said.applicability, said.description, (edit,))
    s = hit.node.span
    return Finding(
        path=path,
        line=s.line,
        col=s.col + 1,
        end_line=s.end_line,
        end_col=s.end_col + 1,
        code=said.code,
        message=said.message,
        fix=fix,
        stmt_lines=statement_lines(hit.stmt),  # type: ignore[arg-type]
    )


def statement_lines(stmt: ir.Stmt | None) -> tuple[int, int]:
    """Lines a suppression comment may sit on: the statement, or a compound one's header."""
    if stmt is None:
        return (0, 0)
    first, last = stmt.span.line, stmt.span.end_line
    header: list[ir.Expr] = []
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
