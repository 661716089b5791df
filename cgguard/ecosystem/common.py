"""What both adapters do with a module: run the engine, keep what cgguard's settings keep,
order the reports, pick the fixes."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from cgguard.ecosystem.settings import applies, kept, settings_for
from cgguard.static.rules.base import Context, Report, Span
from cgguard.static.rules.engine import scope_hits
from cgguard.static.workflow.config import Settings


def split_lines(text: str) -> list[str]:
    from cgguard.static.driver.sourcetext import split_lines as split

    return split(text)


def module_reports(
    module: cst.Module, position: Callable[[cst.CSTNode], Span], path: str | None
) -> tuple[list[Report], Settings]:
    """What ``cgguard check PATH`` reports on a whole module, in file order, and the
    settings it used (:mod:`cgguard.ecosystem.settings`)."""
    from cgguard.static.rules.engine import reports

    settings = settings_for(path)
    text = module.code
    lines = split_lines(text)

    # The same class facts as `cgguard check` reads (import aliases from Python's tree of
    # the file), and flows across the project's modules as it follows them: arguments
    # handed through a helper imported from another module, and counts returned by one.
    from cgguard.static.driver import analyse, project

    class_facts = analyse.class_facts_at(analyse.Aliases(text, path or "<unknown>"))

    imported = project.imported_params(text, path) if path is not None else None
    hits = scope_hits(module, None, class_facts, imported=imported)
    if path is not None:
        hits += project.module_hits(module, text, path)
    if not hits:
        return [], settings
    ctx = Context(module, text, lines, position)
    found = reports(hits, ctx)
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
