"""What both adapters do with a module: run the engine, order the reports, pick the fixes."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from cgguard.static.rules.base import SAFE, Context, Report, Span
from cgguard.static.rules.engine import scope_hits
from cgguard.static.rules.flow import ClassFacts


def split_lines(text: str) -> list[str]:
    from cgguard.static.driver.scan import split_lines as split

    return split(text)


def module_reports(
    module: cst.Module, position: Callable[[cst.CSTNode], Span], text: str | None = None
) -> list[Report]:
    """Every report of every rule on a whole module, in file order (as ``cgguard check``)."""
    from cgguard.static.rules.engine import reports

    text = module.code if text is None else text
    lines = split_lines(text)

    found: list[dict[str, str]] = []

    def aliases() -> dict[str, str]:
        if not found:
            import ast

            from cgguard.static.rules.reach import import_aliases

            found.append(import_aliases(ast.parse(text)))
        return found[0]

    def class_facts(node: cst.ClassDef) -> ClassFacts:
        def class_lines() -> list[str]:
            first, _, last, _ = position(node)
            return lines[first - 1 : last]

        return ClassFacts(node.name.value, class_lines, aliases)

    hits = scope_hits(module, None, class_facts)
    if not hits:
        return []
    ctx = Context(module, text, lines, position)
    found = reports(hits, ctx)
    # One report per place and code, as cgguard's findings are a set.
    seen: dict[tuple, Report] = {}
    for report in found:
        key = (position(report.hit.node), report.code, report.message)
        seen.setdefault(key, report)
    return sorted(seen.values(), key=lambda r: (position(r.hit.node)[:2], r.code))


def safe_fixes(found: list[Report], position: Callable[[cst.CSTNode], Span]) -> list[Report]:
    """The safe fixes of one round, in file order, skipping any that overlaps an earlier one
    (the next round sees it again), as cgguard's fixer does."""
    taken: list[Report] = []
    claimed: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for report in found:
        if report.fix is None or report.fix.applicability != SAFE:
            continue
        first, c0, last, c1 = position(report.fix.replacement.old)
        span = ((first, c0), (last, c1))
        if any(s < span[1] and span[0] < e or (s == e == span[0] == span[1]) for s, e in claimed):
            continue
        claimed.append(span)
        taken.append(report)
    return taken
