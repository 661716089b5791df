"""Flows across a project's modules: helpers imported from the project's other modules.

A function at the top of one of a project's modules whose ``return`` carries a
capture-size count (``limits.profiling_num_blocks``) may become a block count in another
module that imports it (``from ..limits import profiling_num_blocks as blocks``, ``from
.. import limits`` then ``limits.f()``). Where every use of it in the project is a block
count the finding sits at its return (in its module), else at the uses that make it one
(in theirs) -- whichever file is checked, alone (``cgguard check FILE``, as pre-commit
runs it) or with the others. The project, its files, imports and helpers are the
index's (:mod:`.projectindex`); this module is the analysis over it.

Cheap where nothing can flow: a file without a block-count word (importer side) or
without a capture-size needle (helper side) never builds the index; a file outside
any project never does either.

Read as little as the single-file path does (:mod:`.check`): bytes first (a module that
never spells a helper's name as a word is not read further), Python's tree as the
screen (each file parsed once per run, cached), and libcst only for the functions
that can hold a finding -- a helper's own function, and in an importer the
outermost functions that spell an imported helper (cut by Python's tree, parsed
alone, positions only at hits). A file parses whole only where a helper is used
outside any function (module or class level) or shadowed by one of its own defs.
"""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_right

from cgguard.static.driver.prefilter import might_match
from cgguard.static.driver.projectindex import Project, imports_a_helper, project_for
from cgguard.static.driver.sourcetext import split_lines
from cgguard.static.rules.model import mentions_sink_word
from cgguard.static.rules.pytree import (
    first_line,
    outermost_function,
    statements_at,
    walk,
)


def imported_params(text: str, path: str):
    """What calls in ``path`` of functions imported from the project's other modules hand
    through from an argument to their result (:class:`~cgguard.static.rules.paramflow.ImportedParams`),
    or None outside a project or without such imports. Read on first call only."""
    if "import" not in text or not os.path.isfile(path):
        return None
    project = project_for(path)
    if project is None:
        return None
    me = os.path.abspath(path)
    from cgguard.static.driver.helperscreen import defined_names

    defined = defined_names(text)  # the file's own functions come first
    tables: list = []

    def lookup(call):
        import libcst as cst

        if not tables:
            tables.append(project.imports(me, text))
        names, modules = tables[0]
        func = call.func
        if isinstance(func, cst.Name) and func.value in names and func.value not in defined:
            target, fname = names[func.value]
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in modules
        ):
            target, fname = modules[func.value.value], func.attr.value
        else:
            return None
        return None if target == me else project.param_helper(target, fname)

    from cgguard.static.rules.paramflow import ImportedParams

    return ImportedParams(lookup)


# ---- findings ---------------------------------------------------------------------------


def findings(text: str, path: str) -> list:
    """Findings in ``path`` (its ``text``) that come from flows across the project's modules."""
    found = _project_and_roles(text, path)
    if found is None:
        return []
    project, as_importer, as_helper = found
    out = []
    if as_importer:
        out += _importer_findings(project, text, path)
    if as_helper:
        out += _helper_findings(project, text, path)
    return out


def _project_and_roles(text: str, path: str) -> tuple[Project, bool, bool] | None:
    """``path``'s project and whether its ``text`` may take a count from a helper it imports
    or hold one another module imports (:func:`_roles`); None where neither can matter."""
    as_importer, as_helper = _roles(text)
    if not (as_importer or as_helper) or not os.path.isfile(path):
        return None
    project = project_for(path)
    return None if project is None else (project, as_importer, as_helper)


def _roles(text: str) -> tuple[bool, bool]:
    """Can ``text`` take a count from a helper it imports, or hold a helper another module
    imports? On its text alone (the sink words; a capture size, ``return`` and a top-level def)."""
    as_importer = "import" in text and mentions_sink_word(text)
    as_helper = might_match(text) and "return" in text and bool(_returning_functions_cheap(text))
    return as_importer, as_helper


def _returning_functions_cheap(text: str) -> bool:
    # A top-level `def` and a `return`: the screen before Python's tree.
    return text.startswith("def ") or "\ndef " in text or "\nasync def " in text


