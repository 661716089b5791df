"""Transfer functions of the expressions in one scope: what a value carries.

:meth:`Transfer.taint_of` says whether an expression's value derives from a source (a
:class:`~.taint.Taint`), read from the scope's state (what each local holds) and from what
calls do (the :class:`~.resolver.Resolver`): ``min()`` with a request count bounds a count,
``max()`` widens it, a conversion by the model's factors makes it a count of another unit,
a helper hands an argument's count through to its result, a list of sources gives one.
What it finds for a node is kept until the scope's state changes (:mod:`.flowstate`).
"""

from __future__ import annotations

from dataclasses import replace

from cgguard.static.core import ir
from cgguard.static.core.flowstate import Watched
from cgguard.static.core.patterns import Model, dotted, is_minus_one, last_name, walk
from cgguard.static.core.resolver import Resolver
from cgguard.static.core.shapes import getattr_read, int_const, is_name, positional
from cgguard.static.core.taint import SOURCE_LIST, Count, Taint, is_bound

_UNKNOWN = object()  # not in taint_of's memo


class Transfer:
    """What an expression of the scope carries, in the scope's current state."""

    def __init__(
        self,
        model: Model,
        resolver: Resolver,
        env: Watched,
        aliases: Watched,
        memo: dict[ir.Expr, Taint | None],
    ) -> None:
        self.model = model
        self.resolver = resolver
        # The scope's live state (shared with the other parts) and what taint_of found for
        # each node since it last changed: a statement asks about the same expressions
        # several times (its value, each call's arguments, stores, escapes).
        self.env = env
        self.aliases = aliases
        self.memo = memo

    def taint_of(self, node: ir.Expr) -> Taint | None:
        if type(node) is ir.Const:
            return None  # a literal carries no count
        found = self.memo.get(node, _UNKNOWN)
        if found is _UNKNOWN:
            found = self.memo[node] = self._taint_of(node)
        return found  # type: ignore[return-value]

    def _taint_of(self, node: ir.Expr) -> Taint | None:
        m = self.model
        if m.is_source(node):
            return Taint(m.source_labels, node)
        if isinstance(node, ir.Name | ir.Attribute):
            key = dotted(node)
            value = self.env.get(key) if key else None
            if isinstance(value, Taint):
                return value
            if value is None and isinstance(node, ir.Attribute):
                summary = self.resolver.member(self.built_read(node))
                if summary is not None and summary.index is None:
                    return Taint(summary.labels, summary.source, call=node, helper=summary)
            return None
        if isinstance(node, ir.Subscript):
            index = node.index
            if is_minus_one(index) and self.source_list(node.value):
                return Taint(m.source_labels, node)
            if isinstance(index, ir.Const) and isinstance(index.value, str):
                held = self.env.get(f"{dotted(node.value)}[{index.value!r}]")
                if isinstance(held, Taint):
                    return held
            if isinstance(node.value, ir.Call) and int_const(index) is not None:
                summary = self.resolver.member(node.value)
                if summary is not None and summary.index == int_const(index):
                    return Taint(summary.labels, summary.source, call=node.value, helper=summary)
                return self.passed(node.value, int_const(index))
            return None
        if isinstance(node, ir.BoolOp):
            return next((t for t in map(self.taint_of, node.values) if t), None)
        if isinstance(node, ir.BinOp):
            if m.converts(node):
                return None  # a count of another unit (the model's converting factors)
            return self.taint_of(node.left) or self.taint_of(node.right)
        if isinstance(node, ir.UnaryOp):
            return self.taint_of(node.operand)
        if isinstance(node, ir.IfExp):
            return self._ifexp_taint(node)
        if isinstance(node, ir.NamedExpr):
            return self.taint_of(node.value)
        if isinstance(node, ir.Call):
            read = getattr_read(node)
            if read is not None:  # ``getattr(self, "name")`` reads ``self.name``
                default = node.args[2].value if len(node.args) == 3 else None
                return self.taint_of(read) or (None if default is None else self.taint_of(default))
            summary = self.resolver.member(node)
            if summary is not None:
                if summary.index is not None:
                    return None
                return Taint(summary.labels, summary.source, call=node, helper=summary)
            passed = self.passed(self.unpartial(node), None)
            if passed is not None:
                return passed
            callee = last_name(node.func)
            args = positional(node)
            if (
                callee in m.widening_calls
                and len(args) == 1
                and not args[0].star
                and self.source_list(args[0].value)
            ):
                return Taint(m.source_labels, node)
            if self.hands_list(node):
                picked, _ = self.resolver.from_list(node, self.handed_list)
                if picked is not None:
                    return Taint(picked, node)  # the helper's pick is the call's count
            if callee in m.clamp_calls:
                if any(self.is_bound_count(a.value) for a in args):
                    return None
                return next((t for t in map(self.arg_taint, args) if t), None)
            if callee in m.widening_calls and len(args) > 1:
                for a in args:
                    t = self.arg_taint(a)
                    if t:
                        return replace(t, labels=t.labels | m.widened_labels)
                return None
            if callee in m.passthrough_calls and args:
                return self.arg_taint(args[0])
        return None

    def built_read(self, node: ir.Attribute) -> ir.Attribute:
        """``local.attr`` where the local holds an object a call built (``local = Klass()``):
        the read of ``Klass(...).attr``, which the resolver can tell the class of."""
        built = self.aliases.get(node.value.id) if isinstance(node.value, ir.Name) else None
        return ir.Attribute(built, node.attr, node.span) if isinstance(built, ir.Call) else node

    def _ifexp_taint(self, node: ir.IfExp) -> Taint | None:
        """``c if c <= R else R`` is a clamp: bounded on both arms."""
        body_bound, else_bound = self.clamped(node.test)
        saved = dict(self.env)
        try:
            if body_bound is not None:
                self.env[body_bound] = Count(self.model.bound_label, bound=True)
            body = self.taint_of(node.body)
            self.env.reset(saved)
            if else_bound is not None:
                self.env[else_bound] = Count(self.model.bound_label, bound=True)
            other = self.taint_of(node.orelse)
        finally:
            self.env.reset(saved)
        return body or other

    def _passed_args(self, call: ir.Call, index: int | None):
        if not any(self.tainted(a.value) for a in call.args):
            return  # nothing to hand through: the callee is not resolved (nor its module read)
        found = self.resolver.passing(call)
        if found is None:
            return
        name, params = found
        for arg, summary in params:
            taint = self.taint_of(arg)
            if taint is None:
                continue
            for labels, at in summary():
                if at == index:
                    yield arg, taint, labels, name
                    break

    def entry(self, node: ir.Expr) -> ir.Expr | None:
        """The argument of a call (or an element of its tuple) whose count the callee hands through."""
        index = None
        if isinstance(node, ir.Subscript) and isinstance(node.value, ir.Call):
            at = int_const(node.index)
            if at is None:
                return None
            index, node = at, node.value
        if not isinstance(node, ir.Call):
            return None
        if self.resolver.member(node) is not None:
            return None
        indexes = [index] if index is not None else [None, *range(len(node.args) + 8)]
        for i in indexes:
            for arg, _, _, _ in self._passed_args(node, i):
                return arg
        return None

    def passed(self, call: ir.Call, index: int | None) -> Taint | None:
        for _, taint, labels, name in self._passed_args(call, index):
            # What the helper does to what it is handed (widens it, say) joins what it holds.
            labels = taint.labels | labels
            return replace(taint, labels=labels, through=taint.through or f"{name}()")
        return None

    def source_list(self, node: ir.Expr, depth: int = 0, resolved: bool = True) -> bool:
        """A list of sources: a local holding one, a sorted or filtered copy of one; with
        ``resolved``, also a member of ``self`` a method sets to one, or a helper's return."""
        if isinstance(node, ir.Name) and self.env.get(node.id) is SOURCE_LIST:
            return True
        if depth > 8:
            return False
        if isinstance(node, ir.Name | ir.Attribute):
            if self.model.is_source_list(node):
                return True
            # a member of ``self`` a method sets to one
            return (
                resolved
                and isinstance(node, ir.Attribute)
                and is_name(node.value, "self")
                and self.resolver.source_list(node)
            )
        if isinstance(node, ir.Call) and last_name(node.func) in self.model.collection_calls:
            args = positional(node)
            return (
                bool(args)
                and not args[0].star
                and self.source_list(args[0].value, depth + 1, resolved)
            )
        if isinstance(node, ir.Call) and resolved:
            if self.resolver.source_list(node):  # a helper returning one
                return True
            # a helper returning one it is handed (sorted, filtered)
            return self.hands_list(node) and self.resolver.from_list(node, self.handed_list)[1]
        if isinstance(node, ir.Comprehension) and node.kind in ("list", "generator", "set"):
            first = node.generators[0]
            return (
                isinstance(first.target, ir.Name)
                and isinstance(node.elt, ir.Name)
                and node.elt.id == first.target.id
                and self.source_list(first.iter, depth + 1, resolved)
            )
        return False

    def handed_list(self, node: ir.Expr) -> bool:
        """A list of sources the scope itself shows (a local holding one, the model's lists
        and copies of them), as a helper is handed it. A member of ``self`` or a call's
        result handed on is not resolved for it: most calls' arguments are members, and
        asking each would compute the flows of every method setting them."""
        return self.source_list(node, resolved=False)

    def hands_list(self, call: ir.Call) -> bool:
        """Does ``call`` hand a list of sources (:meth:`_handed_list`) to its callee?"""
        return any(not a.star and self.handed_list(a.value) for a in call.args)

    def tainted(self, node: ir.Expr) -> bool:
        return self.taint_of(node) is not None

    def arg_taint(self, arg: ir.Arg) -> Taint | None:
        return None if arg.star else self.taint_of(arg.value)

    def is_bound_count(self, node: ir.Expr) -> bool:
        if self.model.mentions_bound(node):
            return True
        for sub in walk(node):
            if isinstance(sub, ir.Name | ir.Attribute):
                key = dotted(sub)
                if key and is_bound(self.env.get(key)):
                    return True
            if isinstance(sub, ir.Call | ir.Attribute) and self.resolver.holds_bound(sub):
                return True
        return False

    def unpartial(self, call: ir.Call) -> ir.Call:
        """``f(x)`` where the local ``f`` is ``partial(g, a)``: the call ``g(a, x)``."""
        if not isinstance(call.func, ir.Name):
            return call
        bound = self.aliases.get(call.func.id)
        if not (
            isinstance(bound, ir.Call)
            and last_name(bound.func) in self.model.partial_calls
            and bound.args
            and not bound.args[0].star
            and bound.args[0].keyword is None
        ):
            return call
        return ir.Call(bound.args[0].value, bound.args[1:] + call.args, call.span)

    def compares_count(self, test: ir.Expr) -> bool:
        """A one-comparison test with a followed count on one side (``cap <= n``)."""
        if not isinstance(test, ir.Compare) or len(test.ops) != 1:
            return False
        if test.ops[0] not in ("<", "<=", ">", ">="):
            return False
        return any(self.taint_of(side) is not None for side in (test.left, test.comparators[0]))

    def clamped(self, test: ir.Expr) -> tuple[str | None, str | None]:
        """``if x > R:`` / ``if x <= R:``: which branch knows ``x`` is at most a request count."""
        if not isinstance(test, ir.Compare) or len(test.ops) != 1:
            return None, None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if op in ("<", "<="):
            left, right = right, left
        elif op not in (">", ">="):
            return None, None
        for big, small, bound_in_body in ((left, right, False), (right, left, True)):
            key = dotted(big) if isinstance(big, ir.Name | ir.Attribute) else None
            if key and self.taint_of(big) is not None and self.is_bound_count(small):
                return (key, None) if bound_in_body else (None, key)
        return None, None
