"""What one run has read, kept for the run: a program per project root (the core's modules and
summaries), and which of a project's modules name a source.

The run (:mod:`.run`) makes one :class:`RunContext` and hands it to every file's check, so a
module imported by many files is read, lowered and summarised once. Nothing is kept past it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cgguard.static.core.program import Program

# ``from a.b import c, d`` / ``import a.b``: the modules a text may import (a byte-level
# prefilter: an import inside a string only costs a parse, the core decides).
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*\(?([\w \t,\\\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w., \t]+)", re.M)


# How many imports away a source may be for a file without one to be read.
MAX_IMPORT_DEPTH = 3


class RunContext:
    def __init__(self) -> None:
        self.programs: dict[str | None, Program] = {}
        self.sourced: dict[str, bool] = {}

    def program(self, root: str | None) -> Program:
        found = self.programs.get(root)
        if found is None:
            from cgguard.static.core.program import Program
            from cgguard.static.rules.model import model

            found = self.programs[root] = Program(model(), root)
        return found

    def imports_a_source(self, text: str, path: str, root: str | None, depth: int = 0) -> bool:
        """Does ``text`` import a module of its project whose text names a source, or
        imports one that does (a base class two modules up)?"""
        if root is None or depth > MAX_IMPORT_DEPTH:
            return False
        program = self.program(root)
        package = program.dotted_of(os.path.abspath(path)) or ""
        for module in _imported(text, package, path.endswith("__init__.py")):
            file = program.module_file(module)
            if file is not None and self._leads_to_a_source(file, program, root, depth):
                return True
        return False

    def _leads_to_a_source(self, file: str, program: Program, root: str, depth: int) -> bool:
        if file not in self.sourced:
            self.sourced[file] = False  # while it is read: an import cycle leads nowhere
            try:
                with open(file, "rb") as fh:
                    data = fh.read()
            except OSError:
                data = b""
            found = any(n.encode() in data for n in program.needles)
            if not found and b"import" in data:
                text = data.decode("utf-8", errors="replace")
                found = self.imports_a_source(text, file, root, depth + 1)
            self.sourced[file] = found
        return self.sourced[file]


def _imported(text: str, package: str, is_package: bool) -> list[str]:
    """Module names the text's import statements name (``from m import x``: m and m.x)."""
    here = package.split(".") if package else []
    if not is_package:
        here = here[:-1]
    out: list[str] = []
    for m in _FROM.finditer(text):
        module = m.group(1)
        dots = len(module) - len(module.lstrip("."))
        if dots:
            if dots - 1 > len(here):
                continue
            base = here[: len(here) - (dots - 1)]
            rest = module[dots:]
            module = ".".join(base + ([rest] if rest else []))
        if module:
            out.append(module)
        for name in re.split(r"[\s,()\\]+", m.group(2)):
            if name and name != "as" and name.isidentifier():
                out.append(f"{module}.{name}" if module else name)
    for m in _IMPORT.finditer(text):
        for part in m.group(1).split(","):
            name = part.split(" as ")[0].strip()
            if name:
                out.append(name)
    return out
