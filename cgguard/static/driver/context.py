"""What one run has read, kept for the run: the project roots found, where each project's
modules are, a program per project root (the core's modules, summaries and outlines), and
which of a project's imports may bring a count.

The run (:mod:`.run`) makes one :class:`RunContext` and hands it to every file's check, so a
module imported by many files is read, lowered and summarised once. Nothing is kept past it.
A project's :class:`~cgguard.static.core.program.Program` runs every selected configuration
over a file in one pass, each in its own lane: that configuration's analysis of the project
(:meth:`RunContext.analysis`), which the screens ask too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cgguard.static.core.modulefiles import ModuleFiles
from cgguard.static.driver import parallel
from cgguard.static.driver.prefilter import mentions_sink_word
from cgguard.static.driver.projectroot import ProjectRoots
from cgguard.static.rules.configs import CONFIGURATIONS, Configuration, selected

if TYPE_CHECKING:
    from cgguard.static.core.analysis import Analysis
    from cgguard.static.core.program import Program
    from cgguard.static.core.sinkreach import SinkReach
    from cgguard.static.driver.prescan import Prescan


class RunContext:
    """``is_selected``: whether the run reports a rule code (None: every rule); only the
    configurations with a selected code run (:func:`cgguard.static.rules.configs.selected`).
    ``fix_layout``: whether a fix longer than a line is laid out as ``ruff format`` would
    write it. Only a run that shows or writes a fix's text needs that (``fix``, and
    ``check`` in the formats that print the edits); the text and GitHub formats print
    whether a finding is fixable and its message, which the layout never changes."""

    def __init__(
        self, is_selected: Callable[[str], bool] | None = None, *, fix_layout: bool = True
    ) -> None:
        self.fix_layout = fix_layout
        self.configurations: Sequence[Configuration] = selected(is_selected)
        # Those that read a file without a sink word for flows other modules complete.
        self.importing = tuple(c for c in self.configurations if c.follows_imports)
        self.roots = ProjectRoots()
        self.paths: dict[str | None, ModuleFiles] = {}
        # (project root, configuration) -> its analysis, a lane of the project's program
        self.analyses: dict[tuple[str | None, str], Analysis] = {}
        # project root -> its program (one per run and project, every lane in it)
        self.programs: dict[str | None, Program] = {}
        # (project root, configuration, an import's (module, name)) -> whether it may bring a count
        self.lends: dict[tuple[str | None, str, tuple[str, str | None]], bool] = {}
        # (project root, the sources' names, a module's dotted name) -> whether its text names
        # one: asked once per module and configuration, not once per name imported from it
        self.sourced: dict[tuple[str | None, tuple[str, ...], str], bool] = {}
        # A module's path -> (its text, its intermediate form): each configuration's analysis
        # reads the form Python's parser gave once, not a parse of its own.
        self.lowered: dict[str, tuple[str, object]] = {}
        # (project root, configuration) -> a file's path -> whether its bytes on disk name a
        # sink word of it, as the byte screen found: the project's modules that name one
        # (:meth:`.SinkReach.sink_modules`) are not read again for it.
        self.sink_named: dict[tuple[str, str], dict[str, bool]] = {}
        # A helper process listing those modules ahead of the run (:meth:`list_ahead`).
        self.prescan: Prescan | None = None

    def list_ahead(self, paths: Sequence[str]) -> None:
        """Have a helper process list the modules naming a sink word of the project the
        run checks, while this process finds its files (:mod:`.prescan`). Only where a
        configuration that follows imports is selected and the run's one path (as given)
        is a project's root folder (a fork's checkout, checked or fixed whole): the helper then
        reads the files the run's own screen reads, from which the project's sink callees
        are worked out. A run over part of a project (a folder of a monorepo, a plugin
        inside another project, pre-commit's few files) does not read all of it ahead, on
        a core the run may want."""
        if not self.importing or len(paths) != 1 or not os.path.isdir(paths[0]):
            return
        folder = os.path.abspath(paths[0])
        if self.roots.of(folder) != folder:
            return
        from cgguard.static.driver import prescan

        self.prescan = prescan.start(folder, self.importing)

    def close(self) -> None:
        """The run is over: a helper still listing is stopped."""
        if self.prescan is not None:
            self.prescan.close()
            self.prescan = None

    def program(self, root: str | None) -> Program:
        """The program of the project at ``root``: a lane per configuration the run
        selected, each that configuration's :meth:`analysis` (of no project where it
        follows no flow across modules)."""
        found = self.programs.get(root)
        if found is None:
            from cgguard.static.core.program import Program

            by_name = {c.name: c for c in self.configurations}

            def lane(name: str) -> Analysis:
                configuration = by_name[name]
                return self.analysis(root if configuration.follows_imports else None, configuration)

            found = self.programs[root] = Program(root, lane)
        return found

    def analysis(self, root: str | None, configuration: Configuration | None = None) -> Analysis:
        """The analysis of ``configuration`` (the run's first where None) for a project root."""
        configuration = configuration or (*self.configurations, *CONFIGURATIONS)[0]
        found = self.analyses.get((root, configuration.name))
        if found is None:
            from cgguard.static.core.analysis import Analysis

            found = Analysis(
                configuration.model(),
                root,
                lower=self._lower,
                paths=self.module_files(root),
                derive_when_asked=lambda: self._derives_here(root, configuration),
            )
            self.analyses[root, configuration.name] = found
            if root is not None and configuration.follows_imports:
                self.sink_reach(root, configuration)
        return found

    def _lower(self, text: str, path: str):
        """The intermediate form of ``text`` (the module at ``path``), lowered once per run."""
        key = os.path.abspath(path)
        kept = self.lowered.get(key)
        if kept is not None and kept[0] == text:
            return kept[1]
        from cgguard.static.core import pyast

        tree = pyast.parse(text, path, lazy=True)
        self.lowered[key] = (text, tree)
        return tree

    def forget(self, path: str, text: str | None = None) -> None:
        """The file at ``path`` changed, or was checked as a fixed text that is not on disk:
        what the run read of it, and every summary, is read again from the file as it is.
        ``text``: the file's text as it is now on disk (a fix written), where known: its
        intermediate form, when the run lowered that very text (the fixed text's check),
        is kept. The form depends on the text alone (:meth:`_lower` asks for the same
        text), so the next module to read the file lowers it no more; what was read
        through it (summaries, classes) is still read again."""
        root = self.roots.of_file(path) if path else None
        self.close()  # a helper's list read the files before this change
        for (at, _), analysis in self.analyses.items():
            if at == root:
                analysis.forget_file(path)
        self.lends = {k: v for k, v in self.lends.items() if k[0] != root}
        self.sourced = {k: v for k, v in self.sourced.items() if k[0] != root}
        key = os.path.abspath(path)
        kept = self.lowered.get(key)
        if text is None or kept is None or kept[0] != text:
            self.lowered.pop(key, None)
        for named in self.sink_named.values():
            named.pop(key, None)

    def module_files(self, root: str | None) -> ModuleFiles:
        found = self.paths.get(root)
        if found is None:
            found = self.paths[root] = ModuleFiles(root)
        return found

    def names_a_sink(
        self, data: bytes, path: str, root: str | None, configuration: Configuration
    ) -> bool:
        """Do the bytes of the file at ``path`` (as on disk: the byte screen's) name a sink
        word of ``configuration``? Kept for the project's modules that name one."""
        named = configuration.mentions_sink_word(data)
        if root is not None and configuration.follows_imports:
            kept = self.sink_named.setdefault((root, configuration.name), {})
            kept[os.path.abspath(path)] = named
        return named

    def may_reach_a_sink(
        self,
        data: bytes | str,
        path: str,
        configuration: Configuration | None = None,
        *,
        screening: bool = False,
    ) -> bool:
        """Can the code of a file that names a source take it to a sink (of
        ``configuration``; of any the run selected where None)? Every sink of a
        configuration names one of its sink words. Without one, only another module of
        its project can complete a flow (:mod:`cgguard.static.core.sinkreach`): a function
        the file calls whose parameter reaches a sink (a *sink callee*), or a module that
        imports the file and names a sink word or a sink callee (the finding lands at the
        file's helper's return). A file outside any project, one that no module can import
        (its path is no module name) and that imports none of the project's modules, and
        one that names no sink callee and that no such module imports have no finding to
        give, so they are not parsed. ``screening``: the bytes are the file's on disk, read
        by the byte screen of a run that may put the file after its others
        (:class:`.parallel.Deferred`), once the screen has told which of the project's
        modules name a sink word."""
        chosen = self.configurations if configuration is None else (configuration,)
        root = self.roots.of_file(path) if path else None
        if isinstance(data, bytes) and screening:
            if any(self.names_a_sink(data, path, root, c) for c in chosen):
                # The parent parses every module naming a sink word to work the sink
                # callees out, so its check reads a form it has: until they have come, the
                # child leaves such a file to it (vLLM's ``arg_utils.py``: 25 ms).
                if self._awaits_parent(root, chosen):
                    raise parallel.ParentOnly
                return True
        elif mentions_sink_word(data, chosen):
            return True
        if not any(c.follows_imports for c in chosen):
            return False  # no other module can complete a flow for these
        if root is None:
            return False
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        files = self.module_files(root)
        dotted = files.dotted_of(os.path.abspath(path))
        if dotted is None and not files.may_import(raw, path):
            return False  # no module imports it, and it calls none of the project's
        reaches = [self.sink_reach(root, c) for c in chosen if c.follows_imports]
        if not all(reach.derived for reach in reaches):
            # What the project's modules say (the modules naming a sink word, what they
            # import, the sink callees) is worked out once, by the parent of a shared run,
            # which sends it to the forked child. The parent's walks need it too: without
            # it they walk a module that imports from its project whole (the runner).
            if self._awaits_parent(root, chosen):
                raise parallel.Awaited
            # Worked out after the screen of the process's other files, which tells which
            # modules name a sink word: they are not read again for it.
            if screening and parallel.deferring():
                raise parallel.Deferred
        return any(reach.may_complete(raw, path, dotted) for reach in reaches)

    def sink_reach(self, root: str, configuration: Configuration) -> SinkReach:
        """What the project's modules say for ``configuration`` (:mod:`.sinkreach`)."""
        key = (root, configuration.name)
        return self.analysis(root, configuration).sink_reach(
            configuration.sink_words,
            configuration.mentions_sink_word,
            self.sink_named.setdefault(key, {}),
            lambda reach: parallel.publish(key, reach.facts()),
            lambda: None if self.prescan is None else self.prescan.take(root, configuration.name),
        )

    def _awaits_parent(self, root: str | None, chosen: Sequence[Configuration]) -> bool:
        """Is this the forked child of a shared run, and have the parent's sink callees
        of the project at ``root``, for one of ``chosen`` that follows imports, not come
        yet (:meth:`_derives_here`)?"""
        return (
            parallel.in_child()
            and root is not None
            and any(c.follows_imports and not self._derives_here(root, c) for c in chosen)
        )

    def _derives_here(self, root: str | None, configuration: Configuration) -> bool:
        """May this process have the sink callees of the project at ``root`` now, without
        walking a module whole? Yes in a process that works them out (the parent of a
        shared run), and in the forked child once the parent has sent them (taken here)."""
        if root is None or not configuration.follows_imports:
            return False
        if parallel.shares_as_parent():
            return True
        if not parallel.in_child():
            return False
        reach = self.sink_reach(root, configuration)
        if not reach.derived:
            facts = parallel.published((root, configuration.name))
            if facts is None:
                return False
            reach.adopt(facts)  # type: ignore[arg-type]  # what the parent's facts() sent
        return True

    def takes_a_count(
        self,
        text: str,
        path: str,
        root: str | None,
        configuration: Configuration | None = None,
    ) -> bool:
        """Can a flow from a source reach code of ``text`` (a module of the project at
        ``root`` that names no source)? Only through a name it imports from a module naming
        a source (a helper returning a count, a class whose members carry one) or a member
        of a base class that such a module defines: before the core walks a parsed module,
        it collects those names (``Lending.imported_words``), and a scope holding none of
        them, nor a source, is not walked. They are asked here of the file's outline
        instead (its import statements and class headers, read from its text:
        :mod:`cgguard.static.core.outlines`). Where the text, its import statements left
        out, holds none of them, the module cannot hold a finding, and it is not parsed.
        The modules asked about are those a flow from a source reads anyway.
        ``configuration``: whose sources (any the run selected where None)."""
        if root is None:
            return False
        if configuration is None:
            return any(self.takes_a_count(text, path, root, c) for c in self.importing)
        if not configuration.follows_imports:
            return False
        from cgguard.static.core.outlines import holds_word

        analysis = self.analysis(root, configuration)
        key = os.path.abspath(path)
        outline = analysis.outlines.of_text(key, text)
        code = outline.code or ""
        # Every name an import brings is spelled with the name it binds (``helper``,
        # ``module.helper``, ``Klass(``): an import whose name the code never uses brings
        # none. Each binding is asked on its own: a name two imports bind (one in a
        # function, one in ``try`` and its ``except``) is asked about both.
        for local, specs in outline.imports.items():
            for spec in dict.fromkeys(specs):
                if self._may_lend(analysis, configuration, spec) and holds_word(code, local):
                    words = analysis.outline_words(key, text, {local: spec})
                    if any(holds_word(code, w) for w in words):
                        return True
        if not any(outline.classes.values()):
            return False  # no class with a base: none to take a member from
        return any(holds_word(code, w) for w in analysis.outline_words(key, text))

    def _may_lend(
        self, analysis: Analysis, configuration: Configuration, spec: tuple[str, str | None]
    ) -> bool:
        """Can an import of ``spec`` bring a count: does its module, or the module it
        imports from a package, name a source (the core's own question, on their text)?"""
        key = (analysis.root, configuration.name, spec)
        found = self.lends.get(key)
        if found is None:
            module, attr = spec
            found = self._names_a_source(analysis, module)
            if not found and attr is not None:
                file = analysis.module_file(module)
                if file is None or file.endswith("__init__.py"):  # a package's module
                    found = self._names_a_source(analysis, f"{module}.{attr}")
            self.lends[key] = found
        return found

    def _names_a_source(self, analysis: Analysis, module: str) -> bool:
        key = (analysis.root, analysis.source_words, module)
        found = self.sourced.get(key)
        if found is None:
            found = self.sourced[key] = analysis.may_name_a_source(module)
        return found