def _external(project: Project, path: str, text: str):
    """Summaries of the project helpers ``path`` imports: (by local name, by module alias)."""
    names, modules = project.imports(path, text)
    me = os.path.abspath(path)
    by_name = {}
    for local, (target, fname) in names.items():
        # Bytes first: a module that does not define the name is not parsed.
        if target != me and project.defines(target, [fname]) and fname in project.returning(target):
            found = project.function_helper(target, fname)
            if found is not None:
                by_name[local] = found
    by_module = {}
    for alias, target in modules.items():
        if target == me or not any(f"{alias}.{d}" in text for d in project.top_defs(target)):
            continue  # this file spells none of the module's functions: not parsed
        # Only the helpers this file spells (`alias.helper`) are parsed, each on its own.
        spelled = {
            f: project.function_helper(target, f)
            for f in project.returning(target)
            if f"{alias}.{f}" in text
        }
        found = {f: h for f, h in spelled.items() if h is not None}
        if found:
            by_module[alias] = found
    return by_name, by_module


def _uses(project: Project, owner_path: str, fname: str) -> tuple[int, int]:
    """(uses, uses that became a block count) of ``owner_path``'s ``fname`` in the project's
    other modules."""
    key = (os.path.abspath(owner_path), fname)
    cache = project.__dict__.setdefault("_uses", {})
    if key in cache:
        return cache[key]
    total = counted = 0
    for other in project.users(fname):
        if other == key[0] or not _imports_from(project, other, key[0], fname):
            continue  # Python's tree of its imports says it cannot call this helper
        text = project.text(other)
        if text is None:
            continue
        by_name, by_module = _external(project, other, text)
        if not any(
            _key_of(project, s) == key
            for s in (*by_name.values(), *(f for m in by_module.values() for f in m.values()))
        ):
            continue
        _, counts = _analysis(project, other, text, by_name, by_module)
        for sid, (uses, sunk) in counts.items():
            summary = _summary_by_id(by_name, by_module, sid)
            if summary is not None and _key_of(project, summary) == key:
                total += uses
                counted += sunk
    cache[key] = (total, counted)
    return cache[key]


def _key_of(project: Project, summary) -> tuple[str, str]:
    return (getattr(summary, "origin", ""), summary.owner.name)


def _summary_by_id(by_name, by_module, sid):
    for s in (*by_name.values(), *(f for m in by_module.values() for f in m.values())):
        if id(s) == sid:
            return s
    return None


def _analysis(project: Project, path: str, text: str, by_name, by_module):
    """The flow over ``path``'s code that calls the imported helpers, once per run:
    ([(libcst module, its positions, hits)], per summary id (uses, uses that became a
    block count)). libcst parses only the outermost functions that spell a helper
    (:func:`_cut`), or the whole file where a use lies outside any function."""
    from cgguard.static.driver import analyse, parse, screen

    key = (os.path.abspath(path), text)
    cache = project.__dict__.setdefault("_analyses", {})
    if key in cache:
        return cache[key]
    tree = project.tree(path, text)
    lines = split_lines(text)
    aliases = _ProjectAliases(project, path, text)
    spans = _cut(tree, text, lines, by_name, by_module) if tree is not None else None

    def work():
        from cgguard.static.rules.engine import external_uses

        groups, counts = [], {}
        pieces = None
        if spans is not None:
            pieces = []
            whole = analyse.WholeFile(text, lines, path, tree, aliases=aliases)
            for start, end in spans:
                module = project.module(
                    path, screen.parsable(lines, start, "".join(lines[start:end]))
                )
                if module is None:
                    pieces = None  # a cut the function did not survive: the whole file, as before
                    break
                offset = start - (1 if lines[start][:1] in (" ", "\t") else 0)
                pieces.append((module, offset, whole.facts_at(start + 1)))
        if pieces is None:
            module = project.module(path, text)
            pieces = [] if module is None else [(module, 0, None)]
        for module, offset, facts in pieces:
            positions = parse.Positions(module, offset)
            hits, found = external_uses(
                module, analyse.class_facts_at(aliases), by_name, by_module, facts=facts
            )
            groups.append((module, positions, hits))
            for sid, (uses, sunk) in found.items():
                u, c = counts.get(sid, (0, 0))
                counts[sid] = (u + uses, c + sunk)
        return groups, counts

    cache[key] = parse.deep(work)
    return cache[key]


