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
from collections.abc import Callable, Iterator

from cgguard.static.core import ir
from cgguard.static.core.fixpoint import Fixpoint
from cgguard.static.core.project import ModuleInfo, ProjectIndex
from cgguard.static.core.summaries import Summaries
from cgguard.static.core.walks import all_functions, block_stmts
from cgguard.static.core.words import mentions

# How many modules a re-exported name is followed through (as the core's call resolution).
MAX_REEXPORTS = 8
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
    ) -> None:
        self.index, self.summaries, self.fixpoint = index, summaries, fixpoint
        self.sink_words = sink_words
        self.names_a_sink = names_a_sink
        self._callees: frozenset[str] | None = None
        self._sink_modules: list[str] | None = None  # paths of the modules naming a sink word
        self._reaching: list[str] = []  # and of those naming a sink word or a sink callee
        self._bound: dict[str, set[str]] = {}  # see _bound_modules

    def sink_modules(self) -> list[str]:
        """The project's modules whose text names a sink word (read as bytes, not parsed)."""
        if self._sink_modules is None:
            self._sink_modules = []
            for path in self.index.project_files():
                data = self.index.read_bytes(path)
                if data is not None and self.names_a_sink(data):
                    self._sink_modules.append(path)
        return self._sink_modules

    def callees(self) -> frozenset[str]:
        """The names of the project's functions one of whose parameters reaches a sink
        (a method's class's name too, where the method is its constructor)."""
        if self._callees is None:
            self._callees = frozenset(self.fixpoint.settle(self._derive))
        return self._callees

    def reaching(self) -> list[str]:
        """The modules whose text names a sink word or a sink callee."""
        self.callees()
        return self._reaching

    def may_complete(self, data: bytes, path: str, dotted: str | None) -> bool:
        """Can another module complete a flow from a source in the file at ``path`` (these
        bytes, naming no sink word): can a module that names a sink word call a function of
        it (``dotted``: its module's name, None where no module can import it), or does it
        name a sink callee, or can a module that names one call a function of it? Asked in
        that order: the first needs no module parsed, the others the sink callees."""
        key = os.path.abspath(path)
        if dotted is not None and self._called_from(self.sink_modules(), dotted, key):
            return True
        if _names_one(data, self.callees()):
            return True
        return dotted is not None and self._called_from(self.reaching(), dotted, key)

    def _called_from(self, modules: list[str], dotted: str, key: str) -> bool:
        """Can one of ``modules`` (other than the file at ``key``) call a function of the
        module ``dotted``?"""
        return any(dotted in self._bound_modules(m) for m in modules if m != key)

    def _bound_modules(self, path: str) -> set[str]:
        """The modules whose functions the imports of the module at ``path`` may bind, as
        the core resolves a call (:class:`~.calls.Calls`): ``m`` for ``import m as x``
        (``x.f()``), ``pkg.m`` for ``from pkg import m`` (``m.f()``), and for ``from m
        import f`` the module ``m`` and every module it re-exports ``f`` from, followed
        through their import statements (their outlines), where its text can bind ``f`` to a
        function (:meth:`.project.ProjectIndex.may_bind_function`, the core's own test)."""
        found = self._bound.get(path)
        if found is None:
            found = self._bound[path] = set()
            outline = self.index.outlines.of_file(path)
            specs = [] if outline is None else [s for v in outline.imports.values() for s in v]
            seen: set[tuple[str, str | None]] = set()
            depth = 0
            while specs and depth <= MAX_REEXPORTS:
                more: list[tuple[str, str | None]] = []
                for module, name in specs:
                    if (module, name) in seen:
                        continue
                    seen.add((module, name))
                    if name is None:
                        found.add(module)
                        continue
                    found.add(f"{module}.{name}")
                    if not self.index.may_bind_function(module, name):
                        continue  # a class, a constant: the core calls no function of it
                    found.add(module)
                    file = self.index.module_file(module)
                    held = None if file is None else self.index.outlines.of_file(file)
                    if held is not None:
                        more.extend(held.imports.get(name, ()))
                specs, depth = more, depth + 1
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
            if mentions(lines, stmt.span, words):
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


def _bound_names(stmt: ir.Assign) -> set[str]:
    names: set[str] = set()
    for target in stmt.targets:
        if isinstance(target, ir.Name):
            names.add(target.id)
        elif isinstance(target, ir.Attribute):
            names.add(target.attr)
    return names


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
