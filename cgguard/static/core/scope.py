"""What a scope's flow asks of the program (:class:`~.flow.Resolver`, :class:`~.flow.ClassFacts`):
calls and reads resolved in the project, answered from the summaries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from cgguard.static.core import ir
from cgguard.static.core.classes import Classes
from cgguard.static.core.flow import FunctionInfo, Passed, Summary
from cgguard.static.core.patterns import dotted
from cgguard.static.core.project import ClassInfo, ModuleInfo, spec_holds
from cgguard.static.core.walks import is_name

if TYPE_CHECKING:
    from cgguard.static.core.summaries import Summaries


class ClassFactsView:
    """What a fix's bound may come from in a class (read when a fix asks)."""

    def __init__(self, classes: Classes, cls: ClassInfo):
        self.classes, self.cls = classes, cls
        self.name = cls.name

    def class_names(self) -> Iterator[str]:
        return self.classes.class_names(self.cls)

    @property
    def self_attrs(self) -> frozenset[str]:
        return self.classes.self_attrs(self.cls)


class ScopeResolver:
    """The resolver a scope's flow asks: calls and reads resolved in the program."""

    def __init__(self, summaries: Summaries, module: ModuleInfo, cls: ClassInfo | None):
        self.summaries, self.module, self.cls = summaries, module, cls
        self.index, self.classes, self.calls = summaries.index, summaries.classes, summaries.calls
        # Functions the scope's own statements define, by the name that calls them.
        self.defined: dict[str, FunctionInfo] = {}

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        if func is None:
            self.defined.pop(name, None)
        else:
            self.defined[name] = FunctionInfo(func, None, self.module.path)

    def _callee(self, call: ir.Call) -> FunctionInfo | None:
        if isinstance(call.func, ir.Name) and call.func.id in self.defined:
            return self.defined[call.func.id]
        return self.calls.callee(self.module, self.cls, call.func)

    def _may_return(self, call: ir.Call, holds: Callable[[str], bool]) -> bool:
        """Can the callee return what ``holds`` looks for (a count, a request count)? A
        function imported from a project module whose text has none of its words cannot,
        so that module is not read and lowered to find out."""
        func = call.func
        name = func.id if isinstance(func, ir.Name) else None
        if isinstance(func, ir.Attribute):
            name = dotted(func.value)
        spec = self.module.imports.get(name) if name else None
        return spec is None or spec_holds(spec, holds)

    def _returning_callee(self, call: ir.Call) -> FunctionInfo | None:
        """The function whose return a call gives, where that return may carry a source
        (not a property's getter; not one imported from a module naming none)."""
        if not self._may_return(call, self.index.may_name_a_source):
            return None
        func = self._callee(call)
        return None if func is None or func.is_property else func

    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        if isinstance(node, ir.Call):
            func = self._returning_callee(node)
            return None if func is None else self.summaries.summary(func)
        klass = self.cls if is_name(node.value, "self") else self._object_class(node.value)
        if klass is None:
            return None
        prop = self.classes.method(klass, node.attr)
        if prop is not None:
            return self.summaries.summary(prop) if prop.is_property else None
        return self.summaries.attr_summary(klass, node.attr)

    def _object_class(self, recv: ir.Expr) -> ClassInfo | None:
        """The class of the object ``recv`` is, where the program can tell: ``Klass(...)``,
        or a member ``self.m`` the class builds from one class. Only a class whose module
        names a source is read (its members are what is asked for)."""
        if isinstance(recv, ir.Attribute) and is_name(recv.value, "self") and self.cls:
            return self.classes.built_class(self.cls, recv.attr, self.index.may_name_a_source)
        name = dotted(recv.func) if isinstance(recv, ir.Call) else None
        return (
            None
            if name is None
            else self.classes.class_of_name(self.module, name, self.index.may_name_a_source)
        )

    def holds_bound(self, node: ir.Call | ir.Attribute) -> bool:
        if isinstance(node, ir.Call):
            if not self._may_return(node, self.index.may_name_a_bound):
                return False
            func = self._callee(node)
            return func is not None and not func.is_property and self.summaries.returns_bound(func)
        if self.cls is None or not is_name(node.value, "self"):
            return False
        prop = self.classes.method(self.cls, node.attr)
        return prop is not None and prop.is_property and self.summaries.returns_bound(prop)

    def passing(self, call: ir.Call) -> Passed | None:
        func = self._callee(call)
        return None if func is None else self.summaries.passing(func, call)

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        func = self._callee(call) or self._built_method(call)
        return [] if func is None else self.summaries.sinking(func, call, tainted)

    def _built_method(self, call: ir.Call) -> FunctionInfo | None:
        """``self.model_runner.m(n)``: the method of the class a method builds the member
        from. Asked only where a count is handed to such a call (finding the class may read
        the module it is imported from), for the sink a method performs."""
        func = call.func
        if self.cls is None or not isinstance(func, ir.Attribute):
            return None
        recv = func.value
        if not (isinstance(recv, ir.Attribute) and is_name(recv.value, "self")):
            return None
        built = self.classes.built_class(self.cls, recv.attr)
        return None if built is None else self.classes.method(built, func.attr)

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        func = self._callee(call)
        return [] if func is None else self.summaries.dict_entries(func, call, tainted)

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[frozenset[str] | None, bool]:
        func = self._callee(call)
        if func is None or func.is_property:
            return None, False
        return self.summaries.from_list(func, call, listed)

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        if isinstance(node, ir.Call):
            func = self._returning_callee(node)
            if func is None:
                return False
            flow = self.summaries.function_flow(func, reading=("returns", id(func.node)))
            return flow is not None and flow.returns_list
        if self.cls is None or not is_name(node.value, "self"):
            return False
        for klass in self.classes.mro(self.cls):
            for func in self.classes.setters(klass).get(node.attr, ()):
                flow = self.summaries.function_flow(
                    func, reading=("stored", id(func.node), node.attr)
                )
                if flow is not None and node.attr in flow.stored_lists:
                    return True
        return False

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        name = dotted(call.func)
        klass = None if name is None else self.classes.class_named(self.module, name)
        if klass is None:
            return []
        names = self.classes.fields(klass)
        if names is not None:
            positional = [a for a in call.args if a.keyword is None]
            if any(a.star for a in positional):
                positional = []  # which field a starred argument fills is not known
            handed = list(zip(names, (a.value for a in positional), strict=False))
            handed += [(a.keyword, a.value) for a in call.args if a.keyword in names]
            return [(field, arg) for field, arg in handed if tainted(arg)]
        init = self.classes.method(klass, "__init__")
        if init is None:
            return []
        # The members ``__init__`` sets from each parameter handed a count (its flow with the
        # parameter carrying a count of its own: what it stores on ``self``).
        return [
            (stored.attr, arg)
            for arg, flow in self.summaries.handed(init, call, tainted)
            for stored in flow.stored
            if stored.attr is not None
        ]
