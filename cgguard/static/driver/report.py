"""Report: the rules' hits as findings (file positions, messages, fixes as text edits).

The fifth stage (:mod:`.check`): positions are resolved here, on the modules
:mod:`.parse` made, only for a module that has a hit. Imports nothing from the stages
after it.
"""

from __future__ import annotations

from cgguard.static.driver.analyse import Analysed
from cgguard.static.driver.findings import Finding, Fix, TextEdit
from cgguard.static.driver.parse import Positions
from cgguard.static.driver.sourcetext import SourceText


def findings(analysed: list[Analysed], text: str, lines: list[str], path: str) -> list[Finding]:
    """The findings of every analysed piece of one file, in file order, each once."""
    src = SourceText(text, lines)
    out: list[Finding] = []
    for a in analysed:
        if a.hits:
            out += findings_of(a.hits, a.piece.module, a.positions, src, path, a.none_checked)
    return sorted(set(out), key=Finding.sort_key)


def findings_of(
    hits, module, positions: Positions, src: SourceText, path: str, none_checked=None
) -> list[Finding]:
    """Findings of ``hits`` in ``module`` (positions in file coordinates, fixes as text edits)."""
    from cgguard.static.rules.base import Context
    from cgguard.static.rules.engine import reports, statement_lines

    ctx = Context(module, src.text, src.lines, positions, none_checked)
    out = []
    for report in reports(hits, ctx):
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
