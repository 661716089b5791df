"""Helpers imported from the project's other modules: the per-project index.

A *project* is the folder above a file that holds ``pyproject.toml``, ``setup.py``,
``setup.cfg`` or ``.git`` (the nearest one). A function at the top of one of its
modules whose ``return`` carries a capture-size count (``limits.profiling_num_blocks``)
may become a block count in another module that imports it (``from ..limits import
profiling_num_blocks as blocks``, ``from .. import limits`` then ``limits.f()``). Where
every use of it in the project is a block count the finding sits at its return (in
its module), else at the uses that make it one (in theirs) -- whichever file is
checked, alone (``cgguard check FILE``, as pre-commit runs it) or with the others.

Cheap where nothing can flow: a file without a block-count word (importer side) or
without a capture-size needle (helper side) never builds the index; a file outside
any project never does either. The index (the project's Python files, their text,
libcst's tree of the few that hold a helper) is built once per process.
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from pathlib import Path

from cgguard.static.driver.prefilter import might_match
from cgguard.static.rules.model import SINK_WORDS

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_SKIP_DIRS = {"__pycache__", "node_modules", "build", "dist", "site-packages"}


@lru_cache(maxsize=256)
def project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` holding a project marker."""
    path = Path(folder)
    for candidate in (path, *path.parents):
        if candidate.name in ("site-packages", "dist-packages"):
            return None  # an installed package is no project of the user's
        if any((candidate / m).exists() for m in MARKERS):
            return str(candidate)
    return None


class Project:
    def __init__(self, root: str):
        self.root = root
        self._files: list[str] | None = None
        self._texts: dict[str, str | None] = {}
        self._helpers: dict[str, dict] = {}
        self._modules: dict[str, object] = {}

    # ---- files ------------------------------------------------------------------
    def files(self) -> list[str]:
        if self._files is None:
            out = []
            for folder, dirs, names in os.walk(self.root):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                out.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
            self._files = out
        return self._files

    def text(self, path: str) -> str | None:
        key = os.path.abspath(path)
        if key not in self._texts:
            try:
                self._texts[key] = Path(key).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError):
                self._texts[key] = None
        return self._texts[key]

    def module_file(self, dotted: str) -> str | None:
        parts = [p for p in dotted.split(".") if p]
        if not parts:
            return None
        for base in (self.root, os.path.join(self.root, "src")):
            stem = os.path.join(base, *parts)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                if os.path.isfile(candidate):
                    return os.path.abspath(candidate)
        return None

    def resolve(self, importer: str, module: str | None, level: int) -> str | None:
        """The dotted module an ``import`` in ``importer`` names, relative imports resolved."""
        if level == 0:
            return module
        rel = os.path.relpath(os.path.dirname(os.path.abspath(importer)), self.root)
        for base in (self.root, os.path.join(self.root, "src")):
            rel = os.path.relpath(os.path.dirname(os.path.abspath(importer)), base)
            if not rel.startswith(".."):
                break
        parts = [] if rel == "." else rel.split(os.sep)
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    # ---- helpers ------------------------------------------------------------------
    def helpers(self, path: str, text: str | None = None) -> dict:
        """name -> HelperSummary for the top-level functions of ``path`` returning a count."""
        key = os.path.abspath(path)
        if text is None and key in self._helpers:
            return self._helpers[key]
        text = self.text(key) if text is None else text
        found: dict = {}
        if text is not None and might_match(text) and "return" in text:
            module = self.module(key, text)
            if module is not None:
                from cgguard.static.rules.engine import module_helpers

                found = module_helpers(module)
                self._modules[key] = module
                for summary in found.values():
                    summary.origin = key  # the file it lives in
        self._helpers[key] = found
        return found

    def function_helper(self, path: str, fname: str):
        """The summary of one top-level function of ``path`` (libcst parses that function
        alone), or None when its return carries no count."""
        key = (os.path.abspath(path), fname)
        cache = self.__dict__.setdefault("_function_helpers", {})
        if key not in cache:
            cache[key] = None
            text = self.text(key[0])
            chunk = _function_text(text, fname) if text is not None else None
            module = self.module(key[0], chunk) if chunk is not None else None
            if module is not None:
                from cgguard.static.rules.engine import module_helpers

                found = module_helpers(module).get(fname)
                if found is not None:
                    found.origin = key[0]
                cache[key] = found
        return cache[key]

    def module(self, path: str, text: str):
        from cgguard.static.driver.scan import deep, parse, validate

        try:
            validate(text, path)
            return deep(lambda: parse(text, path))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # its own check reports it

    def imports(self, path: str, text: str) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """What ``path`` imports from the project: local name -> (module file, function name),
        and module alias -> module file."""
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}, {}
        names: dict[str, tuple[str, str]] = {}
        modules: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                dotted = self.resolve(path, node.module, node.level)
                if dotted is None:
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    sub = self.module_file(f"{dotted}.{alias.name}")
                    if sub is not None:
                        modules[local] = sub
                        continue
                    target = self.module_file(dotted)
                    if target is not None:
                        names[local] = (target, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        target = self.module_file(alias.name)
                        if target is not None:
                            modules[alias.asname] = target
        return names, modules


    # ---- the index of helper names (cheap: Python's tree of the files with needles) ----
    def returning(self, path: str, text: str | None = None) -> frozenset[str]:
        """Top-level functions of ``path`` that hold a capture-size needle and return a value."""
        key = os.path.abspath(path)
        cache = self.__dict__.setdefault("_returning", {})
        if text is None and key in cache:
            return cache[key]
        text = self.text(key) if text is None else text
        found = frozenset()
        if text is not None and might_match(text) and "return" in text:
            found = frozenset(_returning_functions(text))
        cache[key] = found
        return found

    def helper_names(self) -> frozenset[str]:
        """Names of top-level functions (in files with a capture-size needle) that return
        something: what an importer may take a count from."""
        if getattr(self, "_names", None) is None:
            names: set[str] = set()
            for path in self.files():
                names |= self.returning(path)
            self._names = frozenset(names)
        return self._names

    def users(self, name: str) -> list[str]:
        """Project files whose text holds ``name`` (callers to look at)."""
        return [p for p in self.files() if (self.text(p) or "").find(name) >= 0]


_PROJECTS: dict[str, Project] = {}


def project_for(path: str) -> Project | None:
    root = project_root(os.path.dirname(os.path.abspath(path)))
    if root is None:
        return None
    if root not in _PROJECTS:
        _PROJECTS[root] = Project(root)
    return _PROJECTS[root]

def _function_text(text: str, fname: str) -> str | None:
    """The source of the top-level function ``fname`` (decorators included)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fname:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            return "".join(lines[first - 1 : node.end_lineno])
    return None


def _returning_functions(text: str) -> set[str]:
    """Top-level functions holding a capture-size needle and a ``return <value>``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    from cgguard.static.driver.helperscreen import _function_may_return

    lines = text.splitlines(keepends=True)
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and might_match("".join(lines[node.lineno - 1 : node.end_lineno]))
        and _function_may_return(node)  # its return may carry the capture size
    }


