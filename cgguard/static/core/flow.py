"""Data flow from sources to sinks in one scope of the intermediate form.

A *scope* is a function body, a class body or the module body, without the scopes nested in
it. Statements are walked in order; every local name or attribute chain assigned in the scope
remembers whether its value derives from a source (a :class:`Taint`). Where a tainted value
reaches a sink of the model, a :class:`Hit` is recorded at the place the value *becomes* the
count, with the expression a fix would bound.

The walk is flow-sensitive: the states of an ``if``'s branches are joined (a count is bounded
afterwards only if it is bounded on every path that goes on), loops run twice, an exception
handler starts from the join of every point of its ``try`` body, and ``return``/``raise`` end
a path. What calls do is asked of a :class:`Resolver` (the program's summaries).

:class:`ScopeFlow` is one lane of that walk: one model's state and findings. The control flow
is :class:`~.controlflow.Walker`'s, which walks the statements once for one lane or several
side by side; a lane does what each statement does to its state, walks the expressions in
it, and puts together the parts that each do one job, sharing the scope's live state (:mod:`.flowstate`):

- :mod:`.taint`: the values followed and what is found (``Taint``, ``Hit``, ``Summary``);
- :mod:`.transfer`: what an expression carries (``taint_of``); :mod:`.units`: the unit of a
  count that derives from no source;
- :mod:`.fixsite`: where a hit's fix goes and the request count that bounds it;
- :mod:`.sinks`: where a count reaches a sink, the hits; :mod:`.stores`: what an assignment
  does to the state; :mod:`.outputs`: returns, stores on ``self``, escapes, None tests.

The names other modules use are importable from here, as before the split.
"""

from __future__ import annotations

from collections.abc import Sequence

from cgguard.static.core import ir
from cgguard.static.core.controlflow import Walker
from cgguard.static.core.fixsite import FixSite
from cgguard.static.core.flowstate import State, Watched
from cgguard.static.core.outputs import Outputs
from cgguard.static.core.patterns import Model, dotted, last_name
from cgguard.static.core.resolver import ClassFacts, NoResolver, Passed, Resolver
from cgguard.static.core.shapes import (
    call_argument,
    element_parent,
    identifier,
    lambda_function,
    or_operands,
    positional,
    source_name,
    unpack_pairs,
)
from cgguard.static.core.sinks import Sinks
from cgguard.static.core.stores import Stores
from cgguard.static.core.taint import (
    SOURCE_ELEMENT,
    SOURCE_LIST,
    Count,
    FunctionInfo,
    Hit,
    Returned,
    Rewrite,
    SplatDict,
    Summary,
    Taint,
)
from cgguard.static.core.transfer import Transfer
from cgguard.static.core.units import Units

__all__ = [
    "ClassFacts",
    "FunctionInfo",
    "Hit",
    "NoResolver",
    "Passed",
    "Resolver",
    "Returned",
    "Rewrite",
    "ScopeFlow",
    "SplatDict",
    "State",
    "Summary",
    "Taint",
    "call_argument",
    "element_parent",
    "or_operands",
    "source_name",
    "unpack_pairs",
]

# What expr() does not look into: nodes with no node inside, and lambdas and comprehensions
# (scopes of their own).
_NOTHING_INSIDE = frozenset({ir.Name, ir.Const, ir.Lambda, ir.Comprehension})


