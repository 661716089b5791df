"""Parameters that flow to a function's return: per-parameter summaries.

A helper may compute the count from what it is given rather than read the capture
size itself::

    def _blocks_for(self, cap):
        return cap or 1

    min_blocks = self._blocks_for(self.compilation_config.max_cudagraph_capture_size)

The summary of ``_blocks_for`` says that its parameter ``cap`` reaches its return
(the whole value, or one element of a returned tuple; as a per-token count or through
``max()``). A call that passes a capture size for such a parameter carries it to its
result. Summaries are made only when a call hands a tainted argument to a function
of the module (a flow over that one function with the parameter seeded), once per
(function, parameter). A helper that bounds its parameter (``min(cap,
self.max_num_reqs)``) hands nothing through.

The finding and the fix stay at the argument, where the per-token value enters the
count: the helper is shared by its callers, so bounding it there would change the
others' values too.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from cgguard.static.rules import reach
from cgguard.static.rules.flow import TOKEN, ScopeFlow, Taint

Summary = list[tuple[str, "int | None"]]  # (kind, tuple index or None)


class ParamFlows:
    """The module's per-parameter summaries, computed on first use."""

    def __init__(self, module: cst.Module):
        self.defs = reach.ModuleDefs.of(module)
        self._summaries: dict[tuple[int, str], Summary] = {}
        self._classes: dict[int, cst.ClassDef | None] = {}

    def for_class(self, cls: cst.ClassDef | None):
        """What calls in a scope of ``cls`` (None: a module function) hand through."""

        def passing(call: cst.Call):
            func = self.defs.resolve(call, cls)
            if func is None:
                return None
            owner = reach.Owner(func, self._class_of(func))
            params = [(arg, self._lazy(owner, name)) for name, arg in arguments(call, owner, cls)]
            return (owner.name, params) if params else None

        return passing

    def _class_of(self, func: cst.FunctionDef) -> cst.ClassDef | None:
        if id(func) not in self._classes:
            self._classes[id(func)] = self.defs.class_of(func)
        return self._classes[id(func)]

    def _lazy(self, owner: reach.Owner, param: str) -> Callable[[], Summary]:
        return lambda: self.summary(owner, param)

    def summary(self, owner: reach.Owner, param: str) -> Summary:
        key = (id(owner.func), param)
        found = self._summaries.get(key)
        if found is not None:
            return found
        self._summaries[key] = []  # a recursive call hands nothing through
        func = owner.func
        p = func.params
        every = [*p.posonly_params, *p.params, *p.kwonly_params]
        seed = next(a.name for a in every if a.name.value == param)
        flow = ScopeFlow(
            None,
            [a.name.value for a in every],
            None,
            None,
            passing=self.for_class(owner.cls),
            summarising=True,
        )
        flow.env[param] = Taint(TOKEN, seed)
        flow.run(func.body.body)
        out: Summary = []
        for ret in flow.returns:
            if ret.taint.source is seed and (ret.taint.kind, ret.index) not in out:
                out.append((ret.taint.kind, ret.index))
        self._summaries[key] = out
        return out


class ImportedParams:
    """What calls of functions imported from the project's other modules hand through.

    ``lookup(call)`` gives the called function's libcst node, parsed alone from its own
    module, or None (not imported from the project, or no parameter of it can reach
    its return). Its summaries are made as for the module's own functions, on that
    function alone (a call it makes to another function hands nothing through).
    """

    def __init__(self, lookup: Callable[[cst.Call], cst.FunctionDef | None]):
        self.lookup = lookup
        self._flows: dict[int, ParamFlows] = {}

    def __call__(self, call: cst.Call):
        func = self.lookup(call)
        if func is None:
            return None
        flows = self._flows.get(id(func))
        if flows is None:
            flows = self._flows[id(func)] = ParamFlows(cst.Module(body=[func]))
        owner = reach.Owner(func, None)
        params = [(arg, flows._lazy(owner, name)) for name, arg in arguments(call, owner, None)]
        return (owner.name, params) if params else None


def arguments(call: cst.Call, owner: reach.Owner, cls: cst.ClassDef | None):
    """(parameter, argument) for each argument of ``call`` bound to a named parameter of
    ``owner``'s function, positional (after ``self``/``cls`` where the call binds them)
    and keyword; nothing after a ``*args`` or with a ``**kwargs`` of unknown keys."""
    func = call.func
    # ``Klass.method(obj, ...)`` passes the object itself; ``self.m(...)``, ``cls.m(...)``
    # and a static or class method bind (or have) no first argument.
    skip = 1 if owner.implicit_first else 0
    if (
        skip
        and "classmethod" not in owner.decorators
        and isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value not in ("self", "cls")
    ):
        skip = 0
    positional = owner.params()[skip:]
    keywords = set(owner.params()[skip:]) | set(owner.kwonly())
    out = []
    i = 0
    for arg in call.args:
        if arg.star:
            if arg.star == "*":
                i = len(positional)  # where the rest go is unknown
            continue
        if arg.keyword is not None:
            if arg.keyword.value in keywords:
                out.append((arg.keyword.value, arg.value))
            continue
        if i < len(positional):
            out.append((positional[i], arg.value))
        i += 1
    return out
