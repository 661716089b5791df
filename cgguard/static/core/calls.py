"""What a call calls: module functions, methods through the class hierarchy (``self.m()``,
``cls.m()``, ``super().m()``, ``Klass.m()``), static and class methods, ``functools.partial``
of a helper, and functions imported from the project's modules."""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.classes import Classes
from cgguard.static.core.flow import FunctionInfo
from cgguard.static.core.patterns import dotted, last_name
from cgguard.static.core.project import PARTIAL, ClassInfo, ModuleInfo, ProjectIndex
from cgguard.static.core.walks import is_name


class Calls:
    """Call resolution over the project's modules (``index``) and classes."""

    def __init__(self, index: ProjectIndex, classes: Classes):
        self.index, self.classes = index, classes

    def function_named(self, module: ModuleInfo, name: str, depth: int = 0) -> FunctionInfo | None:
        found = module.functions.get(name)
        if found is not None:
            return found
        partial = module.partials.get(name)
        if partial is not None and depth < 4:
            return self.callee(module, None, partial, depth + 1)
        spec = module.imports.get(name)
        if spec is None or spec[1] is None or not self.index.may_bind_function(spec[0], spec[1]):
            return None  # no module of the project binds a function by that name
        where = self.index.imported(module, name) if depth < 8 else None
        if where is not None and where[1]:
            return self.function_named(where[0], where[1], depth + 1)
        return None

    def callee(
        self, module: ModuleInfo, cls: ClassInfo | None, func: ir.Expr, depth: int = 0
    ) -> FunctionInfo | None:
        """The function a call of ``func`` (in ``cls``'s method, or at module level) calls."""
        if isinstance(func, ir.Name):
            return self.function_named(module, func.id, depth)
        if isinstance(func, ir.Call) and last_name(func.func) in PARTIAL and func.args:
            return self.callee(module, cls, func.args[0].value, depth + 1)
        if not isinstance(func, ir.Attribute):
            return None
        recv, name = func.value, func.attr
        if cls is not None:
            if isinstance(recv, ir.Name) and recv.id in ("self", "cls"):
                return self.classes.method(cls, name)
            if isinstance(recv, ir.Call) and last_name(recv.func) == "type":
                return self.classes.method(cls, name)
            if isinstance(recv, ir.Call) and is_name(recv.func, "super"):
                return self.classes.method(cls, name, skip_own=True)
        recv_name = dotted(recv)
        if recv_name is not None:
            klass = self.classes.class_named(module, recv_name)
            if klass is not None:
                return self.classes.method(klass, name)
            spec = module.imports.get(recv_name)
            if spec is not None:
                # ``mod.f()``: the module (or ``from pkg import mod``'s) defines ``f`` or not.
                held = spec[0] if spec[1] is None else f"{spec[0]}.{spec[1]}"
                if not self.index.may_bind_function(held, name, def_only=True):
                    return None
                target = self.index.module_named(held)
                if target is not None:
                    return target.functions.get(name)
        return None
