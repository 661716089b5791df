"""The Fixit side of the speed comparison (benchmarks/run.py).

A Fixit 2.x LintRule written with libcst matchers, equivalent to cgguard's CGG001
and CGG002 main shapes: a capture size (tokens) reaching a block count (sequences)
directly or through locals of the same function, unless wrapped in ``min(...)``
(upstream's bound). It reports; it does not rewrite (the comparison is for lint).

Run as ``PYTHONPATH=benchmarks/rules fixit --rules fixit_rule lint PATHS``.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
from fixit import Invalid, LintRule, Valid

# The largest capture size, in every spelling docs/vllm.md lists.
_CAPTURE_ATTR = m.Attribute(attr=m.Name("max_cudagraph_capture_size") | m.Name("max_capture_size"))
_CAPTURE_LIST = m.Attribute(attr=m.Name("cudagraph_batch_sizes") | m.Name("cudagraph_capture_sizes"))
_LAST_OF_LIST = m.Subscript(
    value=_CAPTURE_LIST,
    slice=[m.SubscriptElement(slice=m.Index(value=m.UnaryOperation(operator=m.Minus(), expression=m.Integer("1"))))],
)
_MAX_OF_LIST = m.Call(func=m.Name("max"), args=[m.Arg(value=_CAPTURE_LIST)])
_SOURCE = _CAPTURE_ATTR | _LAST_OF_LIST | _MAX_OF_LIST
_MIN_CALL = m.Call(func=m.Name("min"))
_MAX_CALL = m.Call(func=m.Name("max"))

# Names that hold a number of KV-cache blocks, or a byte budget built from one.
_BLOCK_COUNT = re.compile(r"^(?:\w*_blocks|blocks|num_gpu_blocks_override|num_gpu_blocks)$")
_KEYWORD_SINK = re.compile(r"^(?:\w*_blocks|num_gpu_blocks_override|available_memory)$")


def _target_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


class PerTokenProfilingBlocks(LintRule):
    """A KV-cache block count sized by the CUDA-graph capture size (tokens)."""

    MESSAGE = (
        "KV-cache block count sized by the CUDA-graph capture size (tokens, one block per token); "
        "bound it by the request count: min(self.max_num_reqs, <capture size>) or 1"
    )

    VALID = [
        Valid("min_blocks = min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1"),
        Valid("table = [0] * (self.compilation_config.max_cudagraph_capture_size + 1)"),
        Valid("ok = num_tokens <= self.cudagraph_batch_sizes[-1]"),
        Valid("patch = 'min_blocks = self.compilation_config.max_cudagraph_capture_size or 1'"),
    ]
    INVALID = [
        Invalid("min_blocks = self.compilation_config.max_cudagraph_capture_size or 1"),
        Invalid(
            "def f(self):\n"
            "    cap = self.compilation_config.max_cudagraph_capture_size\n"
            "    self.cache_config.num_gpu_blocks_override = cap or 1\n"
        ),
        Invalid("build(num_blocks=self.cudagraph_batch_sizes[-1])"),
        Invalid("min_blocks = max(self.compilation_config.max_cudagraph_capture_size or 1, self.max_num_reqs)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        # Locals holding a capture size, one set per enclosing function.
        self._tainted: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._tainted.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._tainted.pop()

    def _per_token(self, node: cst.CSTNode) -> bool:
        """Does ``node`` carry a capture size that no ``min(...)`` bounds?"""
        if m.matches(node, _MIN_CALL):
            return False
        if m.matches(node, _SOURCE):
            return True
        if isinstance(node, cst.Name) and node.value in self._tainted[-1]:
            return True
        if isinstance(node, (cst.Lambda, cst.BaseString)):
            return False
        return any(self._per_token(child) for child in node.children)

    def _check_assignment(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        if not self._per_token(value):
            return
        reported = False
        for target in targets:
            name = _target_name(target)
            if name is not None and _BLOCK_COUNT.match(name):
                if not reported:
                    self.report(value)
                    reported = True
            elif isinstance(target, cst.Name):
                self._tainted[-1].add(target.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._check_assignment([t.target for t in node.targets], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_assignment([node.target], node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._check_assignment([node.target], node.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and _KEYWORD_SINK.match(node.keyword.value) and self._per_token(node.value):
            self.report(node.value)
