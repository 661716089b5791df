"""The unit of a count that derives from no source: requests, tokens, or neither known.

A local assigned a request count (``n = self.max_num_reqs``, or a helper returning one) is a
request count afterwards: the sanitizer ``min()`` and the ``if`` clamp look for one, and a
fix takes one. A sum or product of counts of one unit keeps it; anything else is unknown.
"""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.patterns import Model, dotted, last_name
from cgguard.static.core.resolver import Resolver
from cgguard.static.core.shapes import positional
from cgguard.static.core.taint import REQUEST_COUNT, REQUESTS, TOKEN_COUNT, TOKENS, Taint

_OPAQUE = "opaque"


class Units:
    """The unit of an expression's count, read from the scope's state (``env``)."""

    def __init__(self, model: Model, resolver: Resolver, env: dict[str, object]) -> None:
        self.model = model
        self.resolver = resolver
        self.env = env  # the scope's live env, shared with the other parts

    def count_kind(self, node: ir.Expr) -> str | None:
        kinds: set[str] = set()
        self._leaf_kinds(node, kinds, 0)
        if _OPAQUE in kinds:
            return None
        if kinds == {REQUESTS}:
            return REQUESTS
        if kinds == {TOKENS}:
            return TOKENS
        return None

    def _leaf_kinds(self, node: ir.Expr, kinds: set[str], depth: int) -> None:
        m = self.model
        if depth > 50:
            kinds.add(_OPAQUE)
            return
        if isinstance(node, ir.Name | ir.Attribute):
            key = dotted(node)
            kind = self._local_kind(key) if key is not None else None
            if kind is None:
                name = last_name(node)
                if name in m.request_counts:
                    kind = REQUESTS
                elif name in m.token_counts:
                    kind = TOKENS
            if kind is None and key is None:
                kind = _OPAQUE
            if kind is None and isinstance(node, ir.Attribute) and self.resolver.requests(node):
                kind = REQUESTS
            if kind is not None:
                kinds.add(kind)
            return
        if isinstance(node, ir.Const) and isinstance(node.value, int | float):
            return
        if isinstance(node, ir.BinOp):
            self._leaf_kinds(node.left, kinds, depth + 1)
            self._leaf_kinds(node.right, kinds, depth + 1)
            return
        if isinstance(node, ir.UnaryOp):
            self._leaf_kinds(node.operand, kinds, depth + 1)
            return
        if isinstance(node, ir.Call):
            if last_name(node.func) in m.passthrough_calls:
                args = positional(node)
                if args and not args[0].star:
                    self._leaf_kinds(args[0].value, kinds, depth + 1)
                    return
            if self.resolver.requests(node):
                kinds.add(REQUESTS)
                return
        kinds.add(_OPAQUE)

    def _local_kind(self, key: str) -> str | None:
        value = self.env.get(key)
        if value is REQUEST_COUNT:
            return REQUESTS
        if value is TOKEN_COUNT or isinstance(value, Taint):
            return TOKENS
        return None