def _cut(
    tree: ast.Module, text: str, lines: list[str], by_name, by_module
) -> list[tuple[int, int]] | None:
    """(start, end) line indexes of the outermost functions (decorators included) that
    spell an imported helper (``name(...)``, ``alias.name``); None to parse the whole
    file: a use outside any function, or a def of the file named like an imported
    helper (which would shadow it in the whole module's analysis)."""
    spelled = [re.escape(n) for n in by_name]
    spelled += [
        rf"{re.escape(a)}\s*\.\s*{re.escape(f)}" for a, funcs in by_module.items() for f in funcs
    ]
    if not spelled:
        return []
    if any(re.search(rf"\bdef\s+{re.escape(n)}\b", text) for n in by_name):
        return None
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    chunks: dict[int, tuple[int, int]] = {}
    cache: dict[int, list[int]] = {}
    for m in re.finditer(rf"(?<![\w.])(?:{'|'.join(spelled)})(?!\w)", text):
        lineno = bisect_right(starts, m.start())
        chain = statements_at(tree, lineno, cache)
        func = outermost_function(chain)
        if func is not None:
            first = first_line(func)
            chunks[first] = (first - 1, func.end_lineno)
        elif chain and _spells(chain[-1], by_name, by_module):
            return None  # a use at module or class level: the whole file
    return sorted(chunks.values())


def _spells(node: ast.AST, by_name, by_module) -> bool:
    """Does ``node`` use an imported helper (an import naming it is no use)?"""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return False
    for sub in walk(node):
        if isinstance(sub, ast.Name) and sub.id in by_name:
            return True
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.attr in by_module.get(sub.value.id, {})
        ):
            return True
    return False


def _importer_findings(project: Project, text: str, path: str) -> list:
    by_name, by_module = _imported_helpers(project, text, path)
    if not by_name and not by_module:
        return []
    groups, _ = _analysis(project, path, text, by_name, by_module)
    out = []
    for module, positions, hits in groups:
        out += _as_findings(
            [h for h in hits if _stays_at_use(project, h)], module, positions, text, path
        )
    return out


def _imported_helpers(project: Project, text: str, path: str):
    """Summaries of the project helpers ``path`` imports (by name, by module alias), each
    read alone from its own module; empty where its imports name none (bytes first)."""
    if not imports_a_helper(project, text, path):
        return {}, {}
    return _external(project, path, text)


def _stays_at_use(project: Project, hit) -> bool:
    """A count that came through an imported helper is reported at the use unless every
    use of that helper in the project is a block count (then at its return, in its module)."""
    owner_path, fname = _key_of(project, hit.helper)
    if _internal_uses(project, owner_path, fname):
        return True  # used in its own module too: the finding stays at the use
    uses, counted = _uses(project, owner_path, fname)
    return not (uses and uses == counted)  # used otherwise too: the finding stays at the use


def _internal_uses(project: Project, owner_path: str, fname: str) -> bool:
    text = project.text(owner_path) or ""
    return text.count(fname) > 1  # more than its def: a use in its own module


def _helpers_reported_here(project: Project, text: str, path: str):
    """``path``'s top-level helpers whose finding sits at their own return: other modules
    of the project import them, and every use of them there is a block count. Yields
    (name, the rules' summary of that function read alone)."""
    me = os.path.abspath(path)
    for fname in sorted(project.returning(path, text)):
        if text.count(fname) > 1:
            continue  # used in its own module: the module's own analysis places it
        # The rules' own summary of that one function first (libcst parses it alone): most
        # candidates Python's tree let through return no count, and their users would
        # cost a read of the whole project.
        summary = project.function_helper(path, fname, text)
        if summary is None:
            continue  # its return carries no count
        if not any(o != me and _imports_from(project, o, me, fname) for o in project.users(fname)):
            continue  # nothing imports it as a helper
        uses, counted = _uses(project, path, fname)
        if uses and uses == counted:
            yield fname, summary


def _helper_findings(project: Project, text: str, path: str) -> list:
    from cgguard.static.driver import parse

    out = []
    for _, summary in _helpers_reported_here(project, text, path):
        # Only here: a summary means libcst is loaded already. Imported up front, a file
        # with no helper to report paid for the import (0.2 s), in the forked child too.
        from cgguard.static.rules.engine import return_hits

        module, offset = project.chunk_of(summary)
        out += _as_findings(
            return_hits(summary), module, parse.Positions(module, offset), text, path
        )
    return out


