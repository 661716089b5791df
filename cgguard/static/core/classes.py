"""The project's classes: a name resolved to its class through imports and aliases, a class's
bases and their order, the method a name finds along them, the members its methods set, the
class of the object a member holds, and the fields a call of it fills. Read once per class
and kept on its :class:`~.project.ClassInfo` for the run."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from cgguard.static.core import ir
from cgguard.static.core.flow import FunctionInfo
from cgguard.static.core.patterns import Model, dotted, last_name
from cgguard.static.core.project import ClassInfo, ModuleInfo, ProjectIndex, spec_holds
from cgguard.static.core.walks import is_name, own_attrs, walk_stmts
from cgguard.static.core.words import assigned_attrs_text


class Classes:
    """Class resolution over the project's modules (``index``), for one model's runners."""

    def __init__(self, model: Model, index: ProjectIndex):
        self.model, self.index = model, index
        # A method's node id -> member -> the callees it builds the member from (_built_by).
        self.built_by: dict[int, dict[str, list[str]]] = {}

    def forget(self) -> None:
        self.built_by.clear()

    def class_named(self, module: ModuleInfo, name: str, depth: int = 0) -> ClassInfo | None:
        if "." in name:
            head, _, rest = name.partition(".")
            spec = module.imports.get(head)
            if spec is None:
                return None
            base = spec[0] if spec[1] is None else f"{spec[0]}.{spec[1]}"
            target = self.index.module_named(
                base + ("." + rest.rsplit(".", 1)[0] if "." in rest else "")
            )
            return None if target is None else target.classes.get(rest.rsplit(".", 1)[-1])
        found = module.classes.get(name)
        if found is not None:
            return found
        where = self.index.imported(module, name) if depth < 8 else None
        if where is not None and where[1]:
            return self.class_named(where[0], where[1], depth + 1)
        return None

    def bases(self, cls: ClassInfo) -> list[ClassInfo]:
        if cls.bases_read is None:
            cls.bases_read = []
            for base in cls.node.bases:
                if base.keyword is not None or base.star:
                    continue
                name = dotted(base.value)
                if name is None:
                    continue
                cls.base_names.append(self._real_name(cls.module, name))
                found = self.class_named(cls.module, name)
                if found is not None and found is not cls:
                    cls.bases_read.append(found)
        return cls.bases_read

    def _real_name(self, module: ModuleInfo, name: str) -> str:
        head, dot, rest = name.partition(".")
        spec = module.imports.get(head)
        if spec is None:
            return name
        real = spec[0] if spec[1] is None else spec[1]
        return real + dot + rest

    def mro(self, cls: ClassInfo) -> Iterator[ClassInfo]:
        seen: set[int] = set()
        stack = [cls]
        while stack:
            cur = stack.pop(0)
            if id(cur) in seen or len(seen) > 64:
                continue
            seen.add(id(cur))
            yield cur
            stack.extend(self.bases(cur))

    def method(self, cls: ClassInfo, name: str, skip_own: bool = False) -> FunctionInfo | None:
        for klass in self.mro(cls):
            if skip_own and klass is cls:
                continue
            found = klass.methods.get(name)
            if found is not None:
                return found
        return None

    def class_of(self, func: FunctionInfo) -> ClassInfo | None:
        if func.cls is None:
            return None
        module = self.index.module_at(func.path)
        return None if module is None else module.class_at.get(id(func.cls))

    def built_class(
        self, cls: ClassInfo, attr: str, holds: Callable[[str], bool] | None = None
    ) -> ClassInfo | None:
        """The class of the object ``self.<attr>`` holds where the methods of ``cls`` and of
        its bases build it from one class (``self.model_runner = NPUModelRunner(...)``),
        resolved in the project; None where none does, or what they build is not one class.
        ``holds``: a class imported from a module whose text it does not hold is not read."""
        if attr not in cls.built:
            cls.built[attr] = []  # while it is looked for: a cycle builds nothing
            found: list[tuple[ModuleInfo, str]] = []
            for klass in self.mro(cls):
                for func in self.setters(klass).get(attr, ()):
                    for name in self._built_by(func).get(attr, ()):
                        if (klass.module, name) not in found:
                            found.append((klass.module, name))
            cls.built[attr] = found
        if len(cls.built[attr]) != 1:
            return None
        module, name = cls.built[attr][0]
        return self.class_of_name(module, name, holds)

    def _built_by(self, func: FunctionInfo) -> dict[str, list[str]]:
        """Member -> the callees a method builds it from (``self.m = Klass(...)``), its body
        walked once for every member asked of it."""
        built = self.built_by.get(id(func.node))
        if built is None:
            built = self.built_by[id(func.node)] = {}
            for stmt in walk_stmts(ir.body_of(func.node)):
                if not isinstance(stmt, ir.Assign) or not isinstance(stmt.value, ir.Call):
                    continue
                name = dotted(stmt.value.func)
                if name is None:
                    continue
                for target in stmt.targets:
                    if isinstance(target, ir.Attribute) and is_name(target.value, "self"):
                        built.setdefault(target.attr, []).append(name)
        return built

    def class_of_name(
        self, module: ModuleInfo, name: str, holds: Callable[[str], bool] | None = None
    ) -> ClassInfo | None:
        """:meth:`class_named`, where ``holds`` (if given) allows: a class of ``module``
        itself, or one imported from a module whose text ``holds`` (not read otherwise)."""
        if holds is not None and ("." in name or name not in module.classes):
            spec = module.imports.get(name.split(".", 1)[0])
            if spec is None or not spec_holds(spec, holds):
                return None
        return self.class_named(module, name)

    def setters(self, cls: ClassInfo) -> dict[str, list[FunctionInfo]]:
        """Attribute name -> the class's own methods that assign it (read once per class)."""
        if cls.setters is None:
            cls.setters = {}
            lines = self.index.lines(cls.module)
            for func in cls.methods.values():
                # From the text (a superset: the flow of each method then says what it sets),
                # so that methods setting nothing wanted are never lowered.
                for name in assigned_attrs_text(lines, func.node.span):
                    cls.setters.setdefault(name, []).append(func)
        return cls.setters

    def fields(self, cls: ClassInfo) -> tuple[str, ...] | None:
        """The fields a call of the class fills, in order, where its arguments are its fields:
        names its body and its bases' declare with an annotation (a dataclass, a named
        tuple), the bases' first. None where a class of it defines ``__init__`` (its
        parameters need not be its fields) or declares none."""
        classes = list(self.mro(cls))
        if any("__init__" in klass.methods for klass in classes):
            return None
        names: list[str] = []
        for klass in reversed(classes):
            for stmt in klass.node.body:
                if isinstance(stmt, ir.Assign) and stmt.annotation is not None:
                    target, note = stmt.targets[0], stmt.annotation
                elif isinstance(stmt, ir.Other) and stmt.kind == "annotation" and stmt.exprs:
                    target, note = stmt.exprs[0], stmt.exprs[1]
                else:
                    continue
                kind = note.value if isinstance(note, ir.Subscript) else note
                field = target.id if isinstance(target, ir.Name) else None
                if field is not None and field not in names and last_name(kind) != "ClassVar":
                    names.append(field)
        return tuple(names) or None

    def self_attrs(self, cls: ClassInfo) -> frozenset[str]:
        if cls.attrs_read is None:
            found: set[str] = set()
            for klass in self.mro(cls):
                found |= own_attrs(klass.node)
            cls.attrs_read = frozenset(found)
        return cls.attrs_read

    def class_names(self, cls: ClassInfo) -> Iterator[str]:
        """The names of ``cls``, of the classes it derives from, and of their bases as
        written (the last part of each, resolved through imports and aliases), nearest
        first: the bases are resolved only as far as the caller reads."""
        yield cls.name
        self.bases(cls)
        for klass in self.mro(cls):
            yield klass.name
            yield from (n.rsplit(".", 1)[-1] for n in klass.base_names)
