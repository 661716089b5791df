"""Per function, on demand: what its return carries (a source's count, from which tuple
element), which parameters reach its return, a sink, or an attribute of ``self``; per class
member, what the methods setting it store. Each is a flow of the function's body
(:class:`~.flow.ScopeFlow`) whose calls :class:`~.scope.ScopeResolver` resolves, kept in the
run's :class:`~.fixpoint.Fixpoint`. A function whose text shows it can carry nothing is
not walked for it (:meth:`Summaries._worth`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial

from cgguard.static.core import ir
from cgguard.static.core.calls import Calls
from cgguard.static.core.classes import Classes
from cgguard.static.core.controlflow import Walker
from cgguard.static.core.fixpoint import Fixpoint, FunctionFacts
from cgguard.static.core.flow import FunctionInfo, Passed, ScopeFlow, Summary
from cgguard.static.core.patterns import Model
from cgguard.static.core.project import ClassInfo, ModuleInfo, ProjectIndex
from cgguard.static.core.scope import ClassFactsView, ScopeResolver
from cgguard.static.core.walks import returns_of
from cgguard.static.core.words import attrs_assigned_from, mentions_text, span_text

# The slot of the flow with every parameter seeded (no parameter is named so).
ALL_PARAMS = "*"


class Summaries:
    """The summaries of the project's functions and class members for one model."""

    def __init__(
        self,
        model: Model,
        index: ProjectIndex,
        classes: Classes,
        calls: Calls,
        fixpoint: Fixpoint,
    ):
        self.model, self.index, self.classes, self.calls = model, index, classes, calls
        self.fixpoint = fixpoint

    def function_flow(
        self, func: FunctionInfo, *, walk: bool = False, reading: tuple | None = None
    ) -> ScopeFlow | None:
        """The function's own flow (its sources to its sinks, returns and stores); None for
        one whose text shows it can carry nothing, unless ``walk`` (its module's hits).
        ``reading``: the part of it the caller looks at (``("returns", id)``, ``("stored",
        id, attr)``): a read while it is computed then waits only on that part."""
        return function_flows([(self, func)], walk=walk, reading=reading)[0]

    def new_flow(self, func: FunctionInfo) -> ScopeFlow | None:
        """A flow of the function's own body, not walked yet (None: its module unreadable)."""
        module = self.index.module_at(func.path)
        if module is None:
            return None
        self.index.local_imports(module, func)
        cls = self.classes.class_of(func)
        return ScopeFlow(
            self.model,
            ClassFactsView(self.classes, cls) if cls is not None else None,
            func.node.params,
            ScopeResolver(self, module, cls),
        )

    def param_flow(self, func: FunctionInfo, param: str, listed: bool = False) -> ScopeFlow | None:
        """The function's flow with ``param`` carrying a count of its own (``listed``: a list
        of counts, such as the capture sizes)."""
        return self._seeded_flow(func, (param, listed), [param], listed)

    def _seeded_flow(
        self, func: FunctionInfo, slot: tuple[str, bool], params: list[str], listed: bool
    ) -> ScopeFlow | None:
        """The function's flow with each of ``params`` carrying a count of its own, kept
        under ``slot``."""
        key = ("param", id(func.node), slot)
        facts = self.fixpoint.facts.setdefault(id(func.node), FunctionFacts())
        if slot in facts.params_busy:
            return self.fixpoint.busy(key)  # type: ignore[return-value]
        if slot in facts.params:
            self.fixpoint.note(key)
            return facts.params[slot]
        facts.params_busy.add(slot)
        self.fixpoint.computing(key)
        try:
            module = self.index.module_at(func.path)
            if module is None:
                return None
            cls = self.classes.class_of(func)
            flow = ScopeFlow(
                self.model,
                ClassFactsView(self.classes, cls) if cls is not None else None,
                (),
                ScopeResolver(self, module, cls),
                summarising=True,
            )
            flow.seed_params(params, func.node.params, listed=listed)
            flow.run(ir.body_of(func.node))
            facts.params[slot] = flow
        finally:
            facts.params_busy.discard(slot)
            self.fixpoint.computed(key)
        return facts.params[slot]

    def from_list(
        self, func: FunctionInfo, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[frozenset[str] | None, bool]:
        """What ``func`` returns of the lists of counts ``call`` hands it (``listed`` tells
        one): the labels of the count it picks from one (its largest, its last) or None,
        and whether it returns one (a sorted copy)."""
        labels, returns_list = None, False
        for param in _passable(func):
            arg = _argument(call, func, param)
            if arg is None or not listed(arg):
                continue
            flow = self.param_flow(func, param, listed=True)
            if flow is None:
                continue
            if labels is None and flow.returns:
                labels = flow.returns[0].taint.labels
            returns_list = returns_list or flow.returns_list
        return labels, returns_list

    def _worth(self, func: FunctionInfo) -> bool:
        """Can the function's own flow find anything? Only if its text names a source or a
        request count, or calls a function of its module that can (decided on the text)."""
        module = self.index.module_at(func.path)
        if module is None:
            return False
        if module.carriers is None:
            module.carriers = self._carriers(module)
        return (
            id(func.node) in module.carriers
            or func.cls is None
            and func.name not in (module.functions)
        )

    def _carriers(self, module: ModuleInfo) -> set[int]:
        """Ids of the module's functions whose text names a source or a request count, or the
        name of one that does, to a fixpoint (text only: nothing is lowered for it)."""
        lines = self.index.lines(module)
        funcs = [*module.functions.values()]
        for cls in module.classes.values():
            funcs.extend(cls.methods.values())
        words = set(self.index.source_words) | self._imported_names(module)
        found: set[int] = set()
        # A function not found yet names none of the words asked so far: each round asks
        # the rest only the words the last one added (a runner imports hundreds of names).
        rest = [(f, span_text(lines, f.node.span)) for f in funcs]
        asked: set[str] = set()
        while True:
            fresh = words - asked
            asked |= fresh
            new = [f for f, text in rest if mentions_text(text, fresh)]
            if not new:
                return found
            taken = {id(f.node) for f in new}
            rest = [(f, text) for f, text in rest if id(f.node) not in taken]
            for f in new:
                found.add(id(f.node))
                words.add(f.name)
                words |= attrs_assigned_from(lines, f.node.span, words)

    def _imported_names(self, module: ModuleInfo) -> set[str]:
        """Names the module imports from project modules whose text names a source: a helper
        there may return a count. One imported from a module that names none cannot (a call's
        summary is not looked for there either: :meth:`.scope.ScopeResolver.member`). A name its module
        cannot bind to a function (a class) brings one only through its static and class
        methods: it is the word ``Name.``, and ``Name(...)`` is not a use of it (the members
        of an object it builds are words of the module's own walk: :meth:`.lending.Lending.imported_words`)."""
        if self.index.root is None:
            return set()
        self.index.read_local_imports(module)
        names: set[str] = set()
        for local, (name, attr) in module.imports.items():
            sub = self.index.submodule(name, attr)
            if sub is not None and self.index.may_name_a_source(sub):
                names.add(local)  # ``from package import module``
            elif self.index.may_name_a_source(name):
                plain = attr is not None and not self.index.may_bind_function(name, attr)
                names.add(f"{local}." if plain else local)
        return names

    def summary(self, func: FunctionInfo) -> Summary | None:
        """What the function's return carries (a source's count), or None."""
        flow = self.function_flow(func, reading=("returns", id(func.node)))
        if flow is None or not flow.returns:
            return None
        first = flow.returns[0]
        rets = [r for r in flow.returns if r.index == first.index]
        return Summary(
            func,
            first.taint.labels,
            first.taint.source,
            first.chain,
            rets,
            first.index,
            None,
            func.path,
        )

    def returns_bound(self, func: FunctionInfo) -> bool:
        """Does the function return a bound, a count of the model's ``bound_label`` (a helper
        or a property)?"""
        key = ("bound", id(func.node))
        facts = self.fixpoint.facts.setdefault(id(func.node), FunctionFacts())
        if facts.bound_busy:
            return bool(self.fixpoint.busy(key))
        if facts.bound is not None:
            self.fixpoint.note(key)
            return facts.bound
        facts.bound = False
        facts.bound_busy = True
        self.fixpoint.computing(key)
        try:
            facts.bound = self._returns_bound(func)
        finally:
            facts.bound_busy = False
            self.fixpoint.computed(key)
        return facts.bound

    def _returns_bound(self, func: FunctionInfo) -> bool:
        module = self.index.module_at(func.path)
        text = (
            "".join(self.index.lines(module)[func.node.span.line - 1 : func.node.span.end_line])
            if module
            else ""
        )
        if "return" not in text or not any(n in text for n in self.model.bound_counts):
            return False
        flow = self.function_flow(func, walk=True)
        return flow is not None and any(
            stmt.value is not None and flow.count_kind(stmt.value) == self.model.bound_label
            for stmt in returns_of(ir.body_of(func.node))
        )

    def attr_summary(self, cls: ClassInfo, name: str) -> Summary | None:
        key = (id(cls.node), name)
        read = ("attr", *key)
        if key in self.fixpoint.attrs_busy:
            return self.fixpoint.busy(read)  # type: ignore[return-value]
        if key in self.fixpoint.attr_summaries:
            self.fixpoint.note(read)
            return self.fixpoint.attr_summaries[key]
        self.fixpoint.attrs_busy.add(key)
        self.fixpoint.computing(read)
        try:
            found = self._attr_summary(cls, name)
        finally:
            self.fixpoint.attrs_busy.discard(key)
            self.fixpoint.computed(read)
        self.fixpoint.attr_summaries[key] = found
        return found

    def _attr_summary(self, cls: ClassInfo, name: str) -> Summary | None:
        found: Summary | None = None
        for klass in self.classes.mro(cls):
            for func in self.classes.setters(klass).get(name, ()):
                flow = self.function_flow(func, reading=("stored", id(func.node), name))
                if flow is None:
                    continue
                for st in flow.stored:
                    if st.attr != name:
                        continue
                    if found is None:
                        found = Summary(
                            func,
                            st.taint.labels,
                            st.taint.source,
                            st.chain,
                            [st],
                            None,
                            name,
                            func.path,
                        )
                    else:
                        found.returns.append(st)
        return found

    def param_returns(
        self, func: FunctionInfo, param: str
    ) -> list[tuple[frozenset[str], int | None]]:
        """(labels, tuple index or None) for each way ``param`` reaches the return."""
        flow = self.param_flow(func, param)
        ways: list[tuple[frozenset[str], int | None]] = []
        for ret in [] if flow is None else flow.returns:
            if (ret.taint.labels, ret.index) not in ways:
                ways.append((ret.taint.labels, ret.index))
        return ways

    def passing(self, func: FunctionInfo, call: ir.Call) -> Passed | None:
        args: list[tuple[ir.Expr, Callable[[], list[tuple[frozenset[str], int | None]]]]] = []
        for param in _passable(func):
            arg = _argument(call, func, param)
            if arg is not None:
                args.append((arg, partial(self.param_returns, func, param)))
        return (func.name, args) if args else None

    def sinking(
        self, func: FunctionInfo, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        out = []
        for arg, flow in self.handed(func, call, tainted):
            for _, sink in flow.sunk_params[:1]:
                out.append((arg, f"{sink} in {func.name}()"))
        return out

    def sinks_a_param(self, func: FunctionInfo) -> bool:
        """Does a parameter of ``func``, carrying a count of its own, reach a sink, or its
        return under a sink's key (what :meth:`sinking` and :meth:`dict_entries` ask of a
        call)?"""
        params = _passable(func)
        if not params:
            return False
        # One flow with every parameter seeded, each carrying its own source: a sink that
        # one parameter's own flow reaches, this one reaches too (with that parameter's
        # count or another's, where both meet), for one walk instead of one per parameter.
        flow = self._seeded_flow(func, (ALL_PARAMS, False), params, False)
        return flow is not None and bool(flow.sunk_params or flow.returned_keys)

    def dict_entries(
        self, func: FunctionInfo, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        """(sink key, argument) for each argument ``func`` returns in a dict under a sink key."""
        return [
            (key, arg)
            for arg, flow in self.handed(func, call, tainted)
            for _, key in flow.returned_keys
        ]

    def handed(
        self, func: FunctionInfo, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> Iterator[tuple[ir.Expr, ScopeFlow]]:
        """Each argument of ``call`` that ``tainted`` holds, with ``func``'s flow of the
        parameter it fills carrying a count of its own."""
        for param in _passable(func):
            arg = _argument(call, func, param)
            if arg is not None and tainted(arg):
                flow = self.param_flow(func, param)
                if flow is not None:
                    yield arg, flow


def function_flows(
    asked: Sequence[tuple[Summaries, FunctionInfo]],
    *,
    walk: bool = False,
    reading: tuple | None = None,
) -> list[ScopeFlow | None]:
    """:meth:`Summaries.function_flow` of one function (the same node in each of ``asked``)
    for several lanes at once: the lanes that have not computed it walk its body side by
    side, in one walk (:class:`~.controlflow.Walker`). Each lane's summaries, guesses and
    readers are its own, asked in the order its own walk would ask them."""
    out: list[ScopeFlow | None] = [None] * len(asked)
    computing: list[tuple[Summaries, FunctionFacts, tuple]] = []
    fresh: list[tuple[int, FunctionFacts, ScopeFlow]] = []
    try:
        for at, (summaries, func) in enumerate(asked):
            key = ("flow", id(func.node))
            fixpoint = summaries.fixpoint
            facts = fixpoint.facts.setdefault(id(func.node), FunctionFacts())
            if facts.busy:
                out[at] = fixpoint.busy(reading or key)  # type: ignore[call-overload]
                continue
            if facts.flow is not None:
                fixpoint.note(reading or key)
                out[at] = facts.flow
                continue
            if not walk and not summaries._worth(func):
                continue
            facts.busy = True
            fixpoint.computing(key)
            computing.append((summaries, facts, key))
            flow = summaries.new_flow(func)
            if flow is None:
                facts.busy = False  # done: nothing to walk (as a walk of it alone ends)
                fixpoint.computed(key)
                computing.pop()
                continue
            fresh.append((at, facts, flow))
        if fresh:
            Walker([flow for _, _, flow in fresh]).run(ir.body_of(asked[fresh[0][0]][1].node))
            for at, facts, flow in fresh:
                facts.flow = out[at] = flow
    finally:
        for summaries, facts, key in computing:
            facts.busy = False
            summaries.fixpoint.computed(key)
    return out


def _passable(func: FunctionInfo) -> list[str]:
    names = func.names()
    return names[1:] if func.implicit_first else names


def _argument(call: ir.Call, func: FunctionInfo, param: str) -> ir.Expr | None:
    from cgguard.static.core.flow import call_argument

    return call_argument(call, func, param)
