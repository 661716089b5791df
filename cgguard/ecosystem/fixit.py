"""cgguard's rules as Fixit 2 lint rules (a thin adapter over the same rule classes).

    fixit --rules cgguard.ecosystem.fixit lint PATH
    fixit --rules cgguard.ecosystem.fixit fix --automatic PATH

or, in ``pyproject.toml``::

    [tool.fixit]
    enable = ["cgguard.ecosystem.fixit"]

Each rule lowers the module Fixit parsed to cgguard's intermediate form, runs the same
core as ``cgguard check`` on it, and reports what ``cgguard check`` reports, at the same place, with cgguard's message, under the
same settings and suppressions (:mod:`cgguard.ecosystem.settings`; Fixit's own
``# lint-ignore`` works too). A fix ``cgguard fix`` applies is the same CST change
here (Fixit applies it to that node); the others are reported without an autofix:
display-only ones always, unsafe ones unless the settings say ``unsafe-fixes = true``
(Fixit has no ``--unsafe-fixes`` flag).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from fixit import Invalid, LintRule, Valid
from libcst.metadata import FilePathProvider, PositionProvider

from cgguard.ecosystem.common import module_reports
from cgguard.ecosystem.settings import applies


def _cases(code: str, kind: str) -> list[str]:
    # A missing rules folder is a broken install: fail here rather than give `fixit test`
    # no cases to run (which it would report as passing).
    from cgguard.static.workflow.ruledocs import get_rule

    rule = get_rule(code)
    if rule is None:
        raise LookupError(f"cgguard's rules folder has no {code}: a broken install")
    return [case.source() for case in rule.cases(kind)]


# The core's reports for the module Fixit is linting now: both rules read them, so
# the core runs once per file (Fixit hands every rule the same module object).
_last: list = [None, None]


# The mixin reads LintRule's members; only a type checker sees it as one (see below).
if TYPE_CHECKING:
    from fixit import LintRule as _Rule
else:
    _Rule = object


class _Engine(_Rule):
    """What both rules do (a mixin, not a LintRule: Fixit collects every LintRule
    subclass of this module as a rule)."""

    # FilePathProvider: the file's path, which decides its settings (Fixit builds the
    # repository manager that provides it for every file it lints).
    METADATA_DEPENDENCIES = (PositionProvider, FilePathProvider)
    CODE = ""

    def _reports(self, node: cst.Module):
        if _last[0] is not node:
            path = self.get_metadata(FilePathProvider, node, None)
            positions = self.metadata[PositionProvider]  # every node's, resolved by Fixit
            found = module_reports(node, positions, None if path is None else str(path))
            _last[:] = [node, found]
        return _last[1]

    def visit_Module(self, node: cst.Module) -> bool:
        found, settings = self._reports(node)
        for report in found:
            if report.code != self.CODE:
                continue
            where = self.get_metadata(PositionProvider, report.node)
            change = report.replacement
            if change is not None and applies(report.applicability, settings):
                self.report(change.old, report.message, position=where, replacement=change.new)
            else:
                self.report(report.node, report.message, position=where)
        return False  # the core read the module already


class CGG001(_Engine, LintRule):
    """A per-token profiling block count: the CUDA-graph capture size (tokens) reaches a
    KV-cache block count (sequences) without a request-count bound (`cgguard rule CGG001`)."""

    CODE = "CGG001"
    VALID = [Valid(src) for src in _cases("CGG001", "silent")]
    INVALID = [Invalid(src) for src in _cases("CGG001", "flagged")]


class CGG002(_Engine, LintRule):
    """A block count takes max() with the CUDA-graph capture size, so it still grows with
    the token count (`cgguard rule CGG002`); reported, never rewritten."""

    CODE = "CGG002"
    VALID = [Valid(src) for src in _cases("CGG002", "silent")]
    INVALID = [Invalid(src) for src in _cases("CGG002", "flagged")]


class CGG003(_Engine, LintRule):
    """A token count where a request count or one sequence's length belongs: a batch's token
    budget as a dummy item's `seq_len`, the capture size compared with a Mamba cache's
    blocks (`cgguard rule CGG003`); reported, never rewritten."""

    CODE = "CGG003"
    VALID = [Valid(src) for src in _cases("CGG003", "silent")]
    INVALID = [Invalid(src) for src in _cases("CGG003", "flagged")]
