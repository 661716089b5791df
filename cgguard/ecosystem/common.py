"""What both adapters do with a module: run the core, keep what cgguard's settings keep,
order the reports, pick the fixes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange

from cgguard.ecosystem.settings import applies, kept, settings_for
from cgguard.static.rules.base import Context, Report, Span
from cgguard.static.workflow.config import Settings


def split_lines(text: str) -> list[str]:
    from cgguard.static.source.sourcetext import split_lines as split

    return split(text)


def module_reports(
    module: cst.Module, positions: Mapping[cst.CSTNode, CodeRange], path: str | None
) -> tuple[list[Report], Settings]:
    """What ``cgguard check PATH`` reports on a whole module, in file order, and the
    settings it used (:mod:`cgguard.ecosystem.settings`). ``positions``: the module's
    ``PositionProvider`` map, which the tool resolved already.

    The same core as ``cgguard check`` runs, on the intermediate form libcst's front end
    lowers the module to (the same form as Python's front end gives, a test holds), with
    the project's other modules read as ``cgguard check`` reads them."""
    from cgguard.static.core.cst_frontend import lower_module
    from cgguard.static.driver.check import core_hits
    from cgguard.static.driver.report import cst_hits
    from cgguard.static.rules.engine import reports

    settings = settings_for(path)
    text = module.code
    lines = split_lines(text)

    def position(node: Any) -> Span:
        r = positions[node]
        return (r.start.line, r.start.column, r.end.line, r.end.column)

    hits, source_lines = core_hits(
        text, path or "<unknown>", lambda: lower_module(module, positions, text)
    )
    if not hits or source_lines is None:
        return [], settings
    ctx = Context(module, text, lines, position)
    found = reports(cst_hits(hits, module, position, source_lines), ctx)
    # One report per place and code, as cgguard's findings are a set.
    seen: dict[tuple, Report] = {}
    for report in found:
        key = (position(report.hit.node), report.code, report.message)
        seen.setdefault(key, report)
    ordered = sorted(seen.values(), key=lambda r: (position(r.hit.node)[:2], r.code))
    return kept(ordered, module, text, lines, position, path, settings), settings


def fixes_to_apply(
    found: list[Report], position: Callable[[cst.CSTNode], Span], settings: Settings
) -> list[Report]:
    """The fixes of one round ``cgguard fix`` would apply (:func:`applies`), in file order,
    skipping any that overlaps an earlier one (the next round sees it again), as
    cgguard's fixer does."""
    taken: list[Report] = []
    claimed: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for report in found:
        if report.fix is None or not applies(report.fix, settings):
            continue
        first, c0, last, c1 = position(report.fix.replacement.old)
        span = ((first, c0), (last, c1))
        if any(s < span[1] and span[0] < e or (s == e == span[0] == span[1]) for s, e in claimed):
            continue
        claimed.append(span)
        taken.append(report)
    return taken
