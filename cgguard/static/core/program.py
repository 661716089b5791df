"""Whole-program summaries, computed when a call asks for them, held by one run's :class:`Program`.

A :class:`Program` reads, lowers and indexes a module the first time a flow needs it (the file
checked, a module an import names, a base class's module). Per function it summarises, on
demand, what its return carries (a source's count, from which tuple element), which
parameters reach its return, a sink, or an attribute of ``self``. Per class it knows the
attributes set in any method of it or of its bases, with bases resolved through imports and
aliases across the project's modules. Calls resolve to module functions, methods through the
class hierarchy (``self.m()``, ``cls.m()``, ``super().m()``, ``Klass.m()``), static and class
methods, ``functools.partial`` of a helper, functions imported from the project, and the
functions (nested ``def``, named lambdas) a scope defines for itself.

A summary asked for while it is being computed (recursion) reads a guess: empty at first, the
last round's result after. Where a read's guess differs from the summary's final value, the
summaries that read it (and their readers) are computed again, up to :data:`MAX_ROUNDS`
rounds (a fixpoint). Everything read is kept on the :class:`Program` for the run, and nowhere
else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial

from cgguard.static.core import ir
from cgguard.static.core.flow import (
    MAX,
    REQUESTS,
    TOKEN,
    FunctionInfo,
    Hit,
    Passed,
    Returned,
    ScopeFlow,
    Summary,
    Taint,
    source_name,
)
from cgguard.static.core.modulefiles import ModuleFiles, import_names, import_statements
from cgguard.static.core.outlines import Outlines
from cgguard.static.core.patterns import Model, dotted, is_name_char, last_name
from cgguard.static.core.pyast import physical_lines

MAX_ROUNDS = 4
# Folders of a project that hold no code of its own.
_SKIP = frozenset({"__pycache__", "node_modules", "venv", "build", "dist", "site-packages"})
_PARTIAL = frozenset({"partial"})


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
    carriers: set[int] | None = None  # see Program._carriers
    local_imports_read: bool = False  # see Program._read_local_imports


@dataclass(eq=False)
class FunctionFacts:
    """What one function's flows found (kept on the Program for the run)."""

    flow: ScopeFlow | None = None
    # (parameter, seeded with a list of counts) -> the flow with that parameter seeded
    params: dict[tuple[str, bool], ScopeFlow] = field(default_factory=dict)
    busy: bool = False
    params_busy: set[tuple[str, bool]] = field(default_factory=set)
    requests: bool | None = None  # returns a request count (None: not asked yet)
    requests_busy: bool = False
    built: dict[str, list[str]] | None = None  # self.<attr> = <callee>(...): attr -> callees


