"""The unit of a count that derives from no source: the model's label for a sanitizer's bound
(``bound_label``, a request count in CGG001), for a count that bounds nothing
(``unbounded_label``, a token count in CGG001), or neither known.

A local assigned a bound (``n = self.max_num_reqs``, or a helper returning one) is a bound
afterwards (a :class:`~.taint.Count`): the sanitizer ``min()`` and the ``if`` clamp look for
one, and a fix takes one. A sum or product of counts of one unit keeps it; anything else is
unknown.
"""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.patterns import Model, dotted, last_name
from cgguard.static.core.resolver import Resolver
from cgguard.static.core.shapes import positional
from cgguard.static.core.taint import Count, Taint

_OPAQUE = object()  # a leaf of no known unit (no label: a model's label may be any text)


class Units:
    """The unit of an expression's count, read from the scope's state (``env``)."""

    def __init__(self, model: Model, resolver: Resolver, env: dict[str, object]) -> None:
        self.model = model
        self.resolver = resolver
        self.env = env  # the scope's live env, shared with the other parts

    def count_kind(self, node: ir.Expr) -> str | None:
        """The model's label of the unit every leaf of ``node`` counts, if one."""
        kinds: set[object] = set()
        self._leaf_kinds(node, kinds, 0)
        if len(kinds) != 1:
            return None
        (kind,) = kinds
        return kind if isinstance(kind, str) else None

    def _leaf_kinds(self, node: ir.Expr, kinds: set[object], depth: int) -> None:
        m = self.model
        if depth > 50:
            kinds.add(_OPAQUE)
            return
        if isinstance(node, ir.Name | ir.Attribute):
            key = dotted(node)
            kind: object = self._local_kind(key) if key is not None else None
            if kind is None:
                name = last_name(node)
                if name in m.bound_counts:
                    kind = m.bound_label
                elif name in m.unbounded_counts:
                    kind = m.unbounded_label
            if kind is None and key is None:
                kind = _OPAQUE
            if kind is None and isinstance(node, ir.Attribute) and self.resolver.holds_bound(node):
                kind = m.bound_label
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
            if self.resolver.holds_bound(node):
                kinds.add(m.bound_label)
                return
        kinds.add(_OPAQUE)

    def _local_kind(self, key: str) -> str | None:
        value = self.env.get(key)
        if isinstance(value, Count):
            return value.label
        if isinstance(value, Taint):
            return self.model.unbounded_label  # a followed value counts the followed unit
        return None
