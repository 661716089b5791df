"""Which modules of a project a count can reach a sink through, found before the modules that
name a source are parsed.

A module that names a source but none of the model's sink words holds a finding only where
another module of its project completes the flow:

- its code hands the count to a function of the project one of whose parameters reaches a
  sink (``set_profiling_blocks(cfg, n)``): the finding is at its argument, and its text
  names that function;
- a module that imports it takes a helper's return to a sink: the finding is at the
  helper's return, and that module's own flow reaches the sink, so its text names a sink
  word or such a function.

A member that carries the count to a sink is no such case: the finding is where the member
is read, in the module that names the sink. :class:`SinkReach` finds these functions
(*sink callees*) from the modules that name a sink word, to a fixpoint: the functions of
those modules one of whose parameters reaches a sink (the core's own summaries say), then
those of the modules that name one of them, and so on. Only modules whose text names a
sink word or a sink callee are lowered for it, and only their functions whose text names
one are summarised.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping

from cgguard.static.core import ir
from cgguard.static.core.fixpoint import Fixpoint
from cgguard.static.core.project import ModuleInfo, ProjectIndex
from cgguard.static.core.summaries import Summaries
from cgguard.static.core.walks import all_functions, block_stmts
from cgguard.static.core.words import mentions

# How many modules a re-exported name is followed through (as the core's call resolution).
MAX_REEXPORTS = 8
# A function's definition: ``def name`` (or ``async def``) first on its line.
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_DEF_BYTES = re.compile(rb"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
# A class's own methods that its name calls: ``Klass(n)`` runs them.
_CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__", "__call__"})


class SinkReach:
    """The sink callees of one project and model, and the modules that name a sink word or
    one of them (worked out once, when first asked)."""

    def __init__(
        self,
        index: ProjectIndex,
        summaries: Summaries,
        fixpoint: Fixpoint,
        sink_words: tuple[str, ...],
        names_a_sink: Callable[[bytes], bool],
        known: Mapping[str, bool] | None = None,
        on_derived: Callable[[SinkReach], None] | None = None,
        listed: Callable[[], list[str] | None] | None = None,
    ) -> None:
        self.index, self.summaries, self.fixpoint = index, summaries, fixpoint
        self.on_derived = on_derived  # told once the sink callees are worked out
        self.sink_words = sink_words
        self.names_a_sink = names_a_sink
        # A file's path -> whether its text names a sink word, where the caller read it
        # already (the byte screen of a run over the project's files): not read again.
        self.known: Mapping[str, bool] = {} if known is None else known
        # The modules naming a sink word as another process listed them from the same files
        # (None from it: they are read here).
        self.listed = listed
        self._callees: frozenset[str] | None = None
        self._sink_modules: list[str] | None = None  # paths of the modules naming a sink word
        self._reaching: list[str] = []  # and of those naming a sink word or a sink callee
        self._imports: dict[str, tuple[set[str], dict[str, set[str]]]] = {}  # see _imports_of
        self._defined: dict[str, set[str]] = {}  # a file's path -> the names it defines

    def sink_modules(self) -> list[str]:
        """The project's modules whose text names a sink word (read as bytes, not parsed,
        where neither :attr:`listed` nor :attr:`known` says)."""
        if self._sink_modules is None and self.listed is not None:
            self._sink_modules = self.listed()
        if self._sink_modules is None:
            self._sink_modules = []
            for path in self.index.project_files():
                named = self.known.get(path)
                if named is None:
                    data = self.index.read_bytes(path)
                    named = data is not None and self.names_a_sink(data)
                if named:
                    self._sink_modules.append(path)
        return self._sink_modules

    def callees(self) -> frozenset[str]:
        """The names of the project's functions one of whose parameters reaches a sink
        (a method's class's name too, where the method is its constructor)."""
        if self._callees is None:
            self._callees = frozenset(self.fixpoint.settle(self._derive))
            if self.on_derived is not None:
                self.on_derived(self)
        return self._callees

    def facts(self) -> tuple[frozenset[str], list[str], list[str]]:
        """What :meth:`callees` worked out, for another process's :meth:`adopt`."""
        return self.callees(), self.sink_modules(), self._reaching

    def adopt(self, facts: tuple[frozenset[str], list[str], list[str]]) -> None:
        """Take what another process worked out for the same project (:meth:`facts`)."""
        self._callees, self._sink_modules, self._reaching = facts

    def reaching(self) -> list[str]:
        """The modules whose text names a sink word or a sink callee."""
        self.callees()
        return self._reaching

    @property
    def derived(self) -> bool:
        """Whether the sink callees are worked out already (:meth:`callees`)."""
        return self._callees is not None

    def may_complete(self, data: bytes, path: str, dotted: str | None) -> bool:
        """Can another module complete a flow from a source in the file at ``path`` (these
        bytes, naming no sink word)? :meth:`called_by_a_sink_module` or
        :meth:`completed_through_callees`, in that order: the first needs no module parsed,
        the second the sink callees."""
        return self.called_by_a_sink_module(path, dotted, data) or self.completed_through_callees(
            data, path, dotted
        )

    def called_by_a_sink_module(
        self, path: str, dotted: str | None, data: bytes | None = None
    ) -> bool:
        """Can a module that names a sink word call a function of the file at ``path``
        (``dotted``: its module's name, None where no module can import it; ``data``: its
        bytes, where the caller has them)?"""
        key = os.path.abspath(path)
        return dotted is not None and self._called_from(self.sink_modules(), dotted, key, data)

    def completed_through_callees(self, data: bytes, path: str, dotted: str | None) -> bool:
        """Does the file at ``path`` (these bytes) name a sink callee, or can a module that
        names one call a function of it?"""
        if _names_one(data, self.callees()):
            return True
        key = os.path.abspath(path)
        return dotted is not None and self._called_from(self.reaching(), dotted, key, data)

    def _called_from(
        self, modules: list[str], dotted: str, key: str, data: bytes | None = None
    ) -> bool:
        """Can one of ``modules`` (other than the file at ``key``, the module ``dotted``)
        call a function of it? Where one imports the module itself (``import m as x``,
        ``from pkg import m``: ``x.f()``), or a name the file defines a function by from it
        (``from m import f``), or from a module or package that re-exports it from the
        file, followed through their import statements (their outlines), as the core's
        call resolution follows them."""
        others = [self._imports_of(m) for m in modules if m != key]
        if any(dotted in whole for whole, _ in others):
            return True
        defined = self._defined.get(key)
        if defined is None:
            data = self.index.read_bytes(key) if data is None else data
            defined = self._defined[key] = set() if data is None else _defined_names(data)
        for _, names in others:
            for name in names.keys() & defined:
                if any(self._reexports(module, name, dotted, 0) for module in names[name]):
                    return True
        return False

    def _reexports(self, module: str, name: str, dotted: str, depth: int) -> bool:
        """Does ``from module import name`` reach the module ``dotted``'s ``name``, through
        the import statements of the modules between?"""
        if module == dotted:
            return True
        file = self.index.module_file(module)
        outline = (
            None if file is None or depth >= MAX_REEXPORTS else self.index.outlines.of_file(file)
        )
        if outline is None:
            return False
        if dotted in outline.stars:
            return True
        specs = outline.imports.get(name, ())
        return any(
            m == dotted or (a == name and self._reexports(m, name, dotted, depth + 1))
            for m, a in specs
        )

    def _imports_of(self, path: str) -> tuple[set[str], dict[str, set[str]]]:
        """What the imports of the module at ``path`` bind, from its outline: the modules
        bound whole, and each name imported from a module, with the modules it is
        imported from."""
        found = self._imports.get(path)
        if found is None:
            outline = self.index.outlines.of_file(path)
            whole: set[str] = set()
            names: dict[str, set[str]] = {}
            for specs in [] if outline is None else outline.imports.values():
                for module, name in specs:
                    if name is None:
                        whole.add(module)
                    else:
                        whole.add(f"{module}.{name}")
                        names.setdefault(name, set()).add(module)
            whole.update(() if outline is None else outline.stars)
            found = self._imports[path] = (whole, names)
        return found

    def _derive(self) -> set[str]:
        self._reaching = []
        found: set[str] = set()
        words: set[str] = set(self.sink_words)
        read: dict[str, set[str]] = {}  # a module's path -> the words it was read for
        paths = self.sink_modules()  # those naming the words asked this round
        while True:
            new: set[str] = set()
            for path in paths:
                if path not in read:
                    self._reaching.append(path)
                done = read.setdefault(path, set())
                module = self.index.module_at(path)
                if module is None:
                    continue  # its own check reports it
                asked = words - done
                done |= asked
                new |= self._callees_in(module, asked, words)
            new -= words
            if not new:
                return found
            found |= new
            words |= new
            paths = [p for p in self.index.project_files() if _names_one_in(self.index, p, new)]

    def _callees_in(self, module: ModuleInfo, words: set[str], known: set[str]) -> set[str]:
        """Names of ``module``'s functions whose text names one of ``words`` and one of
        whose parameters reaches a sink; and of its module- and class-level bindings whose
        statement names one (an alias, a ``partial``: not summarised, taken as they are).
        ``known``: the sink words and the callees found so far, not asked again."""
        lines = self.index.lines(module)
        out: set[str] = set()
        for func in all_functions(module):
            if func.name in known or not mentions(lines, func.node.span, words):
                continue  # (a sink word's callee: a call of it names a sink word already)
            if self.summaries.sinks_a_param(func):
                out.add(func.name)
                if func.cls is not None and func.name in _CONSTRUCTORS:
                    out.add(func.cls.name)
        for stmt in _bindings(module):
            if _may_be_called(stmt.value) and mentions(lines, stmt.span, words):
                out.update(_bound_names(stmt))
        return out


