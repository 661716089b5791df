"""Where a hit's fix goes and what bounds it, in the scope's own names.

:meth:`FixSite.locate` finds the smallest sub-expression of a tainted value that is the count
(the :class:`~.taint.Rewrite` a fix makes); :meth:`FixSite.request_of` asks the model's
``fix_bound`` what the fix bounds it by, from what the scope shows: the source's receiver in
the scope's names, a local holding a bound, the class the scope is in and its bases.
"""

from __future__ import annotations

from collections.abc import Iterator

from cgguard.static.core import ir
from cgguard.static.core.patterns import Model, last_name
from cgguard.static.core.resolver import ClassFacts, Resolver
from cgguard.static.core.shapes import (
    call_argument,
    is_name,
    needs_parens,
    positional,
    receiver,
)
from cgguard.static.core.taint import Rewrite, Taint, is_bound
from cgguard.static.core.transfer import Transfer


class FixSite:
    """The count's place in a tainted value and the request count that bounds it."""

    def __init__(
        self,
        model: Model,
        class_facts: ClassFacts | None,
        resolver: Resolver,
        transfer: Transfer,
    ) -> None:
        self.model = model
        self.class_facts = class_facts
        self.resolver = resolver
        self.env = transfer.env
        self.aliases = transfer.aliases
        # What it asks of the values (bound once: the hot path calls them directly).
        self.taint_of = transfer.taint_of
        self.entry = transfer.entry
        self.built_read = transfer.built_read
        self.compares_count = transfer.compares_count
        self.hands_list = transfer.hands_list
        self.handed_list = transfer.handed_list

    def locate(self, node: ir.Expr, parent: object | None) -> Rewrite | None:
        """The smallest sub-expression of a tainted ``node`` that is the count."""
        entry = self.entry(node)
        if entry is not None:
            by_position = isinstance(node, ir.Call) and any(
                a.value is entry for a in positional(node)
            )
            return self.locate(entry, node if by_position else None)
        taint = self.taint_of(node)
        if not taint:
            return None
        if (
            taint.source is node
            or self.model.is_source(node)
            or isinstance(node, ir.Name | ir.Attribute | ir.Subscript)
        ):
            return Rewrite(node, False, needs_parens(node, parent))
        if isinstance(node, ir.BoolOp):
            values = list(node.values)
            first, rest = values[0], values[1:]
            if node.op == "or" and self.taint_of(first) and not any(map(self.taint_of, rest)):
                insert = isinstance(first, ir.Call) and is_name(first.func, "min")
                return Rewrite(first, True, False, node, tuple(rest), insert)
            for v in values:
                r = self.locate(v, node)
                if r:
                    return r
            return None
        if isinstance(node, ir.BinOp):
            return self.locate(node.left, node) or self.locate(node.right, node)
        if isinstance(node, ir.UnaryOp):
            return self.locate(node.operand, node)
        if isinstance(node, ir.IfExp):
            if self.compares_count(node.test):
                # ``cap if cap <= n else n``: a clamp by something else than a request
                # count (a min() in another form): the whole expression is the count.
                return Rewrite(node, False, needs_parens(node, parent))
            return self.locate(node.body, node) or self.locate(node.orelse, node)
        if isinstance(node, ir.NamedExpr):
            return self.locate(node.value, node)
        if isinstance(node, ir.Call):
            if self.resolver.member(node) is not None:
                return Rewrite(node, False, needs_parens(node, parent))
            callee = last_name(node.func)
            if callee in self.model.clamp_calls:
                return Rewrite(node, False, False, insert=True)
            if callee in self.model.widening_calls or callee in self.model.passthrough_calls:
                for a in positional(node):
                    r = None if a.star else self.locate(a.value, node)
                    if r:
                        return r
        return None

    # ---- the bound for the fix ------------------------------------------------------

    def request_of(self, taint: Taint) -> tuple[str | None, bool]:
        """What the fix bounds ``taint``'s count by, and whether that is a guess: the model's
        ``fix_bound`` answers from what the scope shows (:class:`_Site`)."""
        return self.model.fix_bound(_Site(self, taint))

    def chain_of(self, taint: Taint) -> str | None:
        if taint.call is None:
            recv = receiver(taint.source)
            return self._resolve(recv) if recv is not None else None
        summary = taint.helper
        if summary is None or summary.chain is None:
            return None
        root, dot, rest = summary.chain.partition(".")
        owner = summary.function
        params = owner.names()
        call = taint.call
        reader = call.func if isinstance(call, ir.Call) else call
        if owner.implicit_first and params[:1] == [root]:
            own = isinstance(reader, ir.Attribute) and isinstance(reader.value, ir.Name)
            base = (
                "self"
                if own and isinstance(reader, ir.Attribute) and is_name(reader.value, "self")
                else None
            )
        elif root in params:
            built = self.built_read(call).value if isinstance(call, ir.Attribute) else None
            if isinstance(call, ir.Call) and not summary.stored:
                arg = call_argument(call, owner, root)
            elif isinstance(built, ir.Call) and summary.stored and owner.name == "__init__":
                # a member the object's ``__init__`` set from its parameter: the argument
                # the call building the object (``Limits(self.vllm_config).tokens``) gave it
                arg = call_argument(built, owner, root)
            else:
                arg = None
            base = self._resolve(arg) if arg is not None else None
        else:
            base = root
        return None if base is None else base + dot + rest

    def _resolve(self, node: ir.Expr, depth: int = 0) -> str | None:
        if isinstance(node, ir.Name):
            alias = self.aliases.get(node.id)
            if alias is not None and depth < 8:
                return self._resolve(alias, depth + 1)
            return node.id
        if isinstance(node, ir.Attribute):
            base = self._resolve(node.value, depth)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ir.Call) and not node.args:
            base = self._resolve(node.func, depth)
            return f"{base}()" if base is not None else None
        if isinstance(node, ir.Call) and last_name(node.func) in self.model.collection_calls:
            return self._resolve(node.args[0].value, depth + 1) if node.args else None
        if isinstance(node, ir.Call) and depth < 8 and self.hands_list(node):
            # a helper returning the list of sources it is handed: that list's receiver
            if self.resolver.from_list(node, self.handed_list)[1]:
                handed = [a.value for a in node.args if not a.star and self.handed_list(a.value)]
                return self._resolve(handed[0], depth + 1) if handed else None
            return None
        if isinstance(node, ir.Comprehension) and depth < 8:
            return self._resolve(node.generators[0].iter, depth + 1)
        return None


class _Site:
    """What a fix's bound is chosen from (:class:`~.patterns.BoundSite`), read when asked."""

    def __init__(self, site: FixSite, taint: Taint) -> None:
        self._site = site
        self.chain = site.chain_of(taint)
        self.source_lists = site.model.source_lists
        facts = site.class_facts
        self._facts = facts
        self.in_class = facts is not None
        # Read from this object: the capture size's receiver (``self.cc...``), or a member
        # of it (``self.max_graph``, set by a base from its own parameter).
        on_self = self.chain is not None and self.chain.split(".", 1)[0] == "self"
        member = isinstance(taint.call, ir.Attribute) and is_name(taint.call.value, "self")
        self.read_from_self = on_self or (self.chain is None and member)

    def bound_local(self) -> str | None:
        for key, value in self._site.env.items():
            if is_bound(value) and "." not in key:
                return key
        return None

    def class_names(self) -> Iterator[str]:
        return iter(()) if self._facts is None else self._facts.class_names()

    def self_attrs(self) -> frozenset[str]:
        return frozenset() if self._facts is None else self._facts.self_attrs