# ---- findings ---------------------------------------------------------------------------


def findings(text: str, path: str) -> list:
    """Findings in ``path`` (its ``text``) that come from flows across the project's modules."""
    if not os.path.isfile(path) or "import" not in text and not might_match(text):
        return []
    as_importer = SINK_WORDS.search(text) is not None and "import" in text
    as_helper = might_match(text) and "return" in text and bool(_returning_functions_cheap(text))
    if not (as_importer or as_helper):
        return []
    project = project_for(path)
    if project is None:
        return []
    out = []
    if as_importer:
        out += _importer_findings(project, text, path)
    if as_helper:
        out += _helper_findings(project, text, path)
    return out


def _returning_functions_cheap(text: str) -> bool:
    # A top-level `def` and a `return`: the screen before Python's tree.
    return text.startswith("def ") or "\ndef " in text or "\nasync def " in text


def _external(project: Project, path: str, text: str):
    """Summaries of the project helpers ``path`` imports: (by local name, by module alias)."""
    names, modules = project.imports(path, text)
    me = os.path.abspath(path)
    by_name = {}
    for local, (target, fname) in names.items():
        if target != me and fname in project.returning(target):
            found = project.function_helper(target, fname)
            if found is not None:
                by_name[local] = found
    by_module = {}
    for alias, target in modules.items():
        # Only the helpers this file spells (`alias.helper`) are parsed, each on its own.
        spelled = {f: project.function_helper(target, f) for f in project.returning(target) if f"{alias}.{f}" in text}
        found = {f: h for f, h in spelled.items() if h is not None}
        if target != me and found:
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
        if other == key[0]:
            continue
        text = project.text(other)
        if text is None:
            continue
        by_name, by_module = _external(project, other, text)
        if not any(_key_of(project, s) == key for s in (*by_name.values(), *(f for m in by_module.values() for f in m.values()))):
            continue
        module = project.module(other, text)
        if module is None:
            continue
        from cgguard.static.rules.engine import external_uses

        _, counts = _run(external_uses, module, other, text, by_name, by_module)
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