def _bindings(module: ModuleInfo) -> Iterator[ir.Assign]:
    """Assignments at the module's and its classes' top level."""
    for stmt in block_stmts(module.tree.body):
        if isinstance(stmt, ir.Assign):
            yield stmt
        elif isinstance(stmt, ir.ClassDef):
            for inner in block_stmts(stmt.body):
                if isinstance(inner, ir.Assign):
                    yield inner


def _may_be_called(value: ir.Expr) -> bool:
    """Can the value a binding holds be called (an alias, a ``partial``, a lambda)? A constant
    or an f-string cannot: a string holding code that names a sink word (a test's ``OLD =
    "..."``) is no callee, and taken as one, every module naming the binding was parsed for
    the next round (a one-file run in a folder of test fixtures: 726 modules, 21 s)."""
    return not isinstance(value, ir.Const) and not (
        isinstance(value, ir.Opaque) and value.kind == "fstring"
    )


def _bound_names(stmt: ir.Assign) -> set[str]:
    names: set[str] = set()
    for target in stmt.targets:
        if isinstance(target, ir.Name):
            names.add(target.id)
        elif isinstance(target, ir.Attribute):
            names.add(target.attr)
    return names


def _defined_names(data: bytes) -> set[str]:
    """The names the text defines a function by, at any depth (a superset: ``def`` in a
    string counts too). Decoded, so a name with non-ASCII letters is whole."""
    if data.isascii():
        return {m.decode() for m in _DEF_BYTES.findall(data)}
    return set(_DEF.findall(data.decode("utf-8", "surrogateescape")))


def _names_one_in(index: ProjectIndex, path: str, words: set[str]) -> bool:
    data = index.read_bytes(path)
    return data is not None and _names_one(data, words)


def _names_one(data: bytes, words: frozenset[str] | set[str]) -> bool:
    """Do the bytes hold one of ``words`` whole (no name character either side)?"""
    for word in words:
        raw = word.encode()
        at = data.find(raw)
        while at != -1:
            end = at + len(raw)
            if (at == 0 or not _name_byte(data[at - 1])) and (
                end == len(data) or not _name_byte(data[end])
            ):
                return True
            at = data.find(raw, at + 1)
    return False


# The bytes of a name: ASCII letters, digits, ``_``, and every byte of a non-ASCII character.
_NAME_BYTES = frozenset(
    b"_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" + bytes(range(0x80, 0x100))
)


def _name_byte(byte: int) -> bool:
    return byte in _NAME_BYTES
