"""The per-project index: a project's modules, their imports and their helpers, read once per run.

A *project* is the folder above a file that holds ``pyproject.toml``, ``setup.py``,
``setup.cfg`` or ``.git`` (the nearest one). The index answers what the cross-module
analysis (:mod:`.project`) asks of it: which file a dotted module is (from folder
listings), what a file imports from the project, which top-level functions of a module
may return a capture-size count (its *helpers*), and which files spell a name. It reads
as little as it can: bytes first, Python's tree of the import statements or of one
function cut out alone, libcst only for a helper's own function. Built once per process,
and never for a file with nothing to flow (:mod:`.project` decides).
"""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate

from cgguard.static.driver.prefilter import has_needle, might_match
from cgguard.static.driver.projectroot import project_root
from cgguard.static.driver.sourcetext import split_lines
from cgguard.static.rules.pytree import statements

_SKIP_DIRS = {"__pycache__", "node_modules", "build", "dist", "site-packages"}


class Project:
    def __init__(self, root: str):
        self.root = root
        self.bases = (
            root,
            os.path.join(root, "src"),
        )  # where absolute imports resolve: flat and src layouts
        self._files: list[str] | None = None
        self._texts: dict[str, str | None] = {}

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
                with open(
                    key, encoding="utf-8"
                ) as fh:  # as Path.read_text (pathlib: 4 ms to import)
                    self._texts[key] = fh.read()
            except (OSError, UnicodeDecodeError, ValueError):
                self._texts[key] = None
        return self._texts[key]

    def module_file(self, dotted: str) -> str | None:
        """The file of module ``dotted`` in the project (looked up once per run)."""
        cache = self.__dict__.setdefault("_module_files", {})
        if dotted not in cache:
            cache[dotted] = self._find_module(dotted)
        return cache[dotted]

    def _find_module(self, dotted: str) -> str | None:
        # Folder listings, each read once per run and walked part by part, instead of a
        # stat per candidate: an importer's every imported name is tried as a submodule
        # (`from pkg import mod`), and most are classes or functions.
        parts = dotted.split(".")
        if not all(parts):
            return None
        for base in self.bases:
            folder = self._package_folder(base, tuple(parts[:-1]))
            if folder is None:
                continue
            entries = self._listing(folder)
            if entries.get(parts[-1] + ".py") is False:
                return os.path.abspath(os.path.join(folder, parts[-1] + ".py"))
            if (
                entries.get(parts[-1])
                and self._listing(os.path.join(folder, parts[-1])).get("__init__.py") is False
            ):
                return os.path.abspath(os.path.join(folder, parts[-1], "__init__.py"))
        return None

    def is_package(self, dotted: str) -> bool:
        """Is ``dotted`` a folder of the project (a package, maybe a namespace one)?"""
        parts = tuple(dotted.split("."))
        return all(parts) and any(
            self._package_folder(base, parts) is not None for base in self.bases
        )

    def submodule_names(self, dotted: str, names) -> list[str]:
        """Those of ``names`` that the folder of package ``dotted`` holds as a module or a folder."""
        parts = tuple(dotted.split("."))
        if not all(parts):
            return []
        held: list[str] = []
        for base in self.bases:
            folder = self._package_folder(base, parts)
            if folder is not None:
                entries = self._listing(folder)
                held += [n for n in names if n + ".py" in entries or entries.get(n)]
        return held

    def _package_folder(self, base: str, parts: tuple[str, ...]) -> str | None:
        """The folder ``base/parts...`` when each step exists (from the listings), else None."""
        cache = self.__dict__.setdefault("_folders", {})
        key = (base, parts)
        if key not in cache:
            if not parts:
                found = base
            else:
                parent = self._package_folder(base, parts[:-1])
                found = (
                    os.path.join(parent, parts[-1])
                    if parent and self._listing(parent).get(parts[-1])
                    else None
                )
            cache[key] = found
        return cache[key]

    def _listing(self, folder: str) -> dict[str, bool]:
        """Names in ``folder`` -> is a folder (symlinks followed), read once per run."""
        cache = self.__dict__.setdefault("_listings", {})
        if folder not in cache:
            entries: dict[str, bool] = {}
            try:
                with os.scandir(folder) as it:
                    for entry in it:
                        try:
                            if entry.is_dir():
                                entries[entry.name] = True
                            elif entry.is_file():
                                entries[entry.name] = False
                        except OSError:
                            continue
            except OSError:
                pass
            cache[folder] = entries
        return cache[folder]

    def resolve(self, importer: str, module: str | None, level: int) -> str | None:
        """The dotted module an ``import`` in ``importer`` names, relative imports resolved."""
        if level == 0:
            return module
        folder = os.path.dirname(os.path.abspath(importer))
        cache = self.__dict__.setdefault("_packages", {})
        if folder not in cache:
            parts = None
            for base in self.bases:
                rel = os.path.relpath(folder, base)
                if not rel.startswith(".."):
                    parts = [] if rel == "." else rel.split(os.sep)
                    break
            cache[folder] = parts
        parts = cache[folder]
        if parts is None or level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    # ---- reading: Python's tree of a file, libcst's module of a text, once per run -----
    def tree(self, path: str, text: str) -> ast.Module | None:
        """Python's tree of ``text`` (``path``'s), None where it does not parse (its own
        check reports that). Parsed once per run: the importer screen, the imports, the
        class facts and the cutting all read this one tree."""
        key = (os.path.abspath(path), text)
        cache = self.__dict__.setdefault("_trees", {})
        if key not in cache:
            try:
                cache[key] = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                cache[key] = None
        return cache[key]

    def module(self, path: str, text: str):
        """libcst's module of ``text`` (a whole file or a function cut out of one), parsed
        once per run; None where it does not parse. Call it inside :func:`.parse.deep`."""
        from cgguard.static.driver import parse, screen

        key = (os.path.abspath(path), text)
        cache = self.__dict__.setdefault("_cst", {})
        if key not in cache:
            try:
                screen.validate(text, path)
                cache[key] = parse.parse(text, path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                cache[key] = None  # its own check reports it
        return cache[key]

    # ---- helpers ------------------------------------------------------------------
    def function_helper(self, path: str, fname: str, text: str | None = None):
        """The summary of one top-level function of ``path`` (libcst parses that function
        alone), or None when its return carries no count. ``chunk_of(summary)`` gives
        the libcst module it was read from and that module's line offset in the file."""
        from cgguard.static.driver import parse

        text = self.text(path) if text is None else text
        key = (os.path.abspath(path), fname, text)
        cache = self.__dict__.setdefault("_function_helpers", {})
        if key not in cache:
            found = None  # kept only once known (deep() may hand the work to the parent)
            found_top = self.top_functions(key[0], text).get(fname) if text is not None else None
            span = found_top[:2] if found_top is not None else None
            if span is not None:
                first, last = span
                chunk = "".join(split_lines(text)[first - 1 : last])

                def work():
                    module = self.module(key[0], chunk)
                    if module is None:
                        return None
                    from cgguard.static.rules.engine import module_helpers

                    return module, module_helpers(module).get(fname)

                got = parse.deep(work)
                if got is not None and got[1] is not None:
                    module, found = got
                    found.origin = key[0]  # the file it lives in
                    self.__dict__.setdefault("_chunks", {})[id(found)] = (module, first - 1)
            cache[key] = found
        return cache[key]

    def param_helper(self, path: str, fname: str):
        """libcst's node of the top-level function ``fname`` of ``path``, parsed alone, when
        Python's tree says a parameter of it may reach its return (else None): what a call
        of it imported by another module may hand through (:class:`ImportedParams`).
        Call it inside :func:`.parse.deep`."""
        key = (os.path.abspath(path), fname)
        cache = self.__dict__.setdefault("_param_helpers", {})
        if key not in cache:
            cache[key] = None
            text = self.text(key[0])
            if text and self.defines(key[0], [fname]):
                from cgguard.static.driver.helperscreen import returns_a_parameter

                found = _top_functions(
                    text, lambda: self.tree(key[0], text), lambda name, _: name == fname
                ).get(fname)
                if found is not None and returns_a_parameter(found[2], set()):
                    first, last, _ = found
                    chunk = "".join(split_lines(text)[first - 1 : last])
                    module = self.module(key[0], chunk)
                    body = module.body if module is not None else []
                    import libcst as cst

                    if (
                        body
                        and isinstance(body[0], cst.FunctionDef)
                        and body[0].name.value == fname
                    ):
                        cache[key] = body[0]
        return cache[key]

    def chunk_of(self, summary) -> tuple[object, int]:
        """(libcst module, line offset) a summary of :meth:`function_helper` was read from."""
        return self.__dict__["_chunks"][id(summary)]

    def imports(self, path: str, text: str) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """What ``path`` imports from the project: local name -> (module file, function name),
        and module alias -> module file (read once per run from Python's tree)."""
        key = (os.path.abspath(path), text)
        cache = self.__dict__.setdefault("_imports", {})
        if key not in cache:
            # Only the import statements are parsed (Python's tree of the whole file, when
            # no other step needs it, costs ten to a hundred times more: a helper's users
            # are often big modules that merely mention its name).
            tree = self.__dict__.get("_trees", {}).get(key) or _import_tree(text)
            cache[key] = self._read_imports(path, tree)
        return cache[key]

    def _read_imports(
        self, path: str, tree: ast.Module
    ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        names: dict[str, tuple[str, str]] = {}
        modules: dict[str, str] = {}
        for node in statements(tree):
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

    def top_defs(self, path: str) -> frozenset[str]:
        """Names of the functions ``path`` defines at its top, on its bytes (a superset of
        Python's tree's: the screen before any parse), read once per run."""
        key = os.path.abspath(path)
        cache = self.__dict__.setdefault("_top_defs", {})
        if key not in cache:
            text = self.text(key)
            cache[key] = frozenset(_TOP_DEF.findall(text)) if text else frozenset()
        return cache[key]

    def defines(self, path: str, names) -> bool:
        """Does ``path`` define one of ``names`` at its top? Bytes: ``def name`` first."""
        text = self.text(path)
        if not text or not any(f"def {n}" in text for n in names):
            return False
        return not self.top_defs(path).isdisjoint(names)

    # ---- the index of helper names (cheap: Python's tree of the files with needles) ----
    def returning(self, path: str, text: str | None = None) -> frozenset[str]:
        """Top-level functions of ``path`` that hold a capture-size needle and return a value."""
        key = os.path.abspath(path)
        cache = self.__dict__.setdefault("_returning", {})
        if text is None and key in cache:
            return cache[key]
        if text is None and not self._may_hold_helper(key):
            cache[key] = frozenset()  # its bytes hold no capture size: never decoded
            return cache[key]
        text = self.text(key) if text is None else text
        found = frozenset()
        if text is not None and might_match(text) and "return" in text:
            from cgguard.static.driver.helperscreen import returns_capture_alone

            # Its return may carry the capture size (Python's tree of that function alone).
            found = frozenset(
                n
                for n, (_, _, node) in self.top_functions(key, text).items()
                if returns_capture_alone(node)
            )
        cache[key] = found
        return found

    def _may_hold_helper(self, path: str) -> bool:
        """Do ``path``'s bytes hold a capture size, ``return`` and a top-level ``def``?"""
        if path in self._texts:
            text = self._texts[path]
            return text is not None and might_match(text) and "return" in text
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return False
        return (
            has_needle(data) and b"return" in data and (data.startswith(b"def ") or b"def " in data)
        )

    def top_functions(self, path: str, text: str) -> dict[str, tuple[int, int, ast.AST]]:
        """The top-level functions of ``text`` (``path``'s) that hold a capture-size needle:
        name -> (first line with decorators, last line, Python's tree of the function).
        Each is cut out by indentation and parsed alone (a module of helpers is often big,
        its tree ten times the cost); Python's tree of the whole file only where a cut
        does not parse. Read once per run."""
        key = (os.path.abspath(path), text)
        cache = self.__dict__.setdefault("_top_functions", {})
        if key not in cache:
            cache[key] = _top_functions(
                text, lambda: self.tree(key[0], text), lambda _, chunk: might_match(chunk)
            )
        return cache[key]

    def users(self, name: str) -> list[str]:
        """Project files whose text spells ``name`` as a word (callers to look at): bytes
        first (a file without the name is never decoded), so ``cudagraph_capture_sizes``
        is no user of ``cudagraph_capture_size``."""
        word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        needle = name.encode()
        found = []
        for path in self.files():
            text = self._texts.get(path, "")
            if path not in self._texts:
                try:
                    with open(path, "rb") as f:
                        if needle not in f.read():
                            continue
                except OSError:
                    continue
                text = self.text(path)
            if text and name in text and word.search(text):
                found.append(path)
        return found


_PROJECTS: dict[str, Project] = {}


def project_for(path: str) -> Project | None:
    root = project_root(os.path.dirname(os.path.abspath(path)))
    if root is None:
        return None
    if root not in _PROJECTS:
        _PROJECTS[root] = Project(root)
    return _PROJECTS[root]


def _import_tree(text: str) -> ast.Module:
    """A module of ``text``'s import statements alone, each parsed on its own: of the ways
    to read one (:func:`_import_statements`), the one reaching furthest back that parses
    as an import (a line in a string that reads like an import and does not parse is
    left out)."""
    body: list[ast.stmt] = []
    for after, ways in _import_statements(text):
        end = _import_end(text, after)
        for start, _ in reversed(ways):
            try:
                parsed = ast.parse(text[start:end].strip(" \t\f")).body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if parsed and isinstance(parsed[0], (ast.Import, ast.ImportFrom)):
                body += parsed
                break
    return ast.Module(body=body, type_ignores=[])


def _import_specs(
    text: str, wanted: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, str, str]]:
    """What ``text``'s import statements import, read on its text before any parse, every
    way a statement can be read (:func:`_import_statements`): ``("from", spec, names)``
    for ``from spec import names`` and ``("import", dotted, "")`` for each ``dotted as
    alias`` of an ``import``. A superset, as the screen needs. ``wanted(module)``: only
    the readings whose module it accepts; a ``from`` statement's names are read only then
    (vLLM's 688 importers: most name torch's or vllm's own modules, 0.107 -> 0.087 s)."""
    for after, ways in _import_statements(text):
        for _, spec in ways:
            if spec is not None:
                if wanted is None or wanted(spec):
                    yield "from", spec, _names_after(text, after)
            else:  # import a.b as c, d as e
                for m in _ALIASED.finditer(_names_after(text, after)):
                    dotted = _squeezed(m.group(1))
                    if wanted is None or wanted(dotted):
                        yield "import", dotted, ""


def _names_after(text: str, after: int) -> str:
    """What an import statement lists after its ``import`` word (which ends at ``after``):
    read in place up to the line's end, a comment or `;` (a parenthesised list: to its
    `)`), and again with the continuations joined where the line goes on."""
    names = _NAMES_AFTER.match(text, after)
    listed = names.group(1)
    if listed is None:
        listed = names.group(2)
        if listed.endswith(("\\", "\\\r")):
            names = _NAMES_AFTER.match(_joined(text[after : _import_end(text, after)]))
            listed = names.group(1) if names.group(1) is not None else names.group(2)
    return listed


def _squeezed(dotted: str) -> str:
    # `pkg . mod` is `pkg.mod`: Python allows spaces around the dots of a dotted name.
    return "".join(dotted.split()) if " " in dotted or "\t" in dotted or "\f" in dotted else dotted


def _import_statements(text: str) -> Iterator[tuple[int, list[tuple[int, str | None]]]]:
    """The import statements of ``text``, found from each ``import`` word (a handful per
    file, where a pattern would be tried at every line): (after, ways). ``after`` is
    where the word ends; ``ways`` are the places the statement may start, nearest first,
    each with the module it names: None for ``import ...``, ``spec`` for ``from spec
    import ...``.

    Every way is kept where only a parse could choose: a docstring's example counts, an
    import after ``;`` or a compound statement's ``:`` does, and a line before the word
    that ends in a backslash continues the statement unless that backslash ends a comment
    (both readings are kept). Continuations read as the spaces they are."""
    at = text.find("import")
    while at >= 0:
        after = at + 6
        if text[after : after + 1] in _AFTER_IMPORT:
            start = text.rfind("\n", 0, at) + 1
            if start > 1 and text[start - 2] in "\\\r" and _continued(text, start - 1):
                ways = [
                    w
                    for w in (_way(text, s, at) for s in _import_starts(text, at))
                    if w is not None
                ]
            else:  # on one line (most imports): no continuation to follow back
                way = _way(text, start, at)
                ways = [way] if way is not None else []
            if ways:
                yield after, ways
        at = text.find("import", after)


_AFTER_IMPORT = frozenset(
    (" ", "\t", "\f", "(", "\\", "*")
)  # what may follow the word in an import


def _way(text: str, start: int, at: int) -> tuple[int, str | None] | None:
    """(where the statement starts, the module it names: None for ``import``) if
    ``text[start:at]`` can be the head of an import statement, after any ``;`` or ``:``
    (``x = 1; import ...``, ``if TYPE_CHECKING: from ...``); else None."""
    raw = text[start:at]
    head = _joined(raw)
    cut = max(head.rfind(";"), head.rfind(":")) + 1 if ";" in head or ":" in head else 0
    head = head[cut:].strip(" \t\f")
    where = start + _raw_offset(raw, cut)
    if not head:
        return where, None
    if not head.startswith("from"):
        return None
    m = _FROM_PLAIN.fullmatch(head)  # `from pkg.mod`, the usual way
    if m is not None:
        return where, m.group(1)
    m = _FROM_SPEC.fullmatch(head)
    return (where, _squeezed(m.group(1))) if m is not None else None


def _import_starts(text: str, at: int) -> Iterator[int]:
    """Where the statement holding ``at`` may start: its line's start, then the start of
    each line before it that ends in a backslash (a continuation, unless in a comment)."""
    start = text.rfind("\n", 0, at) + 1
    yield start
    while start and _continued(text, start - 1):
        start = text.rfind("\n", 0, start - 1) + 1
        yield start


def _continued(text: str, nl: int) -> bool:
    """Does the line ending at ``text[nl]`` (its newline) end in a backslash?"""
    return text[nl - 1 : nl] == "\\" or text[nl - 2 : nl] == "\\\r"


def _import_end(text: str, i: int) -> int:
    """:func:`_statement_end` from ``i``, most often the end of the line without reading
    it character by character (no parenthesis, no continuation)."""
    nl = text.find("\n", i)
    if nl < 0:
        nl = len(text)
    if "(" in text[i:nl] or _continued(text, nl):
        return _statement_end(text, i)
    return nl


def _joined(part: str) -> str:
    """``part`` with its backslash continuations read as the spaces they are."""
    return part.replace("\\\r\n", " ").replace("\\\n", " ") if "\\" in part else part


def _raw_offset(raw: str, joined_offset: int) -> int:
    """Where in ``raw`` the character ``joined_offset`` of ``_joined(raw)`` lies."""
    if "\\" not in raw:
        return joined_offset
    i = j = 0
    while j < joined_offset and i < len(raw):
        for cont in ("\\\r\n", "\\\n"):
            if raw.startswith(cont, i):
                i += len(cont)
                break
        else:
            i += 1
        j += 1
    return i


def _statement_end(text: str, i: int) -> int:
    """Where the statement that goes on at ``i`` ends: a newline outside parentheses and
    not escaped by a backslash (a comment runs to its line's end)."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        elif c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
            continue
        elif c == "#":
            nl = text.find("\n", i)
            if nl < 0:
                return n
            i = nl
            continue
        elif c == "\n" and depth <= 0:
            return i
        i += 1
    return n


def _top_functions(text: str, whole_tree, keep) -> dict[str, tuple[int, int, ast.AST]]:
    """The top-level functions of ``text`` that ``keep(name, source from its def line)``
    accepts: name -> (first line with decorators, last line, Python's tree of it). Each
    is cut out by indentation and parsed alone; ``whole_tree()`` (Python's tree of the
    file, None where it does not parse) only where a kept cut does not parse."""
    from cgguard.static.driver import screen

    lines = split_lines(text)
    starts = list(accumulate(map(len, lines), initial=0))
    found: dict[str, tuple[int, int, ast.AST]] = {}
    for m in _TOP_DEF.finditer(text):
        i = bisect_right(starts, m.start()) - 1
        end = screen.block_end(lines, i)
        chunk = "".join(lines[i:end])
        if not keep(m.group(1), chunk):
            continue
        try:
            node = ast.parse(chunk).body[0]
        except (SyntaxError, ValueError, RecursionError, MemoryError, IndexError):
            node = None
        if (
            not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            or node.end_lineno != end - i
        ):
            return _top_functions_of(
                whole_tree(), lines, keep
            )  # a def in a string, or a cut that failed
        first = i
        while first and lines[first - 1].startswith("@"):
            first -= 1
        if first and lines[first - 1].startswith((")", "]", "}")):
            return _top_functions_of(whole_tree(), lines, keep)  # a decorator over several lines
        found.setdefault(node.name, (first + 1, end, node))
    return found


def _top_functions_of(
    tree: ast.Module | None, lines: list[str], keep
) -> dict[str, tuple[int, int, ast.AST]]:
    """:func:`_top_functions` from Python's tree of the whole file."""
    found: dict[str, tuple[int, int, ast.AST]] = {}
    for node in tree.body if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if node.name not in found and keep(
                node.name, "".join(lines[node.lineno - 1 : node.end_lineno])
            ):
                found[node.name] = (first, node.end_lineno, node)
    return found


_FROM_PLAIN = re.compile(r"from[ \t\f]+(\.*[\w.]*)[ \t\f]*")  # no spaces around its dots
# `from spec` before an import word, spaces allowed around the dots of ``spec``
# (`from . import x`, `from pkg . mod import x` are Python too).
_FROM_SPEC = re.compile(r"from[ \t\f]+((?:\.[ \t\f]*)*(?:\w+(?:[ \t\f]*\.[ \t\f]*\w+)*)?)[ \t\f]*")
_ALIASED = re.compile(r"(?:^|,)[ \t\f]*(\w+(?:[ \t\f]*\.[ \t\f]*\w+)*)[ \t\f]+as[ \t\f]+\w+")
_NAMES_AFTER = re.compile(r"[ \t\f]*(?:\(([^)]*)\)?|([^\n#;]*))")
_NAMES = re.compile(r"\w+")
_AS_NAME = re.compile(r"\bas\b\s+\w+")


def imports_a_helper(project: Project, text: str, path: str) -> bool:
    """Does ``path`` import (by its text, before any parse) a helper of the project: a
    top-level function holding a capture size that may return it, imported by name, or
    a module holding one (``import pkg.mod as m``, ``from pkg import mod``)? Each import
    statement is answered once per run for its folder (most files repeat the same few)."""
    folder = os.path.dirname(path)
    answers = project.__dict__.setdefault("_import_answers", {})
    tops = project.__dict__.setdefault(
        "_tops", {}
    )  # first part of a dotted name -> in the project?

    def held(spec: str) -> bool:
        if spec.startswith("."):
            return True
        top = spec.split(".", 1)[0]
        found = tops.get(top)
        if found is None:
            found = tops[top] = project.module_file(top) is not None or project.is_package(top)
        return found  # False: `from torch ...`, or vllm's own modules in a plugin

    for statement in _import_specs(text, held):
        key = (folder if statement[1].startswith(".") else "", statement)
        found = answers.get(key)
        if found is None:
            found = answers[key] = _statement_imports_a_helper(project, path, *statement)
        if found:
            return True
    return False


def _statement_imports_a_helper(
    project: Project, path: str, kind: str, spec: str, names_text: str
) -> bool:
    if kind == "import":
        target = project.module_file(spec)
        return target is not None and bool(project.returning(target))
    level = len(spec) - len(spec.lstrip("."))
    dotted = project.resolve(path, spec[level:] or None, level)
    if dotted is None:
        return False
    target = project.module_file(dotted)
    if target is None and not project.is_package(dotted):
        return False  # not a module of the project (vllm's own imports, in a fork's plugin)
    names = _NAMES.findall(_AS_NAME.sub("", names_text))
    if target is not None and not project.returning(target).isdisjoint(names):
        return True  # a helper imported by name (the only kind the analysis follows)
    # A submodule imported by name: only names the package's folder holds are looked up.
    for n in project.submodule_names(dotted, names):
        sub = project.module_file(f"{dotted}.{n}")
        if sub is not None and project.returning(sub):
            return True
    return False


_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
