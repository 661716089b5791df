"""The project as one run reads it: its modules, read, lowered and indexed once each.

A :class:`ProjectIndex` reads a module the first time a flow needs it (the file checked, a
module an import names, a base class's module) and keeps, per module, its functions, its
classes and the names its imports bind (:class:`ModuleInfo`, :class:`ClassInfo`). Questions
a module's text alone answers (does it name a source, can it bind a function by that name)
are answered without lowering it. Nothing here follows a flow: :mod:`.classes` resolves
classes, :mod:`.calls` calls, and :mod:`.summaries` what they carry.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from cgguard.static.core import ir
from cgguard.static.core.flow import FunctionInfo
from cgguard.static.core.modulefiles import (
    ModuleFiles,
    import_names,
    import_statements,
    project_python_files,
    read_bytes,
)
from cgguard.static.core.outlines import Outlines
from cgguard.static.core.patterns import Model, last_name
from cgguard.static.core.pyast import physical_lines
from cgguard.static.core.walks import all_functions, block_stmts, functions_inside, walk_stmts
from cgguard.static.core.words import may_bind

PARTIAL = frozenset({"partial"})


@dataclass(eq=False)
class ClassInfo:
    node: ir.ClassDef
    module: ModuleInfo
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    bases_read: list[ClassInfo] | None = None
    base_names: list[str] = field(default_factory=list)  # the bases as spelled (resolved names)
    attrs_read: frozenset[str] | None = None
    setters: dict[str, list[FunctionInfo]] | None = None
    # member -> the classes its methods build it from (``self.x = Klass(...)``), as spelled
    # in the module of the method that builds it
    built: dict[str, list[tuple[ModuleInfo, str]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name


@dataclass(eq=False)
class ModuleInfo:
    path: str
    dotted: str | None
    tree: ir.Module
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # local name -> (module, name in it or None for the module itself)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # local name -> the function a ``functools.partial`` of it stands for
    partials: dict[str, ir.Expr] = field(default_factory=dict)
    lines: list[str] | None = None
    # id of a class's node -> the class (``classes`` by node: a method finds its class)
    class_at: dict[int, ClassInfo] = field(default_factory=dict)
    carriers: set[int] | None = None  # see Summaries._carriers
    local_imports_read: bool = False  # see ProjectIndex.read_local_imports


class ProjectIndex:
    """The project's modules as read so far, and what their texts say before they are lowered."""

    def __init__(
        self,
        model: Model,
        root: str | None = None,
        read: Callable[[str], str | None] | None = None,
        lower: Callable[[str, str], ir.Module] | None = None,
        paths: ModuleFiles | None = None,
    ):
        self.source_words = model.source_names()  # a text naming a source holds one
        self.bound_words = tuple(sorted(model.bound_counts))
        self.root = root
        self.read = read or read_file
        self.read_bytes = read_bytes if read is None else partial(encoded, read)
        if lower is None:
            from cgguard.static.core import pyast

            def lower(text: str, path: str) -> ir.Module:
                return pyast.parse(text, path, lazy=True)

        self.lower = lower
        self.modules: dict[str, ModuleInfo | None] = {}
        self.texts: dict[str, str] = {}
        # Whether a module's text holds one of a set of words (the sources' names, the
        # request counts), asked before the module is lowered.
        self.holds_words: dict[tuple[str, tuple[str, ...]], bool] = {}
        self.paths = paths if paths is not None else ModuleFiles(root)
        # Imports and class headers of the project's modules, read from their text: how a
        # base class is found without lowering the modules between (Lending.base_class_words).
        self.outlines = Outlines(self.paths, self.source_words)
        self.binds: dict[tuple[str, str, bool], bool] = {}  # see may_bind_function
        self.import_lists: dict[str, str] = {}  # see _imported_text
        # Texts read to be asked (None: unreadable), not lowered yet: a lowering takes its text
        # from here instead of reading the file again.
        self.unlowered: dict[str, str | None] = {}
        self.files: list[str] | None = None

    def forget(self, key: str) -> None:
        """The file at ``key`` (an absolute path) changed: its module is read again when asked
        for, and every class's resolved bases and members are worked out again. The other
        modules' trees are kept: their text is the same."""
        for table in (self.modules, self.texts, self.unlowered, self.import_lists):
            table.pop(key, None)
        self.holds_words = {k: v for k, v in self.holds_words.items() if k[0] != key}
        self.binds = {k: v for k, v in self.binds.items() if k[0] != key}
        for module in self.modules.values():
            if module is None:
                continue
            module.carriers = None
            for cls in module.classes.values():
                cls.bases_read, cls.base_names, cls.attrs_read = None, [], None
                cls.setters, cls.built = None, {}
        self.outlines.forget(key)

    def module_at(self, path: str) -> ModuleInfo | None:
        key = os.path.abspath(path)
        if key not in self.modules:
            text = self.unlowered.pop(key) if key in self.unlowered else self.read(key)
            info = None
            if text is not None:
                try:
                    info = self.index_module(key, self.lower(text, key))
                    self.texts[key] = text
                except (SyntaxError, ValueError, RecursionError):
                    info = None  # its own check reports it
            self.modules[key] = info
        return self.modules[key]

    def may_name_a_source(self, name: str) -> bool:
        """Does the project module ``name`` name a source? Read from its text alone,
        so a module that cannot carry a count is never lowered to be asked."""
        return self._text_holds(name, self.source_words)

    def may_name_a_bound(self, name: str) -> bool:
        """Does the project module ``name`` name a bound (``Model.bound_counts``; its text alone)?"""
        return self._text_holds(name, self.bound_words)

    def _text_holds(self, name: str, words: tuple[str, ...]) -> bool:
        path = self.module_file(name)
        if path is None:
            return False
        key = os.path.abspath(path)
        if key not in self.texts and (key, words) not in self.holds_words:
            text = self.read(key)
            self.holds_words[key, words] = text is not None and any(w in text for w in words)
        if key in self.texts:
            return any(w in self.texts[key] for w in words)
        return self.holds_words[key, words]

    def module_named(self, name: str) -> ModuleInfo | None:
        path = self.module_file(name)
        return None if path is None else self.module_at(path)

    def module_file(self, name: str) -> str | None:
        return self.paths.module_file(name)

    def dotted_of(self, path: str) -> str | None:
        return self.paths.dotted_of(path)

    def index_module(self, path: str, tree: ir.Module) -> ModuleInfo:
        info = ModuleInfo(path, self.dotted_of(path), tree)
        for stmt in block_stmts(tree.body):
            if isinstance(stmt, ir.FunctionDef):
                info.functions[stmt.name] = FunctionInfo(stmt, None, path)
            elif isinstance(stmt, ir.ClassDef):
                cls = ClassInfo(stmt, info)
                for s in block_stmts(stmt.body):
                    if isinstance(s, ir.FunctionDef):
                        cls.methods[s.name] = FunctionInfo(s, stmt, path)
                info.classes[stmt.name] = cls
            elif isinstance(stmt, ir.Import):
                self._imports(info, stmt)
            elif (
                isinstance(stmt, ir.Assign)
                and isinstance(stmt.value, ir.Call)
                and last_name(stmt.value.func) in PARTIAL
                and stmt.value.args
            ):
                for target in stmt.targets:
                    if isinstance(target, ir.Name):
                        info.partials[target.id] = stmt.value.args[0].value
        info.class_at = {id(cls.node): cls for cls in info.classes.values()}
        return info

    def local_imports(self, module: ModuleInfo, func: FunctionInfo) -> None:
        """A function's own imports (``from m import helper`` in its body) bind names its
        calls resolve through, as the module's do (a module-level name is kept). A body
        whose text holds no ``import`` has none: it is not walked for them."""
        span = func.node.span
        if not any("import" in line for line in self.lines(module)[span.line - 1 : span.end_line]):
            return
        for stmt in walk_stmts(ir.body_of(func.node)):
            if isinstance(stmt, ir.Import):
                found = ModuleInfo(module.path, module.dotted, module.tree)
                self._imports(found, stmt)
                for name, spec in found.imports.items():
                    module.imports.setdefault(name, spec)

    def read_local_imports(self, module: ModuleInfo) -> None:
        """Fold the imports of every function that has its own into the module's, once: a
        helper a function imports in its body is a name its text is walked for, as one the
        module imports is. A body is lowered for it only where its text imports from a
        project module that names a source (no other module can lend it a count)."""
        if module.local_imports_read or self.root is None:
            return
        module.local_imports_read = True
        if not self._imports_a_source(module, self.texts.get(module.path, "")):
            return  # no import of the module's, in a function or not, can lend a count
        lines = self.lines(module)
        todo = list(all_functions(module))
        while todo:
            func = todo.pop()
            span = func.node.span
            text = "".join(lines[span.line - 1 : span.end_line])
            if "import" not in text or not self._imports_a_source(module, text):
                continue
            self.local_imports(module, func)
            todo.extend(functions_inside(func, lines))

    def _imports_a_source(self, module: ModuleInfo, text: str) -> bool:
        """Does ``text`` (code of ``module``) import from a project module naming a source?"""
        package = module.dotted or ""
        for name, rest in import_statements(text, package, module.path.endswith("__init__.py")):
            for imported in [name] if name is not None else import_names(rest):
                if self.may_name_a_source(imported):
                    return True
            if name is not None:
                for sub in map(partial(self.submodule, name), import_names(rest)):
                    if sub is not None and self.may_name_a_source(sub):
                        return True
        return False

    def submodule(self, name: str, attr: str | None) -> str | None:
        """``name.attr`` where ``from name import attr`` imports a module of the project (a
        package's, or a namespace package's), else None."""
        held = None if attr is None else f"{name}.{attr}"
        return held if held is not None and self.module_file(held) is not None else None

    def _imports(self, info: ModuleInfo, stmt: ir.Import) -> None:
        if not stmt.is_from:
            for alias in stmt.names:
                if alias.asname:
                    info.imports[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    info.imports[top] = (top, None)
            return
        module = self._absolute(info, stmt.module, stmt.level)
        if module is None:
            return
        for alias in stmt.names:
            if alias.name != "*":
                info.imports[alias.asname or alias.name] = (module, alias.name)

    def _absolute(self, info: ModuleInfo, module: str | None, level: int) -> str | None:
        if level == 0:
            return module
        if info.dotted is None:
            return None
        parts = info.dotted.split(".")
        if not info.path.endswith("__init__.py"):
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    def imported(self, module: ModuleInfo, name: str) -> tuple[ModuleInfo, str] | None:
        """The project module and name an import in ``module`` binds ``name`` to."""
        spec = module.imports.get(name)
        if spec is None or spec[1] is None:
            return None
        target = self.module_named(spec[0])
        if target is None:
            sub = self.module_named(f"{spec[0]}.{spec[1]}")
            return None if sub is None else (sub, "")
        return target, spec[1]

    def may_bind_function(self, module_name: str, name: str, def_only: bool = False) -> bool:
        """Can the project module ``module_name`` bind ``name`` to a function: a ``def``, an
        assignment (a ``partial``), or an import of it (only a ``def`` with ``def_only``)?
        Read from its text (a superset), so a class imported from a module is never looked
        for there by lowering the module."""
        path = self.module_file(module_name)
        if path is None:
            return False
        key = (path, name, def_only)
        if key not in self.binds:
            text = self.texts.get(path)
            if text is None:
                if path not in self.unlowered:
                    self.unlowered[path] = self.read(path)
                text = self.unlowered[path] or ""
            self.binds[key] = may_bind(text, name, def_only) or (
                not def_only
                and re.search(rf"\b{re.escape(name)}\b", self._imported_text(path, text))
                is not None
            )
        return self.binds[key]

    def _imported_text(self, path: str, text: str) -> str:
        """What the module's import statements list (the names they bind among it)."""
        if path not in self.import_lists:
            self.import_lists[path] = "\n".join(
                rest for _, rest in import_statements(text, "", path.endswith("__init__.py"))
            )
        return self.import_lists[path]

    def lines_at(self, path: str) -> list[str]:
        """The physical lines of a module the run has read."""
        module = self.module_at(path)
        return [] if module is None else self.lines(module)

    def project_files(self) -> list[str]:
        if self.files is None:
            self.files = [] if self.root is None else project_python_files(self.root)
        return self.files

    def lines(self, module: ModuleInfo) -> list[str]:
        if module.lines is None:
            module.lines = physical_lines(self.texts.get(module.path, ""))
        return module.lines

    def names_a_source(self, module: ModuleInfo) -> bool:
        text = self.texts.get(module.path, "")
        return any(n in text for n in self.source_words)


def spec_holds(spec: tuple[str, str | None], holds: Callable[[str], bool]) -> bool:
    """Does the text of what an import binds (``(module, name or None)``) hold what ``holds``
    looks for: the module's, or the submodule's where ``from package import module``?"""
    return holds(spec[0]) or (spec[1] is not None and holds(f"{spec[0]}.{spec[1]}"))


def read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def encoded(read: Callable[[str], str | None], path: str) -> bytes | None:
    text = read(path)
    return None if text is None else text.encode("utf-8", "surrogatepass")
