"""One run's reading of a project for every configuration it runs, in one pass over a file.

A :class:`Program` holds a *lane* per configuration: an :class:`~.analysis.Analysis`, that
configuration's model read over the project (its modules as its model indexes them, its
classes, calls and summaries, keyed by function within the lane). A lane whose
configuration follows no flow across modules reads the project as outside any: its
analysis has no root, and another project's program may hold the same one.

:meth:`Program.hits` reads a file once for every lane asked: Python's parser and the
lowering run once, every lane indexes that one tree, and a scope that several lanes pick
at the same point of their order is walked once for all of them, their states side by side
(:mod:`.modulepass`). A lane
finds the same hits beside the others as alone: each asks its own summaries, in its own
order, and settles its own rounds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from cgguard.static.core import ir
from cgguard.static.core.analysis import Analysis
from cgguard.static.core.flow import Hit
from cgguard.static.core.modulepass import settled_hits

# What makes a lane's tree: the tree itself, a function giving it (the Fixit rule and the
# codemod lower libcst's module only for a file worth it), or None (Python's parser).
Given = ir.Module | Callable[[], ir.Module] | None


class Program:
    """The lanes of one project's run, by configuration name, each made when first asked
    for (``lane``: makes the analysis of a configuration, by name)."""

    def __init__(self, root: str | None, lane: Callable[[str], Analysis]):
        self.root = root
        self._make = lane
        self.lanes: dict[str, Analysis] = {}

    def lane(self, name: str) -> Analysis:
        found = self.lanes.get(name)
        if found is None:
            found = self.lanes[name] = self._make(name)
        return found

    def hits(self, path: str, text: str, tree: Given, names: Sequence[str]) -> dict[str, list[Hit]]:
        """The hits in the file's own code, of each lane named, by lane: those its scopes
        make and those that land in it from the project's modules that import its helpers.
        The file (``path``, its ``text``) is lowered once, or ``tree`` gives its form."""
        lanes = [self.lane(name) for name in names]
        modules = []
        lowered: ir.Module | None = None
        for analysis in lanes:
            given: ir.Module | None
            if lowered is None:
                given = tree() if callable(tree) else tree
            elif analysis.texts.get(os.path.abspath(path)) == text:
                given = None  # this lane read the text already
            else:
                given = lowered  # the form another lane lowered
            module = analysis.add(path, text, given)
            lowered = module.tree
            modules.append(module)
        found = settled_hits([(a.module_hits, m) for a, m in zip(lanes, modules)])
        out: dict[str, list[Hit]] = {}
        for name, analysis, module, hits in zip(names, lanes, modules, found):
            key = module.path
            own = [h for h in hits if h.path is None or h.path == key]
            own += [h for h in analysis.landing_hits(module) if h.path == key]
            out[name] = own
        return out
