"""What one lane (one model's reading of a project) asks to find a module's hits: the words
a scope must name to make a hit, a flow of a class's or the module's own statements, and
the hits marked where a flow tests the source for None. :mod:`.modulepass` walks the
scopes, for every lane side by side, places the hits (:mod:`.placement`) and settles them
to a fixpoint of the summaries they read (:class:`~.fixpoint.Fixpoint`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from cgguard.static.core import ir
from cgguard.static.core.flow import FunctionInfo, Hit, ScopeFlow, source_name
from cgguard.static.core.lending import Lending
from cgguard.static.core.patterns import Model, walk
from cgguard.static.core.placement import Placement
from cgguard.static.core.project import ClassInfo, ModuleInfo
from cgguard.static.core.scope import ScopeResolver
from cgguard.static.core.summaries import Summaries
from cgguard.static.core.walks import (
    all_functions,
    block_stmts,
)
from cgguard.static.core.words import mentions


class ModuleHits:
    """Finds the hits of the modules of one project, for one model."""

    def __init__(
        self,
        model: Model,
        summaries: Summaries,
        lending: Lending,
        placement: Placement,
        sink_callees: Callable[[], frozenset[str] | None] = lambda: None,
    ):
        self.model, self.summaries = model, summaries
        self.index, self.fixpoint = summaries.index, summaries.fixpoint
        self.lending, self.placement = lending, placement
        # The project's functions one of whose parameters reaches a sink, by name, where
        # worked out already (:mod:`.sinkreach`); None where not.
        self.sink_callees = sink_callees

    def hit_words(self, module: ModuleInfo) -> set[str] | None:
        """The words a scope of the module must name to make a hit; None where any scope
        may make one. A hit is made where a count reaches a sink, and every sink names a
        sink word of the model where it is reached (a stored or compared name, a callee
        whose parameter is a sink), or where a call hands a count to a function of the
        module one of whose parameters reaches one: the call names that function (or a
        name bound to it at the module's or a class's top level). So only the scopes whose
        text names such a word can make a hit (:func:`.modulepass.once` walks them first,
        and where none makes one the module has none). A function called by other means
        than its name (``__call__``, ``__setitem__``) names no word at its call: where one
        names a word, every scope may hit.

        A module that imports from its project can hand a count to a function of another
        module (imported, inherited, a method of an object it holds): the project's sink
        callees are those (:mod:`.sinkreach`), and a name an import binds to one. Where
        they are not worked out yet, every scope may hit."""
        imported = self._project_imports(module)
        callees: frozenset[str] = frozenset()
        if imported:
            known = self.sink_callees()
            if known is None:
                return None
            callees = known
        lines = self.index.lines(module)
        words = self._sink_reaching_words(module, lines, callees)
        if words is None:
            return None
        # ``from m import callee as name``: the module calls it by that name.
        words |= {local for local, attr in imported if attr is not None and attr in callees}
        return words

    def scope_flow(self, module: ModuleInfo, cls: ir.ClassDef | None) -> ScopeFlow:
        """A flow of the module's or one of its classes' own statements, not walked yet."""
        return ScopeFlow(
            self.model,
            None,
            (),
            ScopeResolver(self.summaries, module, self._class_info(module, cls)),
            function=False,
        )

    def _project_imports(self, module: ModuleInfo) -> list[tuple[str, str | None]]:
        """The names the module's import statements (at any depth: its outline's) bind from
        its project's modules, with the name each imports (None: a module, ``*``)."""
        if self.index.root is None:
            return []
        outline = self.index.outlines.of_text(module.path, self.index.texts.get(module.path, ""))
        found = [
            (local, attr)
            for local, specs in outline.imports.items()
            for name, attr in specs
            if self.index.module_file(name) is not None
            or (attr is not None and self.index.module_file(f"{name}.{attr}") is not None)
        ]
        found += [("*", None) for star in outline.stars if self.index.module_file(star)]
        return found

    def _sink_reaching_words(
        self, module: ModuleInfo, lines: list[str], callees: frozenset[str]
    ) -> set[str] | None:
        """The model's sink words and the project's ``callees``, and the names of the
        module's functions whose text names one of them, to a fixpoint (a constructor's
        class too, and ``super``), and the names its top-level bindings naming one bind;
        None where a function called by other means than its name names one."""
        words = set(self.model.sink_words) | callees
        funcs = list(all_functions(module))
        while True:
            new: set[str] = set()
            for func in funcs:
                if func.name in words or not mentions(lines, func.node.span, words):
                    continue
                if func.name.startswith("__") and func.name.endswith("__"):
                    if func.name not in _CONSTRUCTORS:
                        return None
                    if func.cls is not None:
                        # ``Klass(n)``, and a subclass's ``super().__init__(n)``
                        new.update((func.cls.name, "super"))
                    continue
                new.add(func.name)
            for stmt in _top_level_statements(module):
                if not mentions(lines, stmt.span, words):
                    continue
                if isinstance(stmt, ir.Assign | ir.AugAssign):
                    targets = stmt.targets if isinstance(stmt, ir.Assign) else (stmt.target,)
                    new.update(_names_in(targets))
                elif not isinstance(stmt, ir.ExprStmt | ir.Return | ir.Import):
                    return None  # a binding of another form (``for``, ``with``): not read
            new -= words
            if not new:
                return words
            words |= new

    def none_tested(
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
        for facts in self.fixpoint.facts.values():
            if facts.flow is not None:
                tested |= facts.flow.none_tested

        def marked(hit: Hit) -> bool:
            if id(hit.source) in tested:
                return True
            return hit.path is None and source_name(hit.source) in names

        return [replace(h, none_tested=True) if marked(h) else h for h in hits]

    def _class_info(self, module: ModuleInfo, node: ir.ClassDef | None) -> ClassInfo | None:
        if node is None:
            return None
        return next((c for c in module.classes.values() if c.node is node), None)


# A class's own methods its name calls: ``Klass(n)`` runs them.
_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__"})


def _top_level_statements(module: ModuleInfo) -> Iterator[ir.Stmt]:
    """The statements of the module's and its classes' top level (classes at any depth),
    looking into ``if``/``try`` blocks; no function's, no class's own header."""
    stack: list[ir.Stmt] = list(block_stmts(module.tree.body))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ir.ClassDef):
            stack.extend(block_stmts(stmt.body))
        elif not isinstance(stmt, ir.FunctionDef | ir.If | ir.Try):
            yield stmt


def _names_in(targets: tuple[ir.Expr, ...]) -> set[str]:
    """Every name and attribute name in assignment targets (``a.b, c = ...``: b, c, a)."""
    names: set[str] = set()
    for target in targets:
        for node in walk(target):
            if isinstance(node, ir.Name):
                names.add(node.id)
            elif isinstance(node, ir.Attribute):
                names.add(node.attr)
    return names