class Program:
    """One run's reading of a project: modules, classes, functions and their summaries."""

    def __init__(
        self,
        model: Model,
        root: str | None = None,
        read: Callable[[str], str | None] | None = None,
        lower: Callable[[str, str], ir.Module] | None = None,
        paths: ModuleFiles | None = None,
    ):
        self.model = model
        self.source_words = model.source_names()  # a text naming a source holds one
        self.request_words = tuple(sorted(model.request_counts))
        self.root = root
        self._read = read or _read_file
        self._read_bytes = _read_bytes if read is None else partial(_encoded, read)
        if lower is None:
            from cgguard.static.core import pyast

            def lower(text: str, path: str) -> ir.Module:
                return pyast.parse(text, path, lazy=True)

        self._lower = lower
        self.modules: dict[str, ModuleInfo | None] = {}
        self.texts: dict[str, str] = {}
        # Whether a module's text holds one of a set of words (the sources' names, the
        # request counts), asked before the module is lowered.
        self.holds_words: dict[tuple[str, tuple[str, ...]], bool] = {}
        self.facts: dict[int, FunctionFacts] = {}
        self.paths = paths if paths is not None else ModuleFiles(root)
        # Imports and class headers of the project's modules, read from their text: how a
        # base class is found without lowering the modules between (_base_class_words).
        self.outlines = Outlines(self.paths, self.source_words)
        self.binds: dict[tuple[str, str, bool], bool] = {}  # see may_bind_function
        self.import_lists: dict[str, str] = {}  # see _imported_text
        # Texts read to be asked (None: unreadable), not lowered yet: a lowering takes its text
        # from here instead of reading the file again.
        self.unlowered: dict[str, str | None] = {}
        self.attr_summaries: dict[tuple[int, str], Summary | None] = {}
        self.files: list[str] | None = None
        # Recursion: a summary asked for while it is computed reads its guess (empty in the
        # first round, the last round's result after). Each such read is kept, so a round
        # whose reads got other than the final summaries is run again (see :meth:`hits`).
        self.guesses: dict[tuple, object] = {}
        self.busy_reads: dict[tuple, object] = {}
        self.attrs_busy: set[tuple[int, str]] = set()
        self.rounds = 0  # > 0 while a module's hits are computed
        # Which summaries each summary read while it was computed: where a round must run
        # again, only the readers of what changed (and theirs) are computed again.
        self.deps: dict[tuple, set[tuple]] = {}
        self.reading: list[set[tuple]] = []

    def forget_file(self, path: str) -> None:
        """The file at ``path`` changed (a fix): its module is read again when asked for, and
        every summary (any may have read it) and every class's resolved bases and members are
        worked out again. The other modules' trees are kept: their text is the same."""
        key = os.path.abspath(path)
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
        self._forget_summaries()
        self.guesses.clear()

    def _forget_summaries(self) -> None:
        self.facts.clear()
        self.attr_summaries.clear()
        self.attrs_busy.clear()
        self.busy_reads.clear()
        self.deps.clear()
        self.reading.clear()

    def _busy(self, key: tuple) -> object:
        """What a read of a summary being computed gets: its guess, remembered."""
        self._note(key)
        guess = self.guesses.get(key)
        self.busy_reads.setdefault(key, guess)
        return guess

    def _note(self, key: tuple) -> None:
        """The summary being computed reads ``key``."""
        if self.reading:
            self.reading[-1].add(key)

    def _computing(self, key: tuple) -> None:
        self._note(key)
        self.reading.append(set())

    def _computed(self, key: tuple) -> None:
        self.deps[key] = self.reading.pop()

    def _invalidate(self, changed: set[tuple]) -> None:
        """Drop the summaries that read one of ``changed`` while it was computed, and those
        that read them: the next round computes them again (with the new guesses)."""
        readers: dict[tuple, set[tuple]] = {}
        for key, read in self.deps.items():
            for dep in read:
                readers.setdefault(dep, set()).add(key)
        parts: dict[int, list[tuple]] = {}  # a flow's id -> the parts of it read
        for dep in readers:
            if dep[0] in ("returns", "stored"):
                parts.setdefault(dep[1], []).append(dep)
        todo = [r for key in changed for r in readers.get(key, ())]
        stale: set[tuple] = set()
        while todo:
            key = todo.pop()
            if key not in stale:
                stale.add(key)
                todo.extend(readers.get(key, ()))
                if key[0] == "flow":  # computed again: what its parts' readers read goes
                    todo.extend(r for part in parts.get(key[1], ()) for r in readers[part])
        for key in stale:
            self.deps.pop(key, None)
            facts = self.facts.get(key[1])
            if key[0] == "attr":
                self.attr_summaries.pop((key[1], key[2]), None)
            elif facts is None:
                continue
            elif key[0] == "flow":
                facts.flow = None
            elif key[0] == "param":
                facts.params.pop(key[2], None)
            else:
                facts.requests = None
        self.busy_reads.clear()

    def _final(self, key: tuple) -> object:
        kind, node = key[0], key[1]
        facts = self.facts.get(node)
        if kind in ("flow", "returns", "stored"):
            return None if facts is None else facts.flow
        if kind == "param":
            return None if facts is None else facts.params.get(key[2])
        if kind == "requests":
            return None if facts is None else facts.requests
        return self.attr_summaries.get((node, key[2]))

    def _unsettled(self) -> set[tuple]:
        """The summaries read while they were computed that got other than what they finally
        are: their final values become the guesses of the next round."""
        changed = {
            key: self._final(key)
            for key, guess in self.busy_reads.items()
            if _gist(key, self._final(key)) != _gist(key, guess)
        }
        self.guesses.update(changed)
        return set(changed)

    # ---- modules ---------------------------------------------------------------------

    def add(self, path: str, text: str, tree: ir.Module | None = None) -> ModuleInfo:
        """The module of ``text`` (the file checked), lowered unless ``tree`` is given."""
        key = os.path.abspath(path)
        found = self.modules.get(key)
        if found is not None and self.texts.get(key) == text and tree is None:
            return found
        if found is not None:
            self.forget_file(key)  # the file changed (a fix): what was read from it is stale
        self.texts[key] = text
        info = self._index(key, tree if tree is not None else self._lower(text, path))
        self.modules[key] = info
        return info

    def module_at(self, path: str) -> ModuleInfo | None:
        key = os.path.abspath(path)
        if key not in self.modules:
            text = self.unlowered.pop(key) if key in self.unlowered else self._read(key)
            info = None
            if text is not None:
                try:
                    info = self._index(key, self._lower(text, key))
                    self.texts[key] = text
                except (SyntaxError, ValueError, RecursionError):
                    info = None  # its own check reports it
            self.modules[key] = info
        return self.modules[key]

    def outline_words(
        self, path: str, text: str, imports: dict[str, tuple[str, str | None]] | None = None
    ) -> set[str]:
        """What :meth:`_imported_words` finds for the module at ``path`` (``text``, which
        names no source) without parsing it: through ``imports`` (its imports the caller
        cut from the text), or with None through its classes' bases (followed through
        outlines, :mod:`.outlines`). Nothing of the module is kept."""
        key = os.path.abspath(path)
        info = ModuleInfo(key, self.dotted_of(key), ir.Module((), ir.Span(1, 0, 1, 0)))
        info.imports = dict(imports or {})
        info.local_imports_read = True  # ``imports`` holds every one the caller asks about
        held = key in self.texts
        if not held:
            self.texts[key] = text  # what calls through a class are read from
        try:
            return self._base_class_words(info) if imports is None else self._import_words(info)
        finally:
            if not held and key not in self.modules:  # (a flow may have lowered it since)
                del self.texts[key]

    def may_name_a_source(self, name: str) -> bool:
        """Does the project module ``name`` name a source? Read from its text alone,
        so a module that cannot carry a count is never lowered to be asked."""
        return self._text_holds(name, self.source_words)

    def may_name_a_request(self, name: str) -> bool:
        """Does the project module ``name`` name a request count (its text alone)?"""
        return self._text_holds(name, self.request_words)

    def _text_holds(self, name: str, words: tuple[str, ...]) -> bool:
        path = self.module_file(name)
        if path is None:
            return False
        key = os.path.abspath(path)
        if key not in self.texts and (key, words) not in self.holds_words:
            text = self._read(key)
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

    def _index(self, path: str, tree: ir.Module) -> ModuleInfo:
        info = ModuleInfo(path, self.dotted_of(path), tree)
        for stmt in _block_stmts(tree.body):
            if isinstance(stmt, ir.FunctionDef):
                info.functions[stmt.name] = FunctionInfo(stmt, None, path)
            elif isinstance(stmt, ir.ClassDef):
                cls = ClassInfo(stmt, info)
                for s in _block_stmts(stmt.body):
                    if isinstance(s, ir.FunctionDef):
                        cls.methods[s.name] = FunctionInfo(s, stmt, path)
                info.classes[stmt.name] = cls
            elif isinstance(stmt, ir.Import):
                self._imports(info, stmt)
            elif (
                isinstance(stmt, ir.Assign)
                and isinstance(stmt.value, ir.Call)
                and last_name(stmt.value.func) in _PARTIAL
                and stmt.value.args
            ):
                for target in stmt.targets:
                    if isinstance(target, ir.Name):
                        info.partials[target.id] = stmt.value.args[0].value
        info.class_at = {id(cls.node): cls for cls in info.classes.values()}
        return info

    def _local_imports(self, module: ModuleInfo, func: FunctionInfo) -> None:
        """A function's own imports (``from m import helper`` in its body) bind names its
        calls resolve through, as the module's do (a module-level name is kept). A body
        whose text holds no ``import`` has none: it is not walked for them."""
        span = func.node.span
        if not any("import" in line for line in self._lines(module)[span.line - 1 : span.end_line]):
            return
        for stmt in _walk_stmts(ir.body_of(func.node)):
            if isinstance(stmt, ir.Import):
                found = ModuleInfo(module.path, module.dotted, module.tree)
                self._imports(found, stmt)
                for name, spec in found.imports.items():
                    module.imports.setdefault(name, spec)

    def _read_local_imports(self, module: ModuleInfo) -> None:
        """Fold the imports of every function that has its own into the module's, once: a
        helper a function imports in its body is a name its text is walked for, as one the
        module imports is. A body is lowered for it only where its text imports from a
        project module that names a source (no other module can lend it a count)."""
        if module.local_imports_read or self.root is None:
            return
        module.local_imports_read = True
        if not self._imports_a_source(module, self.texts.get(module.path, "")):
            return  # no import of the module's, in a function or not, can lend a count
        lines = self._lines(module)
        todo = list(_all_functions(module))
        while todo:
            func = todo.pop()
            span = func.node.span
            text = "".join(lines[span.line - 1 : span.end_line])
            if "import" not in text or not self._imports_a_source(module, text):
                continue
            self._local_imports(module, func)
            todo.extend(_functions_inside(func, lines))

    def _imports_a_source(self, module: ModuleInfo, text: str) -> bool:
        """Does ``text`` (code of ``module``) import from a project module naming a source?"""
        package = module.dotted or ""
        for name, rest in import_statements(text, package, module.path.endswith("__init__.py")):
            for imported in [name] if name is not None else import_names(rest):
                if self.may_name_a_source(imported):
                    return True
            if name is not None:
                for sub in map(partial(self._submodule, name), import_names(rest)):
                    if sub is not None and self.may_name_a_source(sub):
                        return True
        return False

    def _submodule(self, name: str, attr: str | None) -> str | None:
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

    # ---- names -----------------------------------------------------------------------

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

    def function_named(self, module: ModuleInfo, name: str, depth: int = 0) -> FunctionInfo | None:
        found = module.functions.get(name)
        if found is not None:
            return found
        partial = module.partials.get(name)
        if partial is not None and depth < 4:
            return self.callee(module, None, partial, depth + 1)
        spec = module.imports.get(name)
        if spec is None or spec[1] is None or not self.may_bind_function(spec[0], spec[1]):
            return None  # no module of the project binds a function by that name
        where = self.imported(module, name) if depth < 8 else None
        if where is not None and where[1]:
            return self.function_named(where[0], where[1], depth + 1)
        return None

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
                    self.unlowered[path] = self._read(path)
                text = self.unlowered[path] or ""
            self.binds[key] = _may_bind(text, name, def_only) or (
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

    def class_named(self, module: ModuleInfo, name: str, depth: int = 0) -> ClassInfo | None:
        if "." in name:
            head, _, rest = name.partition(".")
            spec = module.imports.get(head)
            if spec is None:
                return None
            base = spec[0] if spec[1] is None else f"{spec[0]}.{spec[1]}"
            target = self.module_named(base + ("." + rest.rsplit(".", 1)[0] if "." in rest else ""))
            return None if target is None else target.classes.get(rest.rsplit(".", 1)[-1])
        found = module.classes.get(name)
        if found is not None:
            return found
        where = self.imported(module, name) if depth < 8 else None
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
        module = self.module_at(func.path)
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
        facts = self.facts.setdefault(id(func.node), FunctionFacts())
        if facts.built is None:
            facts.built = {}
            for stmt in _walk_stmts(ir.body_of(func.node)):
                if not isinstance(stmt, ir.Assign) or not isinstance(stmt.value, ir.Call):
                    continue
                name = dotted(stmt.value.func)
                if name is None:
                    continue
                for target in stmt.targets:
                    if isinstance(target, ir.Attribute) and _is_name(target.value, "self"):
                        facts.built.setdefault(target.attr, []).append(name)
        return facts.built

    def class_of_name(
        self, module: ModuleInfo, name: str, holds: Callable[[str], bool] | None = None
    ) -> ClassInfo | None:
        """:meth:`class_named`, where ``holds`` (if given) allows: a class of ``module``
        itself, or one imported from a module whose text ``holds`` (not read otherwise)."""
        if holds is not None and ("." in name or name not in module.classes):
            spec = module.imports.get(name.split(".", 1)[0])
            if spec is None or not _spec_holds(spec, holds):
                return None
        return self.class_named(module, name)

    def setters(self, cls: ClassInfo) -> dict[str, list[FunctionInfo]]:
        """Attribute name -> the class's own methods that assign it (read once per class)."""
        if cls.setters is None:
            cls.setters = {}
            lines = self._lines(cls.module)
            for func in cls.methods.values():
                # From the text (a superset: the flow of each method then says what it sets),
                # so that methods setting nothing wanted are never lowered.
                for name in _assigned_attrs_text(lines, func.node.span):
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
                found |= _own_attrs(klass.node)
            cls.attrs_read = frozenset(found)
        return cls.attrs_read

    def is_runner(self, cls: ClassInfo) -> bool:
        pattern = self.model.runner_classes
        if pattern.search(cls.name):
            return True
        self.bases(cls)
        for klass in self.mro(cls):
            if pattern.search(klass.name):
                return True
            if any(pattern.search(n.rsplit(".", 1)[-1]) for n in klass.base_names):
                return True
        return False

    # ---- calls -----------------------------------------------------------------------

    def callee(
        self, module: ModuleInfo, cls: ClassInfo | None, func: ir.Expr, depth: int = 0
    ) -> FunctionInfo | None:
        """The function a call of ``func`` (in ``cls``'s method, or at module level) calls."""
        if isinstance(func, ir.Name):
            return self.function_named(module, func.id, depth)
        if isinstance(func, ir.Call) and last_name(func.func) in _PARTIAL and func.args:
            return self.callee(module, cls, func.args[0].value, depth + 1)
        if not isinstance(func, ir.Attribute):
            return None
        recv, name = func.value, func.attr
        if cls is not None:
            if isinstance(recv, ir.Name) and recv.id in ("self", "cls"):
                return self.method(cls, name)
            if isinstance(recv, ir.Call) and last_name(recv.func) == "type":
                return self.method(cls, name)
            if isinstance(recv, ir.Call) and _is_name(recv.func, "super"):
                return self.method(cls, name, skip_own=True)
        recv_name = dotted(recv)
        if recv_name is not None:
            klass = self.class_named(module, recv_name)
            if klass is not None:
                return self.method(klass, name)
            spec = module.imports.get(recv_name)
            if spec is not None:
                # ``mod.f()``: the module (or ``from pkg import mod``'s) defines ``f`` or not.
                held = spec[0] if spec[1] is None else f"{spec[0]}.{spec[1]}"
                if not self.may_bind_function(held, name, def_only=True):
                    return None
                target = self.module_named(held)
                if target is not None:
                    return target.functions.get(name)
        return None

    # ---- summaries -------------------------------------------------------------------

    def function_flow(
        self, func: FunctionInfo, *, walk: bool = False, reading: tuple | None = None
    ) -> ScopeFlow | None:
        """The function's own flow (its sources to its sinks, returns and stores); None for
        one whose text shows it can carry nothing, unless ``walk`` (its module's hits).
        ``reading``: the part of it the caller looks at (``("returns", id)``, ``("stored",
        id, attr)``): a read while it is computed then waits only on that part."""
        key = ("flow", id(func.node))
        facts = self.facts.setdefault(id(func.node), FunctionFacts())
        if facts.busy:
            return self._busy(reading or key)  # type: ignore[return-value]
        if facts.flow is not None:
            self._note(reading or key)
            return facts.flow
        if not walk and not self._worth(func):
            return None
        facts.busy = True
        self._computing(key)
        try:
            module = self.module_at(func.path)
            if module is None:
                return None
            self._local_imports(module, func)
            cls = self.class_of(func)
            flow = ScopeFlow(
                self.model,
                _Facts(self, cls) if cls is not None else None,
                func.node.params,
                _Scope(self, module, cls),
            )
            flow.run(ir.body_of(func.node))
            facts.flow = flow
        finally:
            facts.busy = False
            self._computed(key)
        return facts.flow

    def param_flow(self, func: FunctionInfo, param: str, listed: bool = False) -> ScopeFlow | None:
        """The function's flow with ``param`` carrying a count of its own (``listed``: a list
        of counts, such as the capture sizes)."""
        slot = (param, listed)
        key = ("param", id(func.node), slot)
        facts = self.facts.setdefault(id(func.node), FunctionFacts())
        if slot in facts.params_busy:
            return self._busy(key)  # type: ignore[return-value]
        if slot in facts.params:
            self._note(key)
            return facts.params[slot]
        facts.params_busy.add(slot)
        self._computing(key)
        try:
            module = self.module_at(func.path)
            if module is None:
                return None
            cls = self.class_of(func)
            flow = ScopeFlow(
                self.model,
                _Facts(self, cls) if cls is not None else None,
                (),
                _Scope(self, module, cls),
                summarising=True,
            )
            flow.seed_params([param], func.node.params, listed=listed)
            flow.run(ir.body_of(func.node))
            facts.params[slot] = flow
        finally:
            facts.params_busy.discard(slot)
            self._computed(key)
        return facts.params[slot]

    def from_list(
        self, func: FunctionInfo, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[str | None, bool]:
        """What ``func`` returns of the lists of counts ``call`` hands it (``listed`` tells
        one): the kind of the count it picks from one (its largest, its last) or None, and
        whether it returns one (a sorted copy)."""
        kind, returns_list = None, False
        for param in _passable(func):
            arg = _argument(call, func, param)
            if arg is None or not listed(arg):
                continue
            flow = self.param_flow(func, param, listed=True)
            if flow is None:
                continue
            if kind is None and flow.returns:
                kind = flow.returns[0].taint.kind
            returns_list = returns_list or flow.returns_list
        return kind, returns_list

    def _worth(self, func: FunctionInfo) -> bool:
        """Can the function's own flow find anything? Only if its text names a source or a
        request count, or calls a function of its module that can (decided on the text)."""
        module = self.module_at(func.path)
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
        lines = self._lines(module)
        funcs = [*module.functions.values()]
        for cls in module.classes.values():
            funcs.extend(cls.methods.values())
        words = set(self.source_words) | self._imported_names(module)
        found: set[int] = set()
        while True:
            new = [
                f for f in funcs if id(f.node) not in found and _mentions(lines, f.node.span, words)
            ]
            if not new:
                return found
            for f in new:
                found.add(id(f.node))
                words.add(f.name)
                words |= _attrs_assigned_from(lines, f.node.span, words)

    def _imported_names(self, module: ModuleInfo) -> set[str]:
        """Names the module imports from project modules whose text names a source: a helper
        there may return a count. One imported from a module that names none cannot (a call's
        summary is not looked for there either: :meth:`_Scope.member`). A name its module
        cannot bind to a function (a class) brings one only through its static and class
        methods: it is the word ``Name.``, and ``Name(...)`` is not a use of it (the members
        of an object it builds are words of the module's own walk: :meth:`_imported_words`)."""
        if self.root is None:
            return set()
        self._read_local_imports(module)
        names: set[str] = set()
        for local, (name, attr) in module.imports.items():
            sub = self._submodule(name, attr)
            if sub is not None and self.may_name_a_source(sub):
                names.add(local)  # ``from package import module``
            elif self.may_name_a_source(name):
                plain = attr is not None and not self.may_bind_function(name, attr)
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
            first.taint.kind,
            first.taint.source,
            first.chain,
            rets,
            first.index,
            None,
            func.path,
        )

    def returns_requests(self, func: FunctionInfo) -> bool:
        """Does the function return a request count (a helper or a property)?"""
        key = ("requests", id(func.node))
        facts = self.facts.setdefault(id(func.node), FunctionFacts())
        if facts.requests_busy:
            return bool(self._busy(key))
        if facts.requests is not None:
            self._note(key)
            return facts.requests
        facts.requests = False
        facts.requests_busy = True
        self._computing(key)
        try:
            facts.requests = self._returns_requests(func)
        finally:
            facts.requests_busy = False
            self._computed(key)
        return facts.requests

    def _returns_requests(self, func: FunctionInfo) -> bool:
        module = self.module_at(func.path)
        text = (
            "".join(self._lines(module)[func.node.span.line - 1 : func.node.span.end_line])
            if module
            else ""
        )
        if "return" not in text or not any(n in text for n in self.model.request_counts):
            return False
        flow = self.function_flow(func, walk=True)
        return flow is not None and any(
            stmt.value is not None and flow.count_kind(stmt.value) == REQUESTS
            for stmt in _returns(ir.body_of(func.node))
        )

    def attr_summary(self, cls: ClassInfo, name: str) -> Summary | None:
        key = (id(cls.node), name)
        read = ("attr", *key)
        if key in self.attrs_busy:
            return self._busy(read)  # type: ignore[return-value]
        if key in self.attr_summaries:
            self._note(read)
            return self.attr_summaries[key]
        self.attrs_busy.add(key)
        self._computing(read)
        try:
            found = self._attr_summary(cls, name)
        finally:
            self.attrs_busy.discard(key)
            self._computed(read)
        self.attr_summaries[key] = found
        return found

    def _attr_summary(self, cls: ClassInfo, name: str) -> Summary | None:
        found: Summary | None = None
        for klass in self.mro(cls):
            for func in self.setters(klass).get(name, ()):
                flow = self.function_flow(func, reading=("stored", id(func.node), name))
                if flow is None:
                    continue
                for st in flow.stored:
                    if st.attr != name:
                        continue
                    if found is None:
                        found = Summary(
                            func,
                            st.taint.kind,
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

    def param_returns(self, func: FunctionInfo, param: str) -> list[tuple[str, int | None]]:
        """(kind, tuple index or None) for each way ``param`` reaches the return."""
        flow = self.param_flow(func, param)
        kinds: list[tuple[str, int | None]] = []
        for ret in [] if flow is None else flow.returns:
            if (ret.taint.kind, ret.index) not in kinds:
                kinds.append((ret.taint.kind, ret.index))
        return kinds

    def passing(self, func: FunctionInfo, call: ir.Call) -> Passed | None:
        args: list[tuple[ir.Expr, Callable[[], list[tuple[str, int | None]]]]] = []
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

    # ---- a module's hits --------------------------------------------------------------

    def hits(self, module: ModuleInfo) -> list[Hit]:
        """Every hit in ``module``'s own code, helpers' counts followed to their callers.

        Only scopes whose text names a source, or a member found to carry one, are walked:
        the rest cannot hold a hit (what they call is summarised when a walk asks). Where a
        summary was read while it was computed (recursion) and turned out otherwise, the
        summaries are computed again with the last round's as guesses, until they settle.
        """
        if self.rounds:
            return self._hits_once(module)  # inside a round (a helper's landing hits)
        self.busy_reads.clear()  # another module's rounds settled what they read
        found: list[Hit] = []
        for _ in range(MAX_ROUNDS):
            self.rounds += 1
            try:
                found = self._hits_once(module)
                changed = self._unsettled()
            finally:
                self.rounds -= 1
            if not changed:
                break
            self._invalidate(changed)
        return found

    def _hits_once(self, module: ModuleInfo) -> list[Hit]:
        lines = self._lines(module)
        words = set(self.source_words) | self._imported_words(module)
        funcs = list(_all_functions(module))
        flows: list[tuple[ScopeFlow, FunctionInfo | None]] = []
        done: set[int] = set()
        for _ in range(64):
            todo = [
                f for f in funcs if id(f.node) not in done and _mentions(lines, f.node.span, words)
            ]
            if not todo:
                break
            for func in todo:
                done.add(id(func.node))
                funcs.extend(_functions_inside(func, lines))
                flow = self.function_flow(func, walk=True)
                if flow is None:
                    continue
                flows.append((flow, func))
                if flow.returns or flow.returns_list:
                    words.add(func.name)
                words.update(st.attr for st in flow.stored if st.attr)
                words.update(flow.stored_lists)
        for scope, cls in _class_and_module_scopes(module):
            # The scope's own statements: its functions and classes are scopes of their own.
            stmts = tuple(st for st in scope if not isinstance(st, ir.FunctionDef | ir.ClassDef))
            if not any(_mentions(lines, st.span, words) for st in stmts):
                continue
            flow = ScopeFlow(
                self.model,
                None,
                (),
                _Scope(self, module, self._class_info(module, cls)),
                function=False,
            )
            flow.run(stmts)
            flows.append((flow, None))
        return self._none_tested(self._place(module, flows), flows)

    def _none_tested(
        self, hits: list[Hit], flows: list[tuple[ScopeFlow, FunctionInfo | None]]
    ) -> list[Hit]:
        """Mark the hits whose source's value some flow read so far tests for None (the
        module's scopes, and the helpers and members followed to them), and the hits of
        this module whose source reads what one of its own scopes tests for None under any
        name (``self.graph_tokens is None`` where ``graph_tokens`` holds the capture size
        makes every capture-size read of the module suspect)."""
        if not hits:
            return hits
        tested: set[int] = set()
        names: set[str] = set()
        for flow, _ in flows:
            tested |= flow.none_tested
            names |= flow.none_tested_names
        for facts in self.facts.values():
            if facts.flow is not None:
                tested |= facts.flow.none_tested

        def marked(hit: Hit) -> bool:
            if id(hit.source) in tested:
                return True
            return hit.path is None and source_name(hit.source) in names

        return [replace(h, none_tested=True) if marked(h) else h for h in hits]

    @staticmethod
    def _module_level(module: ModuleInfo, func: FunctionInfo) -> bool:
        """Is ``func`` a function or method of ``module`` (not one defined inside one)?"""
        if func.cls is not None:
            return True
        found = module.functions.get(func.name)
        return found is not None and found.node is func.node

    def lines_at(self, path: str) -> list[str]:
        """The physical lines of a module the run has read."""
        module = self.module_at(path)
        return [] if module is None else self._lines(module)

    def landing_hits(self, module: ModuleInfo) -> list[Hit]:
        """Hits that land in ``module`` from the project's other modules: at the return of a
        helper of it that every importer takes as a block count."""
        names = set()
        for func in module.functions.values():
            if not _mentions(self._lines(module), func.node.span, set(self.source_words)):
                continue
            summary = self.summary(func)
            if summary is not None and summary.kind in (TOKEN, MAX):
                names.add(func.name)
        if not names or self.root is None or module.dotted is None:
            return []
        found: list[Hit] = []
        leaf = module.dotted.rsplit(".", 1)[-1]
        # Asked of each file's bytes: a UTF-8 text holds a word exactly where its bytes hold
        # the word's, and most files are never decoded.
        helpers = [n.encode() for n in sorted(names)]
        for path in self.project_files():
            if path == module.path:
                continue
            data = self._read_bytes(path)
            if data is None or b"import" not in data or leaf.encode() not in data:
                continue
            if not any(n in data for n in helpers):
                continue
            other = self.module_at(path)
            if other is not None:
                found += [h for h in self.hits(other) if h.path == module.path]
        return found

    def project_files(self) -> list[str]:
        if self.files is None:
            self.files = []
            if self.root is not None:
                for folder, dirs, names in os.walk(self.root):
                    dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP)
                    self.files += [
                        os.path.abspath(os.path.join(folder, n))
                        for n in sorted(names)
                        if n.endswith(".py")
                    ]
        return self.files

    def _lines(self, module: ModuleInfo) -> list[str]:
        if module.lines is None:
            module.lines = physical_lines(self.texts.get(module.path, ""))
        return module.lines

    def _names_a_source(self, module: ModuleInfo) -> bool:
        text = self.texts.get(module.path, "")
        return any(n in text for n in self.source_words)

    def _imported_words(self, module: ModuleInfo) -> set[str]:
        """Names in ``module`` that bring a count from the project's other modules: imported
        helpers returning one, members that base classes of other modules set or return."""
        self._read_local_imports(module)
        return self._import_words(module) | self._base_class_words(module)

    def _import_words(self, module: ModuleInfo) -> set[str]:
        """Names the module's imports bind that bring a count (see :meth:`_imported_words`)."""
        words: set[str] = set()
        for local, (name, attr) in module.imports.items():
            sub = self._submodule(name, attr)
            if sub is not None:
                name, attr = sub, None  # ``from package import module``
            if not self.may_name_a_source(name):
                continue  # neither the module nor (below) its attribute can bring one
            if attr is None:
                target = self.module_named(name)
                if target is not None and target is not module and self._names_a_source(target):
                    words |= {f.name for f in target.functions.values() if self._carries(f)}
                    if self._built_object_carries(module, local, qualified=True):
                        words.add(f"{local}.")
                continue
            if not self.may_bind_function(name, attr):
                # A class, a constant: no helper to summarise, but a class's static and
                # class methods may return one (``Limits.tokens(config)``): those the
                # module's text calls through it are asked.
                if self._class_method_carries(module, local):
                    words.add(f"{local}.")
                if self._built_object_carries(module, local):
                    words.add(f"{local}(")
                continue
            where = self.imported(module, local)
            if where is None or not where[1] or not self._names_a_source(where[0]):
                continue
            func = self.function_named(where[0], where[1])
            if func is not None and self._carries(func):
                words.add(local)
        return words

    def _base_class_words(self, module: ModuleInfo) -> set[str]:
        """Members that base classes of the module's classes, those of other modules naming
        a source, set or return a count through. Only such a class can lend one: the bases
        are followed through the modules' outlines (:mod:`.outlines`), so a module between
        that names no source is never lowered for it."""
        words: set[str] = set()
        if self.root is None:
            return words  # no other module of a project to derive from
        outline = self.outlines.of_text(module.path, self.texts.get(module.path, ""))
        for path, name in sorted(self.outlines.bases_of(outline)):
            if path == module.path or not self.outlines.names_source(path):
                continue
            target = self.module_at(path)
            base = None if target is None else target.classes.get(name)
            for func in () if base is None else base.methods.values():
                flow = self.function_flow(func)
                if flow is None:
                    continue
                words.update(st.attr for st in flow.stored if st.attr)
                if flow.returns:
                    words.add(func.name)
        return words

    def _class_method_carries(self, module: ModuleInfo, local: str) -> bool:
        """Does a method the text of ``module`` calls through the name ``local`` (an imported
        class: ``local.name(...)``) return a count? Its module is read only for such a call."""
        called = _called_through(self.texts.get(module.path, ""), local)
        klass = self.class_named(module, local) if called else None
        if klass is None:
            return False
        methods = (self.method(klass, name) for name in sorted(called))
        return any(m is not None and self._carries(m) for m in methods)

    def _built_object_carries(
        self, module: ModuleInfo, local: str, qualified: bool = False
    ) -> bool:
        """Does an object of the class imported as ``local``, which the text of ``module``
        builds (``local(...)``), have a member carrying a count: an attribute a method of it
        or of its bases sets from one, or a property returning one? Its module is read only
        where the text builds one. ``qualified``: ``local`` is a module, and the classes are
        those the text builds through it (``local.Name(...)``)."""
        text = self.texts.get(module.path, "")
        if not qualified:
            klass = self.class_named(module, local) if _holds_word(text, f"{local}(") else None
            return klass is not None and self._object_members_carry(klass)
        for name in sorted(_called_through(text, local)):
            klass = self.class_named(module, f"{local}.{name}")
            if klass is not None and self._object_members_carry(klass):
                return True
        return False

    def _object_members_carry(self, klass: ClassInfo) -> bool:
        for base in self.mro(klass):
            for func in base.methods.values():
                if func.is_property:
                    if self._carries(func):
                        return True
                    continue
                flow = self.function_flow(func)
                if flow is not None and any(st.attr for st in flow.stored):
                    return True
        return False

    def _carries(self, func: FunctionInfo) -> bool:
        summary = self.summary(func)
        return summary is not None and summary.kind in (TOKEN, MAX)

    def _class_info(self, module: ModuleInfo, node: ir.ClassDef | None) -> ClassInfo | None:
        if node is None:
            return None
        return next((c for c in module.classes.values() if c.node is node), None)

    def _place(
        self, module: ModuleInfo, flows: list[tuple[ScopeFlow, FunctionInfo | None]]
    ) -> list[Hit]:
        """A helper's call-site hits move to its return when every use of it is a count."""
        hits = [h for flow, _ in flows for h in flow.hits]
        # A helper's return, or one member a method sets (one method may set several).
        by_helper: dict[tuple[int, str | None], list[Hit]] = {}
        summaries: dict[tuple[int, str | None], Summary] = {}
        for h in hits:
            if isinstance(h.helper, Summary):
                by_helper.setdefault(_helper_key(h.helper), []).append(h)
                summaries[_helper_key(h.helper)] = h.helper
        if not by_helper:
            return hits
        sunk: set[int] = set()
        other: set[int] = set()
        for flow, _ in flows:
            sunk |= flow.sunk_calls
            other |= flow.other_uses
        sunk -= other
        spellings: dict[tuple[int, str | None], set[str]] = {}
        for key, summary in summaries.items():
            spelled = {summary.name}
            if summary.attr is None and summary.path != module.path:
                for local, (source, attr) in module.imports.items():
                    if attr is None or not (
                        attr == summary.function.name or self.may_name_a_source(source)
                    ):
                        continue  # no import that could bind the helper: not resolved
                    if self.function_named(module, local) is summary.function:
                        spelled.add(local)  # ``from m import helper as alias``
            spellings[key] = spelled
        names = set().union(*spellings.values())
        refs = _references(module.tree, names, self._lines(module))
        moved: set[tuple[int, str | None]] = set()
        extra: list[Hit] = []
        for key, summary in summaries.items():
            mine = [r for r in refs if _spelled(r) in spellings[key]]
            if not all(id(r) in sunk for r in mine):
                continue
            if summary.path == module.path and not self._module_level(module, summary.function):
                # A helper defined inside a function (a closure, a lambda): the call, in the
                # scope that holds the request count, makes it the count.
                continue
            if summary.path != module.path and (
                summary.attr is not None
                or summary.function.cls is not None
                or self._used_elsewhere(summary)
            ):
                # A member a base class of another module sets, or a method of a class of
                # another module: the use here makes it the count (the class may be shared);
                # an imported helper's count moves to its return only where its own module
                # uses it for nothing else.
                continue
            if summary.attr is None and self._used_by_importers(summary, module):
                # Another module of the project uses the helper for something else (a
                # token buffer): its return is no block count, the call here makes it one.
                continue
            moved.add(key)
            for ret in summary.returns:
                # A local named as a block count that is returned: the finding goes where
                # it was assigned, as where it reaches a sink in its own scope.
                at = ret.taint.pending
                extra.append(
                    Hit(
                        kind=ret.taint.kind,
                        sink=summary.spelled if at is None else at.sink,
                        node=ret.value if at is None else at.node,
                        source=ret.taint.source,
                        rewrite=ret.rewrite if at is None else at.rewrite,
                        request=ret.request if at is None else at.request,
                        stmt=ret.stmt if at is None else at.stmt,
                        guessed=ret.guessed if at is None else at.guessed,
                        via=None if ret.taint.helper is None else ret.taint.helper.spelled,
                        helper=ret.taint.helper,
                        path=None if summary.path == module.path else summary.path,
                    )
                )
        kept = [
            h
            for h in hits
            if not isinstance(h.helper, Summary) or _helper_key(h.helper) not in moved
        ]
        # Two returns of one local hold one finding, at the local.
        placed: set[int] = {id(h.node) for h in kept}
        for h in extra:
            if id(h.node) not in placed:
                placed.add(id(h.node))
                kept.append(h)
        return kept

    def _used_by_importers(self, summary: Summary, checked: ModuleInfo) -> bool:
        """Does a module of the project other than ``checked`` and the helper's own import
        the module-level helper and use it otherwise than as a count that reaches a sink?
        Asked in a one-file run too, so pre-commit's run on the caller agrees with a check
        of the whole project. A use at a module's or class's top level counts as other."""
        helper = summary.function
        home = self.module_at(summary.path) if summary.path is not None else None
        if helper.cls is not None or home is None or home.dotted is None or self.root is None:
            return False
        leaf = home.dotted.rsplit(".", 1)[-1]
        for path in self.project_files():
            if path in (checked.path, home.path):
                continue
            text = self._read(path)
            if text is None or "import" not in text or leaf not in text or helper.name not in text:
                continue
            other = self.module_at(path)
            if other is None:
                continue
            self._read_local_imports(other)
            spelled = {helper.name} | {
                local
                for local, (_, attr) in other.imports.items()
                if attr == helper.name and self.function_named(other, local) is helper
            }
            refs = _references(other.tree, spelled, self._lines(other))
            if not refs:
                continue
            sunk: set[int] = set()
            for func in _all_functions(other):
                flow = self.function_flow(func)
                if flow is not None:
                    sunk |= flow.sunk_calls - flow.other_uses
            if any(id(r) not in sunk for r in refs):
                return True
        return False

    def _used_elsewhere(self, summary: Summary) -> bool:
        """A helper of another module used otherwise in its own module (a buffer's size)."""
        module = self.module_at(summary.path) if summary.path is not None else None
        if module is None:
            return True
        flows = [self.function_flow(f) for f in _all_functions(module)]
        refs = _references(module.tree, {summary.name}, self._lines(module))
        sunk: set[int] = set()
        for flow in flows:
            if flow is not None:
                sunk |= flow.sunk_calls
        return any(id(r) not in sunk for r in refs)


class _Facts:
    """What a class offers as a request count (read when a fix asks)."""

    def __init__(self, program: Program, cls: ClassInfo):
        self.program, self.cls = program, cls
        self.name = cls.name

    @property
    def is_runner(self) -> bool:
        return self.program.is_runner(self.cls)

    @property
    def self_attrs(self) -> frozenset[str]:
        return self.program.self_attrs(self.cls)


class _Scope:
    """The resolver a scope's flow asks: calls and reads resolved in the program."""

    def __init__(self, program: Program, module: ModuleInfo, cls: ClassInfo | None):
        self.program, self.module, self.cls = program, module, cls
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
        return self.program.callee(self.module, self.cls, call.func)

    def _may_return(self, call: ir.Call, holds: Callable[[str], bool]) -> bool:
        """Can the callee return what ``holds`` looks for (a count, a request count)? A
        function imported from a project module whose text has none of its words cannot,
        so that module is not read and lowered to find out."""
        func = call.func
        name = func.id if isinstance(func, ir.Name) else None
        if isinstance(func, ir.Attribute):
            name = dotted(func.value)
        spec = self.module.imports.get(name) if name else None
        return spec is None or _spec_holds(spec, holds)

    def _returning_callee(self, call: ir.Call) -> FunctionInfo | None:
        """The function whose return a call gives, where that return may carry a source
        (not a property's getter; not one imported from a module naming none)."""
        if not self._may_return(call, self.program.may_name_a_source):
            return None
        func = self._callee(call)
        return None if func is None or func.is_property else func

    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        p = self.program
        if isinstance(node, ir.Call):
            func = self._returning_callee(node)
            return None if func is None else p.summary(func)
        klass = self.cls if _is_name(node.value, "self") else self._object_class(node.value)
        if klass is None:
            return None
        prop = p.method(klass, node.attr)
        if prop is not None:
            return p.summary(prop) if prop.is_property else None
        return p.attr_summary(klass, node.attr)

    def _object_class(self, recv: ir.Expr) -> ClassInfo | None:
        """The class of the object ``recv`` is, where the program can tell: ``Klass(...)``,
        or a member ``self.m`` the class builds from one class. Only a class whose module
        names a source is read (its members are what is asked for)."""
        p = self.program
        if isinstance(recv, ir.Attribute) and _is_name(recv.value, "self") and self.cls:
            return p.built_class(self.cls, recv.attr, p.may_name_a_source)
        name = dotted(recv.func) if isinstance(recv, ir.Call) else None
        return None if name is None else p.class_of_name(self.module, name, p.may_name_a_source)

    def requests(self, node: ir.Call | ir.Attribute) -> bool:
        p = self.program
        if isinstance(node, ir.Call):
            if not self._may_return(node, p.may_name_a_request):
                return False
            func = self._callee(node)
            return func is not None and not func.is_property and p.returns_requests(func)
        if self.cls is None or not _is_name(node.value, "self"):
            return False
        prop = p.method(self.cls, node.attr)
        return prop is not None and prop.is_property and p.returns_requests(prop)

    def passing(self, call: ir.Call) -> Passed | None:
        func = self._callee(call)
        return None if func is None else self.program.passing(func, call)

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        func = self._callee(call) or self._built_method(call)
        return [] if func is None else self.program.sinking(func, call, tainted)

    def _built_method(self, call: ir.Call) -> FunctionInfo | None:
        """``self.model_runner.m(n)``: the method of the class a method builds the member
        from. Asked only where a count is handed to such a call (finding the class may read
        the module it is imported from), for the sink a method performs."""
        func = call.func
        if self.cls is None or not isinstance(func, ir.Attribute):
            return None
        recv = func.value
        if not (isinstance(recv, ir.Attribute) and _is_name(recv.value, "self")):
            return None
        built = self.program.built_class(self.cls, recv.attr)
        return None if built is None else self.program.method(built, func.attr)

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        func = self._callee(call)
        return [] if func is None else self.program.dict_entries(func, call, tainted)

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[str | None, bool]:
        func = self._callee(call)
        if func is None or func.is_property:
            return None, False
        return self.program.from_list(func, call, listed)

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        p = self.program
        if isinstance(node, ir.Call):
            func = self._returning_callee(node)
            if func is None:
                return False
            flow = p.function_flow(func, reading=("returns", id(func.node)))
            return flow is not None and flow.returns_list
        if self.cls is None or not _is_name(node.value, "self"):
            return False
        for klass in p.mro(self.cls):
            for func in p.setters(klass).get(node.attr, ()):
                flow = p.function_flow(func, reading=("stored", id(func.node), node.attr))
                if flow is not None and node.attr in flow.stored_lists:
                    return True
        return False

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        p = self.program
        name = dotted(call.func)
        klass = None if name is None else p.class_named(self.module, name)
        if klass is None:
            return []
        names = p.fields(klass)
        if names is not None:
            positional = [a for a in call.args if a.keyword is None]
            if any(a.star for a in positional):
                positional = []  # which field a starred argument fills is not known
            handed = list(zip(names, (a.value for a in positional), strict=False))
            handed += [(a.keyword, a.value) for a in call.args if a.keyword in names]
            return [(field, arg) for field, arg in handed if tainted(arg)]
        init = p.method(klass, "__init__")
        if init is None:
            return []
        # The members ``__init__`` sets from each parameter handed a count (its flow with the
        # parameter carrying a count of its own: what it stores on ``self``).
        return [
            (stored.attr, arg)
            for arg, flow in p.handed(init, call, tainted)
            for stored in flow.stored
            if stored.attr is not None
        ]


# ---- module structure -----------------------------------------------------------------


def _spec_holds(spec: tuple[str, str | None], holds: Callable[[str], bool]) -> bool:
    """Does the text of what an import binds (``(module, name or None)``) hold what ``holds``
    looks for: the module's, or the submodule's where ``from package import module``?"""
    return holds(spec[0]) or (spec[1] is not None and holds(f"{spec[0]}.{spec[1]}"))


def _helper_key(summary: Summary) -> tuple[int, str | None]:
    """Which summary a hit went through: a function's return, or a member it sets."""
    return (id(summary.function.node), summary.attr)


def _read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _encoded(read: Callable[[str], str | None], path: str) -> bytes | None:
    text = read(path)
    return None if text is None else text.encode("utf-8", "surrogatepass")


def _is_name(node: object, name: str) -> bool:
    return isinstance(node, ir.Name) and node.id == name


def _block_stmts(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    """Statements of a block, looking into ``if``/``try`` blocks at the same level."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.If):
            yield from _block_stmts(stmt.body)
            yield from _block_stmts(stmt.orelse)
        elif isinstance(stmt, ir.Try):
            yield from _block_stmts(stmt.body)
            for h in stmt.handlers:
                yield from _block_stmts(h.body)
            yield from _block_stmts(stmt.orelse)
            yield from _block_stmts(stmt.finalbody)


def _all_functions(module: ModuleInfo) -> Iterator[FunctionInfo]:
    """Every function of the module, nested ones included (each its own scope)."""
    yield from module.functions.values()
    for cls in module.classes.values():
        yield from cls.methods.values()
    known = {id(f.node) for f in module.functions.values()}
    known |= {id(f.node) for c in module.classes.values() for f in c.methods.values()}
    for node, owner in _nested_functions(module.tree.body, None):
        if id(node) not in known:
            yield FunctionInfo(node, owner, module.path)


def _functions_inside(func: FunctionInfo, lines: list[str]) -> list[FunctionInfo]:
    """The functions ``func`` defines in its body (each a scope of its own). A body whose
    text after the first line holds neither ``def`` nor ``class`` defines none: it is not
    walked for them."""
    span = func.node.span
    if not any("def" in line or "class" in line for line in lines[span.line : span.end_line]):
        return []
    return [
        FunctionInfo(node, None, func.path)
        for node, _ in _nested_functions(ir.body_of(func.node), None)
    ]


def _nested_functions(
    body: tuple[ir.Stmt, ...], cls: ir.ClassDef | None
) -> Iterator[tuple[ir.FunctionDef, ir.ClassDef | None]]:
    for stmt in body:
        if isinstance(stmt, ir.FunctionDef):
            yield stmt, cls  # its own nested functions: found once it is walked
        elif isinstance(stmt, ir.ClassDef):
            yield from _nested_functions(stmt.body, stmt)
        else:
            for child in ir.children(stmt):
                if isinstance(child, ir.FunctionDef | ir.ClassDef):
                    yield from _nested_functions((child,), cls)
                elif isinstance(child, ir.Handler | ir.Case):
                    yield from _nested_functions(child.body, cls)
                elif _is_stmt(child):
                    yield from _nested_functions((child,), cls)  # type: ignore[arg-type]


def _is_stmt(node: object) -> bool:
    return isinstance(node, ir.If | ir.For | ir.While | ir.With | ir.Try | ir.Match)


def _class_and_module_scopes(
    module: ModuleInfo,
) -> Iterator[tuple[tuple[ir.Stmt, ...], ir.ClassDef | None]]:
    yield module.tree.body, None
    stack: list[ir.Stmt] = list(module.tree.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ir.ClassDef):
            yield stmt.body, stmt
            stack.extend(stmt.body)
        elif isinstance(stmt, ir.FunctionDef):
            continue
        else:
            for child in ir.children(stmt):
                if isinstance(child, ir.ClassDef | ir.FunctionDef) or _is_stmt(child):
                    stack.append(child)  # type: ignore[arg-type]
                elif isinstance(child, ir.Handler | ir.Case):
                    stack.extend(child.body)
            if isinstance(stmt, ir.If | ir.For | ir.While | ir.With | ir.Try):
                stack.extend(s for s in stmt.body if not isinstance(s, ir.FunctionDef))


def _own_attrs(node: ir.ClassDef) -> set[str]:
    """Attributes a class sets on ``self`` in its methods or declares in its body."""
    found: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, ir.Assign):
            found.update(t.id for t in stmt.targets if isinstance(t, ir.Name))
        elif isinstance(stmt, ir.Other) and stmt.kind == "annotation" and stmt.exprs:
            if isinstance(stmt.exprs[0], ir.Name):
                found.add(stmt.exprs[0].id)
        elif isinstance(stmt, ir.FunctionDef):
            found.add(stmt.name)
            for sub in _walk_stmts(ir.body_of(stmt)):
                if isinstance(sub, ir.Assign | ir.AugAssign):
                    targets = sub.targets if isinstance(sub, ir.Assign) else (sub.target,)
                    for t in targets:
                        for leaf in _target_leaves(t):
                            if isinstance(leaf, ir.Attribute) and _is_name(leaf.value, "self"):
                                found.add(leaf.attr)
    return found


def _target_leaves(target: ir.Expr) -> Iterator[ir.Expr]:
    if isinstance(target, ir.Seq):
        for e in target.elts:
            yield from _target_leaves(e)
    elif isinstance(target, ir.Starred):
        yield from _target_leaves(target.value)
    else:
        yield target


def _walk_stmts(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ir.FunctionDef | ir.ClassDef):
            continue
        for child in ir.children(stmt):
            if isinstance(child, ir.Handler | ir.Case):
                yield from _walk_stmts(child.body)
            elif _is_stmt(child) or isinstance(
                child, ir.Assign | ir.AugAssign | ir.ExprStmt | ir.Return | ir.Other
            ):
                yield from _walk_stmts((child,))  # type: ignore[arg-type]


def _returns(body: tuple[ir.Stmt, ...]) -> Iterator[ir.Return]:
    for stmt in _walk_stmts(body):
        if isinstance(stmt, ir.Return):
            yield stmt


_SELF_ATTR = re.compile(r"\bself\.(\w+)")
_ASSIGN = re.compile(r"(?<![=!<>])=(?!=)")


# ``setattr(self, "name", value)`` (also ``object.__setattr__``) assigns ``self.name``.
_SETATTR_SELF = re.compile(r"""setattr(?:__)?\(\s*self\s*,\s*["'](\w+)["']""")


def _assigned_attrs_text(lines: list[str], span: ir.Span) -> set[str]:
    """Attributes a function's text may assign on ``self``: every ``self.x`` left of an
    ``=`` on its line, and every ``setattr(self, "x", ...)`` (a superset: strings,
    comparisons in calls and all)."""
    found: set[str] = set()
    for line in lines[span.line - 1 : span.end_line]:
        if "self" not in line:
            continue
        m = _ASSIGN.search(line)
        if m is not None:
            found.update(_SELF_ATTR.findall(line, 0, m.start()))
        if "setattr" in line:
            found.update(_SETATTR_SELF.findall(line))
    return found


def _attrs_assigned_from(lines: list[str], span: ir.Span, words: set[str]) -> set[str]:
    """Attributes of ``self`` the text assigns on a line whose right side names a word."""
    found: set[str] = set()
    for line in lines[span.line - 1 : span.end_line]:
        if "self" not in line:
            continue
        m = _ASSIGN.search(line)
        right = "" if m is None else line[m.end() :]
        if m is not None and any(w in right and _holds_word(right, w) for w in words):
            found.update(_SELF_ATTR.findall(line, 0, m.start()))
        if "setattr" in line:
            for call in _SETATTR_SELF.finditer(line):
                after = line[call.end() :]
                if any(w in after and _holds_word(after, w) for w in words):
                    found.add(call.group(1))
    return found


_AFTER_DEF = re.compile(r"(?:^|[^\w])def$")


def _may_bind(text: str, name: str, def_only: bool = False) -> bool:
    """Does ``text`` hold ``name`` as a word after ``def``, or (unless ``def_only``) before
    ``=`` (an assignment, such as a ``partial``)? With the names its import statements list,
    a superset of the module-level functions, partials and imports that bind it."""
    at = text.find(name)
    while at != -1:
        end = at + len(name)
        if (at == 0 or not is_name_char(text[at - 1])) and (
            end == len(text) or not is_name_char(text[end])
        ):
            if _AFTER_DEF.search(text[max(0, at - 64) : at].rstrip(" \t")):
                return True
            after = text[end : end + 64].lstrip(" \t")
            if not def_only and after.startswith("=") and not after.startswith("=="):
                return True
        at = text.find(name, end)
    return False


_CALLED = re.compile(r"(\w+)\s*\(")


def _called_through(text: str, name: str) -> set[str]:
    """The names ``text`` calls as ``name.<attr>(...)``."""
    found: set[str] = set()
    needle = name + "."
    at = text.find(needle)
    while at != -1:
        end = at + len(needle)
        if at == 0 or not (is_name_char(text[at - 1]) or text[at - 1] == "."):
            m = _CALLED.match(text, end)
            if m is not None:
                found.add(m.group(1))
        at = text.find(needle, end)
    return found


def _mentions(lines: list[str], span: ir.Span, words: set[str]) -> bool:
    """Does the source text at ``span`` (whole lines) hold one of ``words`` as a word?"""
    text = "".join(lines[span.line - 1 : span.end_line])
    return any(w in text and _holds_word(text, w) for w in words)


def _holds_word(text: str, word: str) -> bool:
    """Does ``text`` hold ``word`` whole, not as part of a longer name? A name the flow
    follows (``model``) is used as itself: ``model_config`` does not use it. A word that
    ends in ``.`` (``Name.``) is followed by what it qualifies."""
    at = text.find(word)
    qualifies = not is_name_char(word[-1])
    while at != -1:
        end = at + len(word)
        if (at == 0 or not is_name_char(text[at - 1])) and (
            qualifies or end == len(text) or not is_name_char(text[end])
        ):
            return True
        at = text.find(word, at + 1)
    return False


def _gist(key: tuple, summary: object) -> object:
    """What the reader of ``key`` can learn from its value (two rounds agree when these do)."""
    if isinstance(summary, ScopeFlow) and key[0] == "returns":
        return tuple((r.taint.kind, r.index) for r in summary.returns) or None
    if isinstance(summary, ScopeFlow) and key[0] == "stored":
        return tuple(st.taint.kind for st in summary.stored if st.attr == key[2]) or None
    if isinstance(summary, ScopeFlow):
        gist = (
            tuple((r.taint.kind, r.index) for r in summary.returns),
            tuple((st.attr, st.taint.kind) for st in summary.stored),
            tuple(summary.sunk_params),
            summary.returns_list,
        )
        return gist if any(gist) else None  # a flow that found nothing reads as none
    if isinstance(summary, Summary):
        return (summary.kind, summary.index, len(summary.returns))
    return summary or None  # a request count: True, or nothing


def _passable(func: FunctionInfo) -> list[str]:
    names = func.names()
    return names[1:] if func.implicit_first else names


def _argument(call: ir.Call, func: FunctionInfo, param: str) -> ir.Expr | None:
    from cgguard.static.core.flow import call_argument

    return call_argument(call, func, param)


def _references(tree: ir.Module, names: set[str], lines: list[str]) -> list[ir.Expr]:
    """Every read of a Name or ``.attr`` spelling one of ``names`` (defs, targets excluded).

    A function whose text names none of them is not looked into."""
    out: list[ir.Expr] = []
    targets: set[int] = set()
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Import):
            continue
        if isinstance(node, ir.FunctionDef) and not _mentions(lines, node.span, names):
            continue
        if isinstance(node, ir.Assign):
            for t in node.targets:
                for leaf in _target_leaves(t):
                    targets.add(id(leaf))
        if id(node) not in targets and (
            (isinstance(node, ir.Attribute) and node.attr in names)
            or (isinstance(node, ir.Name) and node.id in names)
        ):
            out.append(node)
        stack.extend(ir.children(node))
    return out


def _spelled(ref: ir.Expr) -> str:
    if isinstance(ref, ir.Attribute):
        return ref.attr
    return ref.id if isinstance(ref, ir.Name) else ""


_ = (re, Returned, Taint)