def module_hits(module, text: str, path: str) -> list:
    """The hits of flows across the project's modules that lie in ``module``: libcst's tree
    of the whole file at ``path``, parsed by the caller (the Fixit and codemod adapters,
    whose reports need nodes of their own tree). The same decisions as :func:`findings`,
    so both front ends report the same places."""
    found = _project_and_roles(text, path)
    if found is None:
        return []
    project, as_importer, as_helper = found
    from cgguard.static.driver import analyse
    from cgguard.static.rules.engine import external_uses, module_helpers, return_hits

    # A base imported from the project counts, as in :func:`_analysis`.
    class_facts = analyse.class_facts_at(_ProjectAliases(project, path, text))

    hits = []
    if as_importer:
        by_name, by_module = _imported_helpers(project, text, path)
        if by_name or by_module:
            found, _ = external_uses(module, class_facts, by_name, by_module)
            hits += [h for h in found if _stays_at_use(project, h)]
    if as_helper:
        own = None
        for fname, _ in _helpers_reported_here(project, text, path):
            own = own if own is not None else module_helpers(module)
            if fname in own:
                hits += return_hits(own[fname])
    return hits


def _imports_from(project: Project, importer: str, owner: str, fname: str) -> bool:
    """Does ``importer`` import ``fname`` from ``owner`` (or ``owner`` as a module and spell
    ``alias.fname``)?"""
    text = project.text(importer)
    if text is None or "import" not in text:
        return False
    names, modules = project.imports(importer, text)
    if any(t == owner and f == fname for t, f in names.values()):
        return True
    return any(t == owner and f"{alias}.{fname}" in text for alias, t in modules.items())


def _as_findings(hits, module, positions, text: str, path: str) -> list:
    from cgguard.static.driver import parse, report

    if not hits:
        return []
    from cgguard.static.driver.sourcetext import SourceText

    lines = split_lines(text)
    return parse.deep(
        lambda: report.findings_of(hits, module, positions, SourceText(text, lines), path)
    )


class _ProjectAliases:
    """Import aliases of a file, a base class from another module of the project read as
    the vLLM runner it derives from (``CommonRunner as RunnerBase`` -> ``GPUModelRunner``)."""

    def __init__(self, project: Project | None, path: str, text: str):
        self.project, self.path, self.text = project, path, text
        self._found: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        if self._found is None:
            # Both tables are read on first lookup: a class whose own name says runner
            # asks for none.
            self._found = _Bases(self)
        return self._found


class _Bases(dict):
    """Import aliases (:func:`reach.import_aliases`), a name imported from the project read
    as the runner its class derives from -- read on the first lookup, and the project's
    other modules only for the names asked for (a class's bases, when a fix asks whether
    it is a runner)."""

    def __init__(self, owner: _ProjectAliases):
        super().__init__()
        self._owner = owner
        self._loaded = False
        self._resolved: dict[str, str | None] = {}

    def _load(self) -> None:
        if not self._loaded:
            from cgguard.static.rules.reach import import_aliases

            owner = self._owner
            tree = owner.project.tree(owner.path, owner.text) if owner.project is not None else None
            self.update(
                import_aliases(tree if tree is not None else ast.Module(body=[], type_ignores=[]))
            )
            self._loaded = True

    def _base(self, key: str) -> str | None:
        if key not in self._resolved:
            self._resolved[key] = None
            owner = self._owner
            if owner.project is not None:
                names, _ = owner.project.imports(owner.path, owner.text)
                if key in names:
                    target, cname = names[key]
                    self._resolved[key] = _runner_base(owner.project, target, cname, 0)
        return self._resolved[key]

    def get(self, key, default=None):
        base = self._base(key)
        if base is not None:
            return base
        self._load()
        return super().get(key, default)

    def __getitem__(self, key):
        base = self._base(key)
        if base is not None:
            return base
        self._load()
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        if self._base(key) is not None:
            return True
        self._load()
        return super().__contains__(key)

    def __bool__(self) -> bool:
        return True  # not read yet is not empty (``aliases or {}`` must keep it)

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def __iter__(self):
        self._load()
        return super().__iter__()

    def items(self):
        self._load()
        return super().items()


def _runner_base(project: Project, path: str, cname: str, depth: int) -> str | None:
    """The ``...ModelRunner`` a project class derives from (through the project's modules)."""
    import re

    text = project.text(path)
    if text is None or depth > 4:
        return None
    tree = project.tree(path, text)
    if tree is None:
        return None
    names, _ = project.imports(path, text)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cname:
            for base in node.bases:
                spelled = ast.unparse(base).split("[", 1)[0]
                last = spelled.rsplit(".", 1)[-1]
                if re.search("ModelRunner", last) and spelled not in names:
                    return last
                if spelled in names:
                    target, real = names[spelled]
                    found = _runner_base(project, target, real, depth + 1)
                    if found is not None:
                        return found
                    if re.search("ModelRunner", real):
                        return real
    return None
