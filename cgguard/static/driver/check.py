"""Check one file's text: the driver's stages, one after the other, each called from here.

    text -> core (Python's parser, the intermediate form, the data flow) -> report -> findings

- the byte prefilter (:mod:`.prefilter`, run by :mod:`.run`) leaves only files that name a
  source, or may import a module of their project and name a sink; of the latter, only those
  that use what a module naming a source exports are parsed
  (:meth:`.context.RunContext.takes_a_count`, asked of the file's outline);
- the core (:mod:`cgguard.static.core`) parses the whole file with Python's parser, lowers
  it, and follows the model from sources to sinks, reading the project's other modules
  where a call, an import or a base class leads;
- :mod:`.report` turns its hits into findings: only a file with a hit to fix imports libcst,
  which parses only the statement each fix changes.
"""

from __future__ import annotations

import os
from dataclasses import replace

from cgguard.static.driver.context import RunContext
from cgguard.static.source.findings import Finding


def check_source(
    text: str,
    path: str,
    *,
    fast: bool = True,
    context: RunContext | None = None,
    names_source: bool | None = None,
) -> list[Finding]:
    """Findings for one file's text. Raises SyntaxError/ValueError/RecursionError on bad input.

    ``fast`` is kept for callers of the screen this replaced: both paths are the core's now.
    ``context``: what the run has read already (a fresh one for this file alone if None).
    ``names_source``: whether the text names a source, when the caller knows (None: ask).
    """
    hits, source_lines = core_hits(text, path, context=context, names_source=names_source)
    if not hits or source_lines is None:
        return []
    _check_depth(text, path)
    from cgguard.static.driver import report

    lay_out = context is None or context.fix_layout
    return report.findings(hits, text, source_lines.file_lines(), path, source_lines, lay_out)


class SourceLines:
    """The lines of the module holding a hit's source, read by the lane (an analysis of the
    project's program) that made the hit; ``tree``: the checked file's intermediate form."""

    def __init__(self, analysis, key: str, tree):
        self._analysis, self._key, self.tree = analysis, key, tree
        self._lanes: dict[int, object] = {}  # id(hit) -> its lane, where not the first

    def made_by(self, hits: list, analysis) -> None:
        for hit in hits:
            self._lanes[id(hit)] = analysis

    def __call__(self, hit) -> list[str]:
        where = getattr(hit.helper, "path", None) or self._key
        return self._lanes.get(id(hit), self._analysis).lines_at(where)  # type: ignore[attr-defined]

    def file_lines(self) -> list[str]:
        return self._analysis.lines_at(self._key)


def core_hits(
    text: str,
    path: str,
    tree=None,
    context: RunContext | None = None,
    names_source: bool | None = None,
) -> tuple[list, SourceLines | None]:
    """The core's hits in ``path``'s own code, each once, and a reader of their sources'
    lines. ``tree``: the file's intermediate form, or what makes it, when a front end has one
    (the Fixit rule and the codemod lower libcst's module, only for a file worth it);
    Python's parser lowers it otherwise. ``names_source``: whether the text names a source,
    when the caller knows (None: ask). The project's program runs every configuration the
    run selected whose screens let the file through, in one pass over it
    (:meth:`cgguard.static.core.program.Program.hits`); each hit carries the rule its
    configuration says reports it."""
    if context is None:
        context = RunContext()
    root = context.roots.of_file(path) if path else None
    configurations = context.configurations
    chosen = []
    for configuration in configurations:
        named = configuration.might_match(text)
        if len(configurations) == 1 and names_source is not None:
            named = names_source
        if named:
            if not context.may_reach_a_sink(text, path, configuration):
                continue  # a source, but no sink it could reach: nothing to parse
        elif names_source is not None and not configuration.mentions_sink_word(text):
            continue  # screened by the run: none of its sources, and none of its sinks
        elif not context.takes_a_count(text, path, root, configuration):
            continue  # no source here, and nothing it uses brings a count from another
        chosen.append(configuration)
    if not chosen:
        return [], None
    # A configuration that follows no flow across modules reads each file alone, as
    # outside any project: a fork's checkout and its package give the same findings.
    program = context.program(root)
    found = program.hits(path, text, tree, [c.name for c in chosen])
    hits: list = []
    lines: SourceLines | None = None
    for configuration in chosen:
        analysis = program.lane(configuration.name)
        made = [
            replace(h, rule=configuration.rule_for(h.labels)) for h in found[configuration.name]
        ]
        if lines is None:
            key = os.path.abspath(path)
            module = analysis.modules[key]
            lines = SourceLines(analysis, key, module.tree if module is not None else None)
        else:
            lines.made_by(made, analysis)
        hits += made
    return _unique(hits), lines


def _unique(hits: list) -> list:
    seen: set[tuple] = set()
    out = []
    for h in hits:
        s = h.node.span
        k = (s.line, s.col, s.end_line, s.end_col, h.rule)
        if k not in seen:
            seen.add(k)
            out.append(h)
    return out


def _check_depth(text: str, path: str) -> None:
    """libcst nests deeper than Python's tree: refuse what it could not parse."""
    from cgguard.static.driver.parse import too_deep

    if too_deep(text, path):
        raise RecursionError("too deeply nested for libcst")
