"""Analyse: run the rules (:mod:`cgguard.static.rules.engine`) over the modules
:mod:`.parse` made -- a whole file, or the functions the screen cut out of it -- with
the facts of the classes around them (a runner offers ``self.max_num_reqs``).

The fourth stage (:mod:`.check`). Class facts come from the tree that is at hand:
libcst's node where the class was parsed, Python's tree of the whole file where
only a method was (read once, and only when a fix asks). Imports nothing from the
stages after it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cgguard.static.driver.parse import Piece, Positions
from cgguard.static.driver.screen import WHOLE, Plan
from cgguard.static.rules.pytree import statements_at


def class_facts_at(aliases):
    """Facts of a class parsed in the module, read from its libcst node when a fix asks;
    ``aliases()`` reads the file's import aliases (a base imported under another name)."""
    from cgguard.static.rules import classfacts
    from cgguard.static.rules.flow import ClassFacts

    def facts(node) -> ClassFacts:
        return ClassFacts(node.name.value, lambda: classfacts.of_cst(node), aliases)

    return facts


class Aliases:
    """The file's import aliases, from Python's tree of it, read once and only when asked."""

    def __init__(self, text: str, path: str, tree: ast.Module | None = None):
        self._text, self._path, self._tree = text, path, tree
        self._found: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        if self._found is None:
            from cgguard.static.rules.reach import import_aliases

            tree = (
                self._tree if self._tree is not None else ast.parse(self._text, filename=self._path)
            )
            self._found = import_aliases(tree)
        return self._found


class WholeFile:
    """The whole file, parsed by Python's own parser only when a chunk has a hit.

    A finding needs the file to parse (as the full path would), and a method's
    class (outside the chunk) tells which request count the fix can use. Both come
    from this one cheap parse; the rules' analysis stays on libcst. Per-file facts
    are kept here so that many findings in one file cost linear time.
    """

    def __init__(
        self, text: str, lines: list[str], path: str, tree: ast.Module | None = None, aliases=None
    ):
        self.text, self.lines, self.path = text, lines, path
        self._tree = tree
        self._read_aliases = (
            aliases  # a reader of the file's aliases (the project's: bases across modules)
        )
        self._starts: dict[int, list[int]] = {}
        self._facts: dict[int, object] = {}
        self.none_checked: dict[str, bool] = {}
        self._aliases: dict[str, str] | None = None

    def check_parses(self) -> None:
        if self._tree is None:
            self._tree = ast.parse(self.text, filename=self.path)

    def aliases(self) -> dict[str, str]:
        if self._read_aliases is not None:
            return self._read_aliases()
        from cgguard.static.rules.reach import import_aliases

        self.check_parses()
        if self._aliases is None:
            self._aliases = import_aliases(self._tree)
        return self._aliases

    def class_around(self, lineno: int) -> _LazyClassFacts:
        """Facts of the innermost class holding line ``lineno``, looked up on first use."""
        return _LazyClassFacts(self, lineno)

    def facts_at(self, lineno: int):
        """Facts of the innermost class holding ``lineno`` (found by bisection, block by block)."""
        from cgguard.static.rules.flow import ClassFacts

        self.check_parses()
        chain = statements_at(self._tree, lineno, self._starts)
        found = next(
            (n for n in reversed(chain) if isinstance(n, ast.ClassDef) and n.lineno < lineno), None
        )
        if found is None:
            return None
        facts = self._facts.get(id(found))
        if facts is None:
            from cgguard.static.rules import classfacts

            facts = self._facts[id(found)] = ClassFacts(
                found.name, lambda: classfacts.of_ast(found), self.aliases
            )
        return facts


class _LazyClassFacts:
    """ClassFacts of the class around a chunk; nothing is parsed unless a fix asks."""

    def __init__(self, whole: WholeFile, lineno: int):
        self._whole, self._lineno = whole, lineno
        self._facts = None
        self._resolved = False

    def _get(self):
        if not self._resolved:
            self._facts = self._whole.facts_at(self._lineno)
            self._resolved = True
        return self._facts

    @property
    def name(self) -> str | None:
        facts = self._get()
        return facts.name if facts else None

    @property
    def is_runner(self) -> bool:
        facts = self._get()
        return facts.is_runner if facts else False

    @property
    def self_attrs(self) -> frozenset[str]:
        facts = self._get()
        return facts.self_attrs if facts else frozenset()


@dataclass
class Analysed:
    """The rules' hits in one piece, with what reporting them needs."""

    piece: Piece
    positions: Positions
    hits: list
    none_checked: dict[str, bool] | None = None
    whole: WholeFile | None = (
        None  # the file around a cut function (Python's tree of it, when read)
    )


def hits(plan: Plan, pieces: list[Piece], path: str, imported=None) -> list[Analysed]:
    """The rules' hits in each piece of ``plan`` (call it inside :func:`.parse.deep`).

    A whole file: every scope, helpers followed to their callers. Functions cut out
    of a file: each alone (its callers are not in view: the screen sent any file
    where that matters whole), its class's facts read from Python's tree of the file.
    ``imported``: what calls of functions imported from the project's other modules hand
    through to their result (:func:`.project.imported_params`).
    """
    from cgguard.static.rules.engine import scope_hits

    out: list[Analysed] = []
    if plan.mode == WHOLE:
        (piece,) = pieces
        positions = Positions(piece.module, 0)
        aliases = Aliases(plan.text, path, plan.tree)
        found = (
            scope_hits(piece.module, None, class_facts_at(aliases), imported=imported)
            if plan.needles
            else []
        )
        return [Analysed(piece, positions, found)]
    whole = WholeFile(plan.text, plan.lines, path, plan.tree)
    for piece in pieces:
        positions = Positions(piece.module, piece.offset)
        found = scope_hits(
            piece.module,
            whole.class_around(piece.start + 1),
            class_facts_at(whole.aliases),
            helpers=False,
            imported=imported,
        )
        out.append(Analysed(piece, positions, found, whole.none_checked, whole))
    return out


def check_parses(analysed: list[Analysed]) -> None:
    """A file with a finding in a cut function must parse whole, as the whole plan would
    have it (Python's tree of the file: read once, maybe already for a class's facts)."""
    for a in analysed:
        if a.whole is not None:
            a.whole.check_parses()
            return


def returns_capture(piece: Piece) -> bool:
    """Does the function of ``piece`` (cut out alone) return a capture-size count?"""
    from cgguard.static.rules.engine import function_returns_capture

    return function_returns_capture(piece.module)