class ScopeFlow:
    """One scope's walk: its statements in order, the sinks inside its expressions."""

    def __init__(
        self,
        model: Model,
        class_facts: ClassFacts | None,
        params: Sequence[ir.Param] = (),
        resolver: Resolver | None = None,
        *,
        function: bool = True,
        summarising: bool = False,
        seeds: dict[str, Taint] | None = None,
    ):
        self.model = model
        self.class_facts = class_facts
        self.function = function
        self.resolver: Resolver = resolver or NoResolver()
        self.summarising = summarising
        self.dead = False
        # The scope's live state, shared by the parts below, and what taint_of found for
        # each node since it last changed: any write to env or aliases, and any function
        # the scope defines, clears it (Watched, _define).
        self.memo: dict[ir.Expr, Taint | None] = {}
        self.env: Watched = Watched(self.memo)
        self.aliases: Watched = Watched(self.memo)
        self.seed_sources: dict[ir.Expr, str] = {}  # see seed_params
        transfer = Transfer(model, self.resolver, self.env, self.aliases, self.memo)
        units = Units(model, self.resolver, self.env)
        site = FixSite(model, class_facts, self.resolver, transfer)
        sinks = Sinks(
            model, self.resolver, transfer, site, self.seed_sources, summarising=summarising
        )
        outputs = Outputs(transfer, site, sinks, summarising=summarising)
        stores = Stores(model, self.resolver, transfer, units, sinks, outputs, function=function)
        self.sinks, self.outputs = sinks, outputs
        # Each part's questions, bound once (the walk asks them for every node).
        self.taint_of = transfer.taint_of
        self.tainted = transfer.tainted
        self.clamped = transfer.clamped
        self.source_list = transfer.source_list
        self.unpartial = transfer.unpartial
        self.count_kind = units.count_kind
        self.sink = sinks.sink
        self.splatted = sinks.splatted
        self.compare_sink = sinks.compare_sink
        self.assign = stores.assign
        self.assign_call = stores.assign_call
        self.forget = stores.forget
        self.returned = outputs.returned
        self.used = outputs.used
        self.none_test = outputs.none_test
        # What the program reads once the walk is done (the parts' own containers).
        self.hits: list[Hit] = sinks.hits
        self.sunk_calls: set[int] = sinks.sunk_calls
        self.sunk_params: list[tuple[str, str]] = sinks.sunk_params
        self.returns: list[Returned] = outputs.returns
        self.stored: list[Returned] = outputs.stored
        self.other_uses: set[int] = outputs.other_uses
        self.returned_keys: list[tuple[str, str]] = outputs.returned_keys
        self.stored_lists: set[str] = outputs.stored_lists
        self.none_tested: set[int] = outputs.none_tested
        self.none_tested_names: set[str] = outputs.none_tested_names
        for p in params:
            if p.name in model.bound_counts:
                self.env[p.name] = Count(model.bound_label, bound=True)
            elif p.name in model.source_params:
                self.env[p.name] = Taint(model.source_labels, ir.Name(p.name, p.span))
        for p in params:
            if p.default is not None:
                taint = self.taint_of(p.default)
                if taint is not None:
                    self.env[p.name] = taint
        for name, taint in (seeds or {}).items():
            self.env[name] = taint

    @property
    def returns_list(self) -> bool:
        """Does the scope return a list of sources?"""
        return self.outputs.returns_list

    def seed_params(
        self, names: Sequence[str], params: Sequence[ir.Param], listed: bool = False
    ) -> None:
        """Summarising: each parameter named carries its own source (the parameter itself),
        or with ``listed`` a list of sources (what is picked from it is a count)."""
        self.seed_sources.clear()
        for p in params:
            if p.name in names:
                if listed:
                    self.env[p.name] = SOURCE_LIST
                    continue
                source = ir.Name(p.name, p.span)
                self.seed_sources[source] = p.name
                self.env[p.name] = Taint(self.model.source_labels, source)

    def snapshot(self) -> State:
        return State(dict(self.env), dict(self.aliases), self.dead)

    def restore(self, state: State) -> None:
        self.env.reset(state.env)
        self.aliases.reset(state.aliases)
        self.dead = state.dead

    def run(self, body: Sequence[ir.Stmt]) -> list[Hit]:
        """Walk ``body`` for this flow alone (:class:`~.controlflow.Walker` walks several)."""
        Walker((self,)).run(body)
        return self.hits

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        """The scope's ``name`` calls ``func`` from here on (see :meth:`Resolver.define`):
        what a call of it gives may change, so taint_of's answers are dropped."""
        self.resolver.define(name, func)
        self.memo.clear()

    def loop_head(self, node: ir.While | ir.For) -> None:
        """What a loop's head does before its body: its test, or its iterable and target
        (one element of a list of sources is one size of the list)."""
        if isinstance(node, ir.While):
            self.expr(node.test)
            return
        self.expr(node.iter)
        self.forget(node.target)
        if isinstance(node.target, ir.Name) and self.source_list(node.iter):
            self.env[node.target.id] = SOURCE_ELEMENT  # one size of the list
            self.aliases[node.target.id] = node.iter

    def simple(self, node: ir.Stmt) -> None:
        """What a statement without a block does to the state: an assignment, an
        augmented one, an expression, anything else's expressions (``del``, ``assert``)."""
        if isinstance(node, ir.Assign):
            self.expr(node.value)
            for target in node.targets:
                if isinstance(target, ir.Name):
                    self.define(target.id, lambda_function(target.id, node.value))
                if self.assign_call(target, node.value):
                    continue
                for name, value in unpack_pairs(target, node.value):
                    if value is None:
                        self.forget(name)
                    else:
                        self.assign(name, value, element_parent(node.value, value))
        elif isinstance(node, ir.AugAssign):
            self.expr(node.value)
            key = dotted(node.target)
            taint = self.taint_of(node.value)
            if key is not None and taint is not None and not isinstance(self.env.get(key), Taint):
                self.env[key] = taint
        elif isinstance(node, ir.ExprStmt):
            self.expr(node.value)
        elif isinstance(node, ir.Other):
            for child in node.exprs:
                self.expr(child)

    def expr(self, node: ir.Expr) -> None:
        """Find sinks inside an expression: keywords, builder arguments, walrus targets."""
        # The node classes have no subclasses: ``type(cur) is`` is ``isinstance`` here.
        stack: list[object] = [node]
        pop, push, children = stack.pop, stack.extend, ir.children
        while stack:
            cur = pop()
            kind = type(cur)
            if kind in _NOTHING_INSIDE:
                continue
            if kind is ir.Call:
                self.call(cur)  # type: ignore[arg-type]
            elif kind is ir.NamedExpr:
                self.expr(cur.value)  # type: ignore[attr-defined]
                self.assign(cur.target, cur.value)  # type: ignore[attr-defined]
                continue
            elif kind is ir.Compare:
                self.none_test(cur)  # type: ignore[arg-type]
                if self.model.compare_sinks:
                    self.compare_sink(cur)  # type: ignore[arg-type]
            push(reversed(children(cur)))

    def call(self, node: ir.Call) -> None:
        m = self.model
        sunk: set[int] = set()
        callee = last_name(node.func)
        if (
            callee in m.element_stores
            and isinstance(node.func, ir.Attribute)
            and isinstance(node.func.value, ir.Name)
            and len(node.args) == 1
            and isinstance(node.args[0].value, ir.Name)
            and self.env.get(node.args[0].value.id) is SOURCE_ELEMENT
        ):
            self.env[node.func.value.id] = SOURCE_LIST  # ``sizes.append(size)``
            element = self.aliases.get(node.args[0].value.id)
            if element is not None:
                self.aliases[node.func.value.id] = element
        node = self.unpartial(node)
        args = [a for a in positional(node) if not a.star]
        if callee in m.setattr_calls and len(args) == 3:
            name = args[1].value
            if isinstance(name, ir.Const) and name.value in m.store_sinks:
                self.sink(args[2].value, sink=str(name.value))
                sunk.add(id(args[2]))
            elif isinstance(name, ir.Const) and identifier(name.value):
                # ``setattr(obj, "name", v)`` stores ``obj.name``
                self.assign(ir.Attribute(args[0].value, str(name.value), node.span), args[2].value)
                sunk.add(id(args[2]))
        # The callee whose parameters the arguments fill: ``f(n)`` where the local ``f`` is
        # ``partial(builder, ...)`` calls the builder, and ``partial(builder, num_blocks=n)``
        # binds the builder's keywords.
        named = last_name(node.func)
        if named in m.partial_calls and args:
            named = last_name(args[0].value)
        for arg in node.args:
            # ``replace(obj, num_gpu_blocks_override=n)`` stores the field; a named
            # builder's ``num_blocks=`` receives the count (not any call's).
            if arg.keyword is not None and m.keyword_sink(named, arg.keyword):
                self.sink(arg.value, sink=f"{arg.keyword}=")
                sunk.add(id(arg))
        for arg in node.args:
            if arg.star == "**":
                self.splatted(arg.value, named)
                sunk.add(id(arg))
        for index, arg in enumerate(positional(node)):
            if arg.star:
                break  # later positions are not known
            if m.positional_sink(named, index) is not None and id(arg) not in sunk:
                self.sink(arg.value, sink=f"{named}(...)")
                sunk.add(id(arg))
        # A callee can only sink a count it is handed: resolve it (which may read and lower
        # another module) only when an argument carries one.
        handed_count = any(self.tainted(a.value) for a in node.args)
        for arg_value, sink in self.resolver.sinking(node, self.tainted) if handed_count else ():
            handed = next((a for a in node.args if a.value is arg_value), None)
            if handed is not None and id(handed) not in sunk:
                self.sink(arg_value, sink=sink)
                sunk.add(id(handed))
        if callee not in m.quiet_calls:
            # Handed to a call that is no sink: a helper's count used otherwise. A local's
            # count never becomes a finding there for its name (a launch grid, a buffer).
            for arg in node.args:
                if id(arg) not in sunk:
                    self.used(arg.value)


# ---- helpers ---------------------------------------------------------------------------