def _run(work, module, path: str, text: str, by_name, by_module):
    from cgguard.static.driver import scan

    lines = scan.split_lines(text)
    positions = scan._Positions(module, 0)
    project = project_for(path)
    aliases = _ProjectAliases(project, path, text)
    result = scan.deep(
        lambda: work(module, scan._class_facts_at(lines, positions, aliases), by_name, by_module)
    )
    return result


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.MULTILINE)
_IMPORT_AS = re.compile(r"^[ \t]*import[ \t]+([\w.]+)[ \t]+as[ \t]+\w+", re.MULTILINE)


def _imports_a_helper(project: Project, text: str, path: str) -> bool:
    """Does ``path`` import (by its text, before any parse) a project module whose
    top-level functions hold a capture size and return a value?"""
    for m in _FROM_IMPORT.finditer(text):
        spec = m.group(1)
        level = len(spec) - len(spec.lstrip("."))
        dotted = project.resolve(path, spec[level:] or None, level)
        if dotted is None:
            continue
        names = re.findall(r"\w+", re.sub(r"\bas\b\s+\w+", "", m.group(2)))
        targets = [project.module_file(dotted)] + [project.module_file(f"{dotted}.{n}") for n in names]
        if any(t is not None and project.returning(t) for t in targets):
            return True
    for m in _IMPORT_AS.finditer(text):
        target = project.module_file(m.group(1))
        if target is not None and project.returning(target):
            return True
    return False


def _importer_findings(project: Project, text: str, path: str) -> list:
    if not _imports_a_helper(project, text, path):
        return []
    by_name, by_module = _external(project, path, text)
    if not by_name and not by_module:
        return []
    module = project.module(path, text)
    if module is None:
        return []
    from cgguard.static.rules.engine import external_uses

    hits, _ = _run(external_uses, module, path, text, by_name, by_module)
    kept = []
    for hit in hits:
        owner_path, fname = _key_of(project, hit.helper)
        uses, counted = _uses(project, owner_path, fname)
        if not (uses and uses == counted and not _internal_uses(project, owner_path, fname)):
            kept.append(hit)  # used otherwise too: the finding stays at the use
    return _as_findings(kept, module, text, path, project)


def _internal_uses(project: Project, owner_path: str, fname: str) -> bool:
    text = project.text(owner_path) or ""
    return text.count(fname) > 1  # more than its def: a use in its own module


def _helper_findings(project: Project, text: str, path: str) -> list:
    me = os.path.abspath(path)
    candidates = [
        f for f in project.returning(path, text)
        if text.count(f) == 1
        and _chunk_returns_count(project, text, path, f)
        and any(o != me and _imports_from(project, o, me, f) for o in project.users(f))
    ]
    if not candidates:
        return []  # nothing of this file is imported as a helper: no parse
    helpers = {f: s for f, s in project.helpers(path, text).items() if f in candidates}
    if not helpers:
        return []
    from cgguard.static.rules.engine import return_hits

    hits = []
    for fname, summary in helpers.items():
        if text.count(fname) > 1:
            continue  # used in its own module: the module's own analysis places it
        uses, counted = _uses(project, path, fname)
        if uses and uses == counted:
            hits += return_hits(summary)
    if not hits:
        return []
    return _as_findings(hits, project._modules[os.path.abspath(path)], text, path, project)


def _chunk_returns_count(project: Project, text: str, path: str, fname: str) -> bool:
    chunk = _function_text(text, fname)
    module = project.module(path, chunk) if chunk is not None else None
    if module is None:
        return False
    from cgguard.static.rules.engine import module_helpers

    return fname in module_helpers(module)


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


def _as_findings(hits, module, text: str, path: str, project: Project) -> list:
    if not hits:
        return []
    from cgguard.static.driver import scan
    from cgguard.static.driver.sourcetext import SourceText

    lines = scan.split_lines(text)
    positions = scan._Positions(module, 0)
    return scan.deep(lambda: scan._findings(hits, module, positions, SourceText(text, lines), path))


class _ProjectAliases:
    """Import aliases of a file, a base class from another module of the project read as
    the vLLM runner it derives from (``CommonRunner as RunnerBase`` -> ``GPUModelRunner``)."""

    def __init__(self, project: Project | None, path: str, text: str):
        self.project, self.path, self.text = project, path, text
        self._found: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        if self._found is None:
            from cgguard.static.rules.reach import import_aliases

            try:
                tree = ast.parse(self.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = ast.Module(body=[], type_ignores=[])
            found = import_aliases(tree)
            if self.project is not None:
                names, _ = self.project.imports(self.path, self.text)
                for local, (target, cname) in names.items():
                    base = _runner_base(self.project, target, cname, 0)
                    if base is not None:
                        found[local] = base
            self._found = found
        return self._found


def _runner_base(project: Project, path: str, cname: str, depth: int) -> str | None:
    """The ``...ModelRunner`` a project class derives from (through the project's modules)."""
    import re

    text = project.text(path)
    if text is None or depth > 4:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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
