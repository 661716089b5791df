"""A module's hits: its scopes walked where their text holds a word that can carry a count
(a source's name, or one another module lends: :mod:`.lending`), the hits placed
(:mod:`.placement`), marked where a flow tests the source for None, and settled to a fixpoint
of the summaries they read (:class:`~.fixpoint.Fixpoint`). Also the hits that land in a
module from the project's modules that import its helpers."""

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
    class_and_module_scopes,
    functions_inside,
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

    def hits(self, module: ModuleInfo) -> list[Hit]:
        """Every hit in ``module``'s own code, helpers' counts followed to their callers.

        Only scopes whose text names a source, or a member found to carry one, are walked:
        the rest cannot hold a hit (what they call is summarised when a walk asks). Where a
        summary was read while it was computed (recursion) and turned out otherwise, the
        summaries are computed again with the last round's as guesses, until they settle.
        """
        return self.fixpoint.settle(lambda: self.once(module))

    def once(self, module: ModuleInfo) -> list[Hit]:
        if not self._may_hit(module):
            return []
        lines = self.index.lines(module)
        words = set(self.index.source_words) | self.lending.imported_words(module)
        funcs = list(all_functions(module))
        flows: list[tuple[ScopeFlow, FunctionInfo | None]] = []
        done: set[int] = set()
        for _ in range(64):
            todo = [
                f for f in funcs if id(f.node) not in done and mentions(lines, f.node.span, words)
            ]
            if not todo:
                break
            for func in todo:
                done.add(id(func.node))
                funcs.extend(functions_inside(func, lines))
                flow = self.summaries.function_flow(func, walk=True)
                if flow is None:
                    continue
                flows.append((flow, func))
                if flow.returns or flow.returns_list:
                    words.add(func.name)
                words.update(st.attr for st in flow.stored if st.attr)
                words.update(flow.stored_lists)
        for scope, cls in class_and_module_scopes(module):
            # The scope's own statements: its functions and classes are scopes of their own.
            stmts = tuple(st for st in scope if not isinstance(st, ir.FunctionDef | ir.ClassDef))
            if not any(mentions(lines, st.span, words) for st in stmts):
                continue
            flow = ScopeFlow(
                self.model,
                None,
                (),
                ScopeResolver(self.summaries, module, self._class_info(module, cls)),
                function=False,
            )
            flow.run(stmts)
            flows.append((flow, None))
        return self._none_tested(self.placement.place(module, flows), flows)

    def _may_hit(self, module: ModuleInfo) -> bool:
        """Can a walk of the module find a hit? A hit is made where a
        count reaches a sink, and every sink names a sink word of the model where it is
        reached (a stored or compared name, a callee whose parameter is a sink), or where
        a call hands a count to a function of the module one of whose parameters reaches
        one: the call names that function (or a name bound to it at the module's or a
        class's top level). So only the scopes whose text names such a word can make a
        hit: they are walked first, each as the full walk walks it (the flows are the
        same, and kept for it), and where none makes one the module has none. A
        function called by other means than its name (``__call__``, ``__setitem__``)
        names no word at its call: where one names a word, every scope may hit.

        A module that imports from its project can hand a count to a function of another
        module (imported, inherited, a method of an object it holds): the project's sink
        callees are those (:mod:`.sinkreach`), and a name an import binds to one. Where
        they are not worked out yet, every scope may hit."""
        imported = self._project_imports(module)
        callees: frozenset[str] = frozenset()
        if imported:
            known = self.sink_callees()
            if known is None:
                return True
            callees = known
        lines = self.index.lines(module)
        words = self._sink_reaching_words(module, lines, callees)
        if words is None:
            return True
        # ``from m import callee as name``: the module calls it by that name.
        words |= {local for local, attr in imported if attr is not None and attr in callees}
        for func in all_functions(module):
            if mentions(lines, func.node.span, words):
                flow = self.summaries.function_flow(func, walk=True)
                if flow is not None and flow.hits:
                    return True
        for scope, cls in class_and_module_scopes(module):
            stmts = tuple(st for st in scope if not isinstance(st, ir.FunctionDef | ir.ClassDef))
            if not any(mentions(lines, st.span, words) for st in stmts):
                continue
            flow = ScopeFlow(
                self.model,
                None,
                (),
                ScopeResolver(self.summaries, module, self._class_info(module, cls)),
                function=False,
            )
            flow.run(stmts)
            if flow.hits:
                return True
        return False

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
        for facts in self.fixpoint.facts.values():
            if facts.flow is not None:
                tested |= facts.flow.none_tested

        def marked(hit: Hit) -> bool:
            if id(hit.source) in tested:
                return True
            return hit.path is None and source_name(hit.source) in names

        return [replace(h, none_tested=True) if marked(h) else h for h in hits]

    def landing_hits(self, module: ModuleInfo) -> list[Hit]:
        """Hits that land in ``module`` from the project's other modules: at the return of a
        helper of it that every importer takes as a block count."""
        names = set()
        for func in module.functions.values():
            if not mentions(self.index.lines(module), func.node.span, set(self.index.source_words)):
                continue
            summary = self.summaries.summary(func)
            if summary is not None:
                names.add(func.name)
        if not names or self.index.root is None or module.dotted is None:
            return []
        found: list[Hit] = []
        leaf = module.dotted.rsplit(".", 1)[-1]
        # Asked of each file's bytes: a UTF-8 text holds a word exactly where its bytes hold
        # the word's, and most files are never decoded.
        helpers = [n.encode() for n in sorted(names)]
        for path in self.index.project_files():
            if path == module.path:
                continue
            data = self.index.read_bytes(path)
            if data is None or b"import" not in data or leaf.encode() not in data:
                continue
            if not any(n in data for n in helpers):
                continue
            other = self.index.module_at(path)
            if other is not None:
                found += [h for h in self.hits(other) if h.path == module.path]
        return found

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
