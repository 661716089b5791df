"""The words another module of the project lends a module: names its imports bind to helpers
returning a count, classes whose static methods or built objects carry one, and members that
base classes of other modules set or return one through. A scope of the module is walked
only where its text holds a source's name or one of these words (:mod:`.hits`)."""

from __future__ import annotations

import os

from cgguard.static.core import ir
from cgguard.static.core.calls import Calls
from cgguard.static.core.classes import Classes
from cgguard.static.core.flow import FunctionInfo
from cgguard.static.core.project import ClassInfo, ModuleInfo, ProjectIndex
from cgguard.static.core.summaries import Summaries
from cgguard.static.core.words import called_through, holds_word


class Lending:
    """What the project's other modules lend a module, found through its imports and bases."""

    def __init__(self, index: ProjectIndex, classes: Classes, calls: Calls, summaries: Summaries):
        self.index, self.classes, self.calls, self.summaries = index, classes, calls, summaries

    def outline_words(
        self, path: str, text: str, imports: dict[str, tuple[str, str | None]] | None = None
    ) -> set[str]:
        """What :meth:`imported_words` finds for the module at ``path`` (``text``, which
        names no source) without parsing it: through ``imports`` (its imports the caller
        cut from the text), or with None through its classes' bases (followed through
        outlines, :mod:`.outlines`). Nothing of the module is kept."""
        key = os.path.abspath(path)
        info = ModuleInfo(key, self.index.dotted_of(key), ir.Module((), ir.Span(1, 0, 1, 0)))
        info.imports = dict(imports or {})
        info.local_imports_read = True  # ``imports`` holds every one the caller asks about
        held = key in self.index.texts
        if not held:
            self.index.texts[key] = text  # what calls through a class are read from
        try:
            return self._base_class_words(info) if imports is None else self._import_words(info)
        finally:
            if not held and key not in self.index.modules:  # (a flow may have lowered it since)
                del self.index.texts[key]

    def imported_words(self, module: ModuleInfo) -> set[str]:
        """Names in ``module`` that bring a count from the project's other modules: imported
        helpers returning one, members that base classes of other modules set or return."""
        self.index.read_local_imports(module)
        return self._import_words(module) | self._base_class_words(module)

    def _import_words(self, module: ModuleInfo) -> set[str]:
        """Names the module's imports bind that bring a count (see :meth:`imported_words`)."""
        words: set[str] = set()
        for local, (name, attr) in module.imports.items():
            sub = self.index.submodule(name, attr)
            if sub is not None:
                name, attr = sub, None  # ``from package import module``
            if not self.index.may_name_a_source(name):
                continue  # neither the module nor (below) its attribute can bring one
            if attr is None:
                target = self.index.module_named(name)
                if (
                    target is not None
                    and target is not module
                    and self.index.names_a_source(target)
                ):
                    words |= {f.name for f in target.functions.values() if self.carries(f)}
                    if self._built_object_carries(module, local, qualified=True):
                        words.add(f"{local}.")
                continue
            if not self.index.may_bind_function(name, attr):
                # A class, a constant: no helper to summarise, but a class's static and
                # class methods may return one (``Limits.tokens(config)``): those the
                # module's text calls through it are asked.
                if self._class_method_carries(module, local):
                    words.add(f"{local}.")
                if self._built_object_carries(module, local):
                    words.add(f"{local}(")
                continue
            where = self.index.imported(module, local)
            if where is None or not where[1] or not self.index.names_a_source(where[0]):
                continue
            func = self.calls.function_named(where[0], where[1])
            if func is not None and self.carries(func):
                words.add(local)
        return words

    def _base_class_words(self, module: ModuleInfo) -> set[str]:
        """Members that base classes of the module's classes, those of other modules naming
        a source, set or return a count through. Only such a class can lend one: the bases
        are followed through the modules' outlines (:mod:`.outlines`), so a module between
        that names no source is never lowered for it."""
        words: set[str] = set()
        if self.index.root is None:
            return words  # no other module of a project to derive from
        outline = self.index.outlines.of_text(module.path, self.index.texts.get(module.path, ""))
        for path, name in sorted(self.index.outlines.bases_of(outline)):
            if path == module.path or not self.index.outlines.names_source(path):
                continue
            target = self.index.module_at(path)
            base = None if target is None else target.classes.get(name)
            for func in () if base is None else base.methods.values():
                flow = self.summaries.function_flow(func)
                if flow is None:
                    continue
                words.update(st.attr for st in flow.stored if st.attr)
                if flow.returns:
                    words.add(func.name)
        return words

    def _class_method_carries(self, module: ModuleInfo, local: str) -> bool:
        """Does a method the text of ``module`` calls through the name ``local`` (an imported
        class: ``local.name(...)``) return a count? Its module is read only for such a call."""
        called = called_through(self.index.texts.get(module.path, ""), local)
        klass = self.classes.class_named(module, local) if called else None
        if klass is None:
            return False
        methods = (self.classes.method(klass, name) for name in sorted(called))
        return any(m is not None and self.carries(m) for m in methods)

    def _built_object_carries(
        self, module: ModuleInfo, local: str, qualified: bool = False
    ) -> bool:
        """Does an object of the class imported as ``local``, which the text of ``module``
        builds (``local(...)``), have a member carrying a count: an attribute a method of it
        or of its bases sets from one, or a property returning one? Its module is read only
        where the text builds one. ``qualified``: ``local`` is a module, and the classes are
        those the text builds through it (``local.Name(...)``)."""
        text = self.index.texts.get(module.path, "")
        if not qualified:
            klass = (
                self.classes.class_named(module, local) if holds_word(text, f"{local}(") else None
            )
            return klass is not None and self._object_members_carry(klass)
        for name in sorted(called_through(text, local)):
            klass = self.classes.class_named(module, f"{local}.{name}")
            if klass is not None and self._object_members_carry(klass):
                return True
        return False

    def _object_members_carry(self, klass: ClassInfo) -> bool:
        for base in self.classes.mro(klass):
            for func in base.methods.values():
                if func.is_property:
                    if self.carries(func):
                        return True
                    continue
                flow = self.summaries.function_flow(func)
                if flow is not None and any(st.attr for st in flow.stored):
                    return True
        return False

    def carries(self, func: FunctionInfo) -> bool:
        summary = self.summaries.summary(func)
        return summary is not None
