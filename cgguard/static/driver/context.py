"""What one run has read, kept for the run: the project roots found, where each project's
modules are, a program per project root (the core's modules and summaries), and which of a
project's modules name a source.

The run (:mod:`.run`) makes one :class:`RunContext` and hands it to every file's check, so a
module imported by many files is read, lowered and summarised once. Nothing is kept past it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cgguard.static.core.modulefiles import ModuleFiles, import_names, import_statements
from cgguard.static.driver.prefilter import names_a_source
from cgguard.static.driver.projectroot import ProjectRoots
from cgguard.static.rules.model import mentions_sink_word

if TYPE_CHECKING:
    from cgguard.static.core.program import Program

# The modules a text may import are read from its text (a prefilter: an import inside a
# string only costs a parse, and the core decides).

# How many imports away a source may be for a file without one to be read.
MAX_IMPORT_DEPTH = 3


class RunContext:
    def __init__(self) -> None:
        self.roots = ProjectRoots()
        self.paths: dict[str | None, ModuleFiles] = {}
        self.programs: dict[str | None, Program] = {}
        self.sourced: dict[str, bool] = {}

    def program(self, root: str | None) -> Program:
        found = self.programs.get(root)
        if found is None:
            from cgguard.static.core.program import Program
            from cgguard.static.rules.model import model

            found = self.programs[root] = Program(model(), root, paths=self.module_files(root))
        return found

    def module_files(self, root: str | None) -> ModuleFiles:
        found = self.paths.get(root)
        if found is None:
            found = self.paths[root] = ModuleFiles(root)
        return found

    def may_reach_a_sink(self, data: bytes | str, path: str) -> bool:
        """Can the code of a file that names a source take it to a sink? Every sink of the
        model names a sink word (:func:`.model.mentions_sink_word`). Without one, only
        another module of its project can complete a flow: a helper the file imports (it
        allocates), or a module that imports a helper of the file (the finding lands at the
        helper's return). A file outside any project, or one no module can import (its
        path is no module name) whose bytes import none of the project's modules, has no
        finding to give, so it is not parsed."""
        if mentions_sink_word(data):
            return True
        root = self.roots.of_file(path) if path else None
        if root is None:
            return False
        files = self.module_files(root)
        if files.dotted_of(os.path.abspath(path)) is not None:
            return True
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        return files.may_import(raw, path)

    def imports_a_source(self, text: str, path: str, root: str | None, depth: int = 0) -> bool:
        """Does ``text`` import a module of its project whose text names a source, or
        imports one that does (a base class two modules up)?"""
        if root is None or depth > MAX_IMPORT_DEPTH:
            return False
        paths = self.module_files(root)
        tops = paths.tops()
        package = paths.dotted_of(os.path.abspath(path)) or ""
        for module, rest in import_statements(text, package, path.endswith("__init__.py")):
            for name in [module] if module is not None else import_names(rest):
                if name.split(".", 1)[0] not in tops:
                    continue  # the standard library, a dependency: no module of the project
                file = paths.module_file(name)
                if file is not None and self._leads_to_a_source(file, root, depth):
                    return True
                # ``from package import module``: a package's, or a namespace package's
                # (a folder without ``__init__.py``, which has no file of its own).
                if module is not None and (file is None or file.endswith("__init__.py")):
                    for sub_name in import_names(rest):
                        if not sub_name.isidentifier():
                            continue
                        sub = paths.module_file(f"{module}.{sub_name}")
                        if sub is not None and self._leads_to_a_source(sub, root, depth):
                            return True
        return False

    def _leads_to_a_source(self, file: str, root: str, depth: int) -> bool:
        if file not in self.sourced:
            self.sourced[file] = False  # while it is read: an import cycle leads nowhere
            try:
                with open(file, "rb") as fh:
                    data = fh.read()
            except OSError:
                data = b""
            found = names_a_source(data)
            if not found and b"import" in data:
                text = data.decode("utf-8", errors="replace")
                found = self.imports_a_source(text, file, root, depth + 1)
            self.sourced[file] = found
        return self.sourced[file]
