"""cgguard's fix as a libcst codemod command (a thin adapter over the same rule classes).

    python -m libcst.tool codemod -x --no-format cgguard.ecosystem.codemod.BoundProfilingBlocks PATH

Applies the fixes ``cgguard fix`` applies, node for node, until nothing changes
(as cgguard's fixer does), and reports every finding as a codemod warning (``-u``
shows a diff instead of writing). cgguard's settings and suppressions hold as in
``cgguard fix`` (:mod:`cgguard.ecosystem.settings`): an unsafe fix is applied only
with ``unsafe-fixes = true``. ``--no-format``: the change is already laid out as
upstream's; without it the codemod CLI runs black.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.codemod import CodemodCommand
from libcst.metadata import MetadataWrapper, PositionProvider

from cgguard.ecosystem.common import fixes_to_apply, module_reports

MAX_ROUNDS = 8


class BoundProfilingBlocks(CodemodCommand):
    DESCRIPTION = (
        "cgguard CGG001: bound vLLM's per-token CUDA-graph profiling block count by "
        "the request count (upstream's min(max_num_reqs, capture size) or 1)."
    )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        path = self.context.filename
        for round_ in range(MAX_ROUNDS):
            ranges = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)

            def span(node: cst.CSTNode):
                r = ranges[node]  # noqa: B023 (called only within this round)
                return (r.start.line, r.start.column, r.end.line, r.end.column)

            found, settings = module_reports(tree, ranges, path)
            if round_ == 0:
                for report in found:
                    f = report.finding
                    self.warn(f"{f.line}:{f.col}: {report.code} {report.message}")
            todo = fixes_to_apply(found, span, settings)
            if not todo:
                break
            swap = {id(r.replacement.old): r.replacement.new for r in todo if r.replacement}
            tree = tree.visit(_Swap(swap))
        return tree


class _Swap(cst.CSTTransformer):
    def __init__(self, swap: Mapping[int, cst.CSTNode]):
        super().__init__()
        self.swap = swap

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) not in self.swap

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        return self.swap.get(id(original), updated)
