"""What both adapters do with a module: run the core, keep what cgguard's settings keep,
order the reports, pick the fixes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange

from cgguard.ecosystem.settings import applies, kept, settings_for
from cgguard.static.fixes.bound import Replacement
from cgguard.static.source.findings import Finding
from cgguard.static.workflow.config import Settings

# (first line, first column, last line, end column), as libcst's PositionProvider gives.
Span = tuple[int, int, int, int]


@dataclass(frozen=True)
class Report:
    """One finding of ``cgguard check`` on the module, with its node and libcst change."""

    finding: Finding  # what ``cgguard check`` reports (the settings' filter applied)
    node: cst.CSTNode  # the node at the finding's place
    replacement: Replacement | None  # the fix as a change of the module's nodes

    @property
    def code(self) -> str:
        return self.finding.code

    @property
    def message(self) -> str:
        return self.finding.message

    @property
    def applicability(self) -> str | None:
        fix = self.finding.fix
        return None if fix is None or self.replacement is None else fix.applicability


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
    the project's other modules read as ``cgguard check`` reads them; each finding is
    ``cgguard check``'s own, and its fix the same change made on the module's nodes."""
    from cgguard.static.core.cst_frontend import lower_module
    from cgguard.static.driver.check import core_hits
    from cgguard.static.driver.report import finding
    from cgguard.static.fixes.bound import bounded
    from cgguard.static.fixes.site import module_site

    settings = settings_for(path)
    text = module.code
    lines = split_lines(text)
    hits, source_lines = core_hits(
        text, path or "<unknown>", lambda: lower_module(module, positions, text)
    )
    if not hits or source_lines is None:
        return [], settings
    site = module_site(module, positions, lines)
    found: dict[tuple, Report] = {}
    for hit in hits:
        node = site.expr(hit.node.span)
        if node is None:
            continue
        said = finding(hit, text, lines, path or "-", source_lines(hit))
        change = bounded(hit, site) if said.fix is not None else None
        # One report per place and code, as cgguard's findings are a set.
        found.setdefault(_key(said), Report(said, node, change))
    ordered = sorted(found.values(), key=lambda r: (r.finding.line, r.finding.col, r.code))
    out = []
    for f in kept([r.finding for r in ordered], text, path, settings):
        report = found[_key(f)]
        out.append(report if f.fix is not None else Report(f, report.node, None))
    return out, settings


def _key(f: Finding) -> tuple:
    return (f.line, f.col, f.end_line, f.end_col, f.code, f.message)


def fixes_to_apply(
    found: list[Report], position: Callable[[Any], Span], settings: Settings
) -> list[Report]:
    """The fixes of one round ``cgguard fix`` would apply (:func:`applies`), in file order,
    skipping any that overlaps an earlier one (the next round sees it again), as
    cgguard's fixer does."""
    taken: list[Report] = []
    claimed: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for report in found:
        if report.replacement is None or not applies(report.applicability, settings):
            continue
        first, c0, last, c1 = position(report.replacement.old)
        span = ((first, c0), (last, c1))
        if any(s < span[1] and span[0] < e or (s == e == span[0] == span[1]) for s, e in claimed):
            continue
        claimed.append(span)
        taken.append(report)
    return taken
