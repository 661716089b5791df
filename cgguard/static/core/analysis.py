"""One configuration's reading of a project: a lane of the run's :class:`~.program.Program`.

An :class:`Analysis` puts together, for one model and one project, the parts that answer what
calls do, each holding its own state for the run and handed the parts it asks explicitly:

- :mod:`.project`: the modules, read, lowered and indexed the first time a flow needs one
  (the file checked, a module an import names, a base class's module), and what a module's
  text alone says (:mod:`.words`, :mod:`.outlines`);
- :mod:`.classes` and :mod:`.calls`: a class's bases, methods and members, resolved through
  imports and aliases across the project's modules, and what a call calls: module functions,
  methods through the class hierarchy (``self.m()``, ``cls.m()``, ``super().m()``,
  ``Klass.m()``), static and class methods, ``functools.partial`` of a helper, functions
  imported from the project;
- :mod:`.summaries`: per function, on demand, what its return carries, which parameters reach
  its return, a sink, or an attribute of ``self``; per class member, what its setters store,
  each a flow (:mod:`.flow`) that asks :mod:`.scope` for its calls, and
  :mod:`.fixpoint`: a summary read while it is computed (recursion) reads a guess, and the
  readers of a wrong guess are computed again, to a fixpoint;
- :mod:`.hits`: what it asks to find a module's hits, walking only the scopes whose text
  holds a word that can carry a count (a source's name, or one another module lends:
  :mod:`.lending`), placed at a helper's return or its call sites (:mod:`.placement`);
  :mod:`.modulepass` walks them, for this lane alone or beside the others.

Everything read is kept on the :class:`Analysis`'s parts for the run, and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from cgguard.static.core import ir, modulepass
from cgguard.static.core.calls import Calls
from cgguard.static.core.classes import Classes
from cgguard.static.core.fixpoint import Fixpoint, FunctionFacts
from cgguard.static.core.flow import Hit
from cgguard.static.core.hits import ModuleHits
from cgguard.static.core.lending import Lending
from cgguard.static.core.modulefiles import ModuleFiles
from cgguard.static.core.outlines import Outlines
from cgguard.static.core.patterns import Model
from cgguard.static.core.placement import Placement
from cgguard.static.core.project import ModuleInfo, ProjectIndex
from cgguard.static.core.sinkreach import SinkReach
from cgguard.static.core.summaries import Summaries


class Analysis:
    """One model's reading of a project: modules, classes, functions and their summaries."""

    def __init__(
        self,
        model: Model,
        root: str | None = None,
        read: Callable[[str], str | None] | None = None,
        lower: Callable[[str, str], ir.Module] | None = None,
        paths: ModuleFiles | None = None,
        derive_when_asked: Callable[[], bool] = lambda: False,
    ):
        self.model = model
        # Whether a walk that needs the sink callees works them out now (where
        # :meth:`sink_reach` was asked for), rather than walking the module whole.
        self.derive_when_asked = derive_when_asked
        self.index = ProjectIndex(model, root, read, lower, paths)
        self.classes = Classes(model, self.index)
        self.calls = Calls(self.index, self.classes)
        self.fixpoint = Fixpoint()
        self.summaries = Summaries(model, self.index, self.classes, self.calls, self.fixpoint)
        self.lending = Lending(self.index, self.classes, self.calls, self.summaries)
        placement = Placement(self.index, self.calls, self.summaries)
        self._sink_reach: SinkReach | None = None
        self.module_hits = ModuleHits(
            model, self.summaries, self.lending, placement, self._derived_sink_callees
        )

    # What the driver and the tests read of the run.

    @property
    def root(self) -> str | None:
        return self.index.root

    @property
    def source_words(self) -> tuple[str, ...]:
        return self.index.source_words

    @property
    def modules(self) -> dict[str, ModuleInfo | None]:
        return self.index.modules

    @property
    def texts(self) -> dict[str, str]:
        return self.index.texts

    @property
    def outlines(self) -> Outlines:
        return self.index.outlines

    @property
    def facts(self) -> dict[int, FunctionFacts]:
        return self.fixpoint.facts

    def forget_file(self, path: str) -> None:
        """The file at ``path`` changed (a fix): its module is read again when asked for, and
        every summary (any may have read it) and every class's resolved bases and members are
        worked out again. The other modules' trees are kept: their text is the same."""
        self.index.forget(os.path.abspath(path))
        self.classes.forget()
        self.fixpoint.forget()
        # The sink callees are kept: a fix bounds a count, adding no sink word, import or
        # parameter that reaches a sink, so what was found still holds every one (a callee
        # whose parameter a fix bounded stays one: a file naming it is parsed, no more).

    def add(self, path: str, text: str, tree: ir.Module | None = None) -> ModuleInfo:
        """The module of ``text`` (the file checked), lowered unless ``tree`` is given."""
        index = self.index
        key = os.path.abspath(path)
        found = index.modules.get(key)
        if found is not None and index.texts.get(key) == text and tree is None:
            return found
        if found is not None:
            self.forget_file(key)  # the file changed (a fix): what was read from it is stale
        index.texts[key] = text
        info = index.index_module(key, tree if tree is not None else index.lower(text, path))
        index.modules[key] = info
        return info

    def module_at(self, path: str) -> ModuleInfo | None:
        return self.index.module_at(path)

    def module_file(self, name: str) -> str | None:
        return self.index.module_file(name)

    def may_name_a_source(self, name: str) -> bool:
        """Does the project module ``name`` name a source (its text alone)?"""
        return self.index.may_name_a_source(name)

    def may_bind_function(self, module_name: str, name: str, def_only: bool = False) -> bool:
        """Can the project module ``module_name`` bind ``name`` to a function (its text)?"""
        return self.index.may_bind_function(module_name, name, def_only)

    def outline_words(
        self, path: str, text: str, imports: dict[str, tuple[str, str | None]] | None = None
    ) -> set[str]:
        """What another module lends the module at ``path``, found without parsing it
        (:meth:`.lending.Lending.outline_words`)."""
        return self.lending.outline_words(path, text, imports)

    def sink_reach(
        self,
        sink_words: tuple[str, ...],
        names_a_sink: Callable[[bytes], bool],
        known: Mapping[str, bool] | None = None,
        on_derived: Callable[[SinkReach], None] | None = None,
        listed: Callable[[], list[str] | None] | None = None,
    ) -> SinkReach:
        """The project's sink callees and the modules naming them (:mod:`.sinkreach`), for
        the model's sink words (``names_a_sink``: does a text name one; ``known``: what
        the caller found of its files' texts already, by path; ``on_derived``: told once
        they are worked out; ``listed``: the modules naming a sink word, where another
        process listed them)."""
        if self._sink_reach is None:
            self._sink_reach = SinkReach(
                self.index,
                self.summaries,
                self.fixpoint,
                sink_words,
                names_a_sink,
                known,
                on_derived,
                listed,
            )
        return self._sink_reach

    def _derived_sink_callees(self) -> frozenset[str] | None:
        """The sink callees, where :meth:`sink_reach` has worked them out already."""
        reach = self._sink_reach
        if reach is None or not (reach.derived or self.derive_when_asked()):
            return None
        return reach.callees()

    def lines_at(self, path: str) -> list[str]:
        """The physical lines of a module the run has read."""
        return self.index.lines_at(path)

    def hits(self, module: ModuleInfo) -> list[Hit]:
        """Every hit in ``module``'s own code for this lane alone
        (:func:`.modulepass.settled_hits`), its rounds settled to a fixpoint of the
        summaries they read."""
        return self.fixpoint.settle(lambda: self._hits_once(module))

    def _hits_once(self, module: ModuleInfo) -> list[Hit]:
        """One round of :meth:`hits`."""
        return modulepass.once([(self.module_hits, module)])[0]

    def landing_hits(self, module: ModuleInfo) -> list[Hit]:
        """Hits that land in ``module`` from the project's other modules (at the return of a
        helper of it that every importer takes as a block count)."""
        return modulepass.landing_hits(self.module_hits, module)
