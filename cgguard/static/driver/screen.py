"""Screen: decide on a file's text and Python's tree what libcst parses (a :class:`Plan`).

The second stage of a file's way through the driver (:mod:`.check`), after the byte
screen (:mod:`.prefilter`). Most files are settled here: no capture-size needle, or
no function holding both a capture-size source and a sink it can reach. The
*fast* plan cuts out the functions that hold a needle (by indentation; by Python's
tree of the file when a needle sits outside any function); Python's parser reads each
cut (syntax errors are reported as they always were) and its tree is the screen. The
plan is the whole file where a flow may cross functions (a helper's return, a member,
a parameter: :mod:`.helperscreen`) or a class or module scope may hold a finding, and
where a cut does not parse while the file does. Where only the rules can tell whether
a helper's return carries the capture size, the plan names those functions
(``confirm``) and :mod:`.check` asks the rules before parsing more.

Imports nothing from the stages after it (no libcst).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from cgguard.static.driver.helperscreen import (
    dotted_name,
    mentions_taint,
    sink_key,
    sink_target,
    target_keys,
)
from cgguard.static.driver.prefilter import TEXT_NEEDLES as _NEEDLES
from cgguard.static.driver.prefilter import might_match
from cgguard.static.driver.sourcetext import split_lines
from cgguard.static.rules import model as vocab
from cgguard.static.rules.model import mentions_sink_word
from cgguard.static.rules.pytree import (
    children,
    outermost_function,
    parameter_defaults,
    statements_at,
    walk,
)

_DEF = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]")


def _needle_lines(text: str, lines: list[str]) -> list[int]:
    """1-based numbers of the lines holding a needle, ascending. Each needle is found by
    ``str.find`` (a needle holds no line break, so an occurrence is on one line): the
    alternation of them all was tried at every position of the file."""
    starts = list(accumulate(map(len, lines), initial=0))
    found: set[int] = set()
    for needle in _NEEDLES:
        at = text.find(needle)
        while at >= 0:
            found.add(bisect_right(starts, at))
            at = text.find(needle, at + 1)
    return sorted(found)


def _ast_chunks(
    tree: ast.Module, needles: list[int]
) -> tuple[list[tuple[int, int]], bool, dict[int, ast.AST]]:
    """From Python's tree: the outermost functions holding a needle, as (start, end) line
    indexes, and whether a class or module scope holding a needle could hold a finding:
    its own code (outside its functions) names both a capture-size source (not just
    in a string) and a sink (a block count, a byte budget, a profiling builder); and
    each function's node by its start, so the screen needs no second parse of it."""
    chunks: dict[int, tuple[int, int]] = {}
    funcs: dict[int, ast.AST] = {}
    scopes: dict[int, ast.AST] = {}
    cache: dict[int, list[int]] = {}
    for lineno in needles:
        chain = statements_at(tree, lineno, cache)
        func = outermost_function(chain)
        if func is not None:
            chunks[func.lineno] = (func.lineno - 1, func.end_lineno)
            funcs[func.lineno - 1] = func
            continue
        scope = next(
            (n for n in reversed(chain) if isinstance(n, ast.ClassDef) and n.lineno < lineno), tree
        )
        scopes[id(scope)] = scope
    if any(_source_and_sink(scope, []) for scope in scopes.values()):
        return [], True, {}
    return sorted(chunks.values()), False, funcs


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SCOPE_KINDS = frozenset(_SCOPES)
_SOURCE_KINDS = frozenset({ast.Attribute, ast.Subscript, ast.Call})  # what _is_source can accept
_ONE_TARGET = frozenset({ast.AnnAssign, ast.AugAssign, ast.NamedExpr})
_LOOPS = frozenset({ast.For, ast.AsyncFor, ast.comprehension})
# Nodes the scope walk passes over: a name (an assignment target is read from its
# statement) and a constant, which hold nothing it looks for.
_BARE = frozenset({ast.Name, ast.Constant})


def _may_hit(tree: ast.Module) -> bool:
    """Does any scope in ``tree`` hold both a capture-size source and a sink of its own?

    The flow starts a taint only at a capture-size source of the scope it walks (or
    a parameter default) and reports only at a sink of that scope, so a function
    without such a scope cannot hold a finding. Checked on Python's tree: a
    superset of the rules' node matching (:mod:`cgguard.static.rules.nodes`).
    """
    scopes: list[ast.AST] = [tree]
    while scopes:
        if _source_and_sink(scopes.pop(), scopes):
            return True
    return False


def _source_and_sink(scope: ast.AST, nested: list[ast.AST]) -> bool:
    """Can a capture size of ``scope``'s own code reach a sink of it (nested functions and
    classes go to ``nested``)?

    A flow-insensitive over-approximation of the rules' flow in one scope, on Python's
    tree: a scope needs a capture-size source (:func:`_is_source`, or a parameter
    default holding one) and a sink (:func:`_is_sink`) whose value mentions a capture
    name or a name or chain assigned (in any order, through any expression) from one.
    Sanitizers are ignored and every sub-expression carries: never less than the rules
    find. Flows through other scopes (helpers, members, parameters) are the other
    screens' business (:mod:`.helperscreen`).
    """
    source = False
    tainted: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for param, default in parameter_defaults(scope):
            if any(_is_source(n) for n in walk(default)):
                source = True
            if mentions_taint(default, tainted):
                tainted.add(param.arg)
    stores: list[tuple[list[str], ast.AST]] = []
    sinks: list[ast.AST] = []  # values that reach a sink
    stack = list(scope.body)
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = node.__class__  # the parser makes no subclasses: a class test is isinstance here
        if kind in _BARE:
            continue
        if kind in _SCOPE_KINDS:
            nested.append(node)
            continue
        if not source and kind in _SOURCE_KINDS:
            source = _is_source(node)
        targets = value = None
        if kind is ast.Assign:
            targets, value = node.targets, node.value
        elif kind in _ONE_TARGET:
            if node.value is not None:
                targets, value = [node.target], node.value
        elif kind in _LOOPS:
            targets, value = [node.target], node.iter
        elif kind is ast.withitem:
            if node.optional_vars is not None:
                targets, value = [node.optional_vars], node.context_expr
        elif kind is ast.keyword:
            if node.arg is None or _is_sink(node):
                sinks.append(node.value)  # a sink keyword, or a dict splatted into a call
        elif kind is ast.Call:
            if _is_sink(node):
                sinks += [*node.args, *(k.value for k in node.keywords)]
        elif kind is ast.Dict:
            sinks += [v for k, v in zip(node.keys, node.values) if sink_key(k)]
        if targets is not None:
            stores.append(([k for t in targets for k in _store_keys(t)], value))
            if any(sink_target(t) for t in targets):
                sinks.append(value)
        push(children(node))
    if not (source and sinks):
        return False
    changed = True
    while changed:
        changed = False
        for keys, value in stores:
            if not set(keys) <= tainted and mentions_taint(value, tainted):
                tainted.update(keys)
                changed = True
    return any(mentions_taint(value, tainted) for value in sinks)


def _store_keys(target: ast.AST):
    """The names and chains an assignment target taints: an element store taints its
    container (``sizes[0] = n`` -> ``sizes``)."""
    if isinstance(target, ast.Subscript):
        base = dotted_name(target.value)
        return [base] if base is not None else []
    if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
        elts = target.elts if not isinstance(target, ast.Starred) else [target.value]
        return [k for e in elts for k in _store_keys(e)]
    return list(target_keys(target))


def _last(node: ast.AST) -> str | None:
    return (
        node.attr
        if isinstance(node, ast.Attribute)
        else node.id
        if isinstance(node, ast.Name)
        else None
    )


def _is_source(node: ast.AST) -> bool:
    # A value read (an assignment target is not a source).
    if isinstance(node, ast.Attribute):
        return node.attr in vocab.CAPTURE_SIZE_ATTRS and not isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.Subscript):
        return _last(node.value) in vocab.CAPTURE_LIST_NAMES and not isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.Call):
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == vocab.GETATTR
            and len(node.args) >= 2
        ):
            name = node.args[1]
            return isinstance(name, ast.Constant) and vocab.is_capture_attr_name(name.value)
        return _last(node.func) == "max" and any(
            _last(a) in vocab.CAPTURE_LIST_NAMES for a in node.args
        )
    return False


def _is_sink(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        callee = _last(node.func)
        return callee is not None and vocab.is_profiling_builder(callee)
    if isinstance(node, ast.keyword):
        return node.arg is not None and vocab.is_sink_name(node.arg)
    # A name or attribute receives a count only as an assignment target.
    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
        return vocab.is_sink_name(_last(node))
    # A string key of a dict that may be splatted into a call: {"num_blocks": n}, d["num_blocks"] = n.
    if isinstance(node, ast.Dict):
        return any(sink_key(k) for k in node.keys)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        return sink_key(node.slice)
    return False


class _SpanTrees:
    """Python's tree of each function cut out of one file, parsed once whichever screen
    asks (None where the cut does not parse: the screens then say "maybe")."""

    def __init__(self, lines: list[str], path: str):
        self.lines, self.path = lines, path
        self._trees: dict[tuple[int, int], ast.AST | None] = {}

    def keep(self, start: int, end: int, tree: ast.AST) -> None:
        self._trees[(start, end)] = tree

    def __call__(self, start: int, end: int) -> ast.AST | None:
        key = (start, end)
        if key not in self._trees:
            try:
                self._trees[key] = ast.parse(
                    parsable(self.lines, start, "".join(self.lines[start:end]))
                )
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[key] = None
        return self._trees[key]


def _helper_flow_possible(
    text: str, lines: list[str], chunks, spans: _SpanTrees
) -> bool | list[tuple[int, int]]:
    """Can a count returned by a helper reach a block count? True, or the helpers whose
    own return only the rules can judge (:mod:`.helperscreen`)."""
    from cgguard.static.driver.helperscreen import needs_full_parse

    def enclosing_function(i: int):
        start = i if _DEF.match(lines[i]) else _enclosing(lines, i, _DEF)
        return None if start is None else (start, block_end(lines, start))

    def may_hold_source(start: int, end: int) -> bool:
        # A function with no capture-size source of its own (Python's tree says so,
        # cheaply) returns none: the rules need not read it.
        tree = spans(start, end)
        return tree is None or any(_is_source(n) for n in walk(tree))

    return needs_full_parse(text, lines, chunks, enclosing_function, may_hold_source, spans)


def _hands_through(text: str, lines: list[str], path: str, chunk_trees, tree) -> bool:
    """Can a capture size pass through a parameter of a function of this file?"""
    from cgguard.static.driver.helperscreen import def_name, hands_capture_through

    def callees(names: set[str]):
        """Python's trees of the functions named ``names``: each cut out and read alone
        (the whole file only when Python's tree of it is at hand or a cut does not parse)."""
        if tree is not None:
            yield from (n for n in walk(tree) if isinstance(n, _FUNCS) and n.name in names)
            return
        for i, line in enumerate(lines):
            name = def_name(line) if "def" in line else None
            if name not in names:
                continue
            try:
                cut = ast.parse(parsable(lines, i, "".join(lines[i : block_end(lines, i)])))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                whole = validate(text, path)
                yield from (n for n in walk(whole) if isinstance(n, _FUNCS) and n.name in names)
                return
            yield from (n for n in walk(cut) if isinstance(n, _FUNCS) and n.name == name)

    return hands_capture_through(text, chunk_trees, callees)


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _indent(line: str) -> int | None:
    """Width of the leading whitespace, None for blank and comment-only lines."""
    stripped = line.lstrip(" \t")
    if not stripped.strip() or stripped.startswith("#"):
        return None
    return len(line) - len(stripped)


def block_end(lines: list[str], start: int) -> int:
    """Index after the last line of the block whose header is ``lines[start]``."""
    base = _indent(lines[start])
    end = start + 1
    last = start + 1
    while end < len(lines):
        ind = _indent(lines[end])
        if ind is not None:
            if ind <= base and end > start + 1 and not _is_continuation(lines, end):
                break
            last = end + 1
        end += 1
    return last


def _is_continuation(lines: list[str], i: int) -> bool:
    # A bracket closed at the opening line's indentation (`):` of a multi-line
    # signature, `)` of a call) continues that line; it opens no block.
    return lines[i].lstrip()[:1] in (")", "]", "}")


def _function_chunks(lines: list[str], needles: list[int]):
    """(start, end) of each outermost function holding a needle; None to parse all."""
    chunks: dict[int, tuple[int, int]] = {}
    covered = 0  # needles before this line index lie in a chunk already found
    for i in (n - 1 for n in needles):
        if i < covered:
            continue
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue  # a comment: nothing to parse for
        # A needle on a def line sits in its parameters or defaults, which no scope
        # analyses: the function itself is the chunk to parse.
        start = i if _DEF.match(line) else _enclosing(lines, i, _DEF)
        if start is None:
            return None
        if start in chunks:
            continue
        end = block_end(lines, start)
        if end <= i:
            return None
        chunks[start] = (start, end)
        covered = max(covered, end)
    # Nested chunks: keep only outermost functions (their walk covers the inner ones).
    spans = sorted(chunks.values(), key=lambda c: (c[0], -c[1]))
    kept: list[tuple[int, int]] = []
    for c in spans:
        if kept and c[0] < kept[-1][1]:
            continue
        kept.append(c)
    return kept


def _enclosing(lines: list[str], i: int, header: re.Pattern) -> int | None:
    """Index of the nearest line above ``i`` (by indentation) matching ``header``."""
    level = _indent(lines[i])
    if level is None:
        return None
    for j in range(i - 1, -1, -1):
        ind = _indent(lines[j])
        if ind is None or ind >= level or _is_continuation(lines, j):
            continue
        if header.match(lines[j]):
            return j
        level = ind
        if level == 0:
            return None
    return None


# ---- Python's own parser: the screen's, before libcst ----------------------------------


def parsable(lines: list[str], start: int, chunk: str) -> str:
    """A function cut out of a file as a module: an indented one goes under ``if 1:``."""
    return ("if 1:\n" + chunk) if lines[start][:1] in (" ", "\t") else chunk


def validate(source: str, path: str) -> ast.Module:
    """Python's own parser rules first (cheap next to libcst), on the calling thread.

    What it refuses raises its own SyntaxError or RecursionError, as ``cgguard``
    always reported them. libcst nests deeper than Python's tree (an ``a or b or ...``
    chain one level per operand, which Python keeps flat; Python 3.10 also accepts
    very long ``a + b + ...`` chains): code that would nest libcst's tree deeper than
    :data:`MAX_NESTING` levels is refused as too deeply nested, never handed to it.
    """
    tree = ast.parse(source, filename=path)
    if len(_OPERATORS.findall(source)) > MAX_NESTING and _libcst_depth(tree) > MAX_NESTING:
        raise RecursionError("too deeply nested for libcst")
    return tree


MAX_NESTING = 20_000


# Each level of a long chain needs one of these; fewer of them in a text, no deep chain.


_OPERATORS = re.compile(r"[-+*/%@&|^]| or | and ")


def _libcst_depth(tree: ast.AST) -> int:
    """How deep libcst's tree of this code nests, about: Python's depth, with each boolean
    operator chain counted one level per operand (iterative: the tree may be deep)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children(node))
    return deepest


# ---- the plan ---------------------------------------------------------------------------

NOTHING, FUNCTIONS, WHOLE = "nothing", "functions", "whole"


@dataclass
class Plan:
    """What libcst parses in one file, and what the later stages need of the screen.

    ``mode``: :data:`NOTHING` (no finding possible), :data:`FUNCTIONS` (the ``spans``
    of functions cut out of the file, as (first line index, end index)), or
    :data:`WHOLE`. ``confirm``: functions whose own return only the rules can judge;
    if one carries a capture size, the plan is the whole file (:meth:`whole`).
    ``tree``: Python's tree of the whole file where the screen read it (else None: a
    file with a finding is parsed whole by Python's parser at the end, as the whole
    plan would have).
    """

    mode: str
    text: str
    lines: list[str] = field(default_factory=list)
    needles: list[int] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    tree: ast.Module | None = None
    confirm: list[tuple[int, int]] = field(default_factory=list)

    def whole(self, path: str) -> Plan:
        """The whole file instead (Python's parser reads it first: its errors come first)."""
        tree = self.tree if self.tree is not None else validate(self.text, path)
        return Plan(WHOLE, self.text, self.lines, self.needles, tree=tree)


def plan(text: str, path: str, *, fast: bool = True) -> Plan:
    """The screen's decision for one file's text. Raises SyntaxError/ValueError/RecursionError
    where Python's parser refuses the file (or a function cut out of a file it refuses).

    ``fast=False``: the whole file whenever it holds a needle (the unoptimised path the
    tests compare the fast one with).
    """
    if fast and not might_match(text):
        return Plan(NOTHING, text)
    lines = split_lines(text)
    needles = _needle_lines(text, lines)
    if not fast:
        return Plan(WHOLE, text, lines, needles, tree=validate(text, path))
    chunks = _function_chunks(lines, needles)
    tree = None
    cut: dict[
        int, ast.AST
    ] = {}  # start line index -> the function, when Python's tree cut the file
    if chunks is None:
        # A needle outside any function (a class field, a module constant): Python's
        # parser reads the whole file (reporting a syntax error, as before) and tells
        # exactly which functions to cut; libcst parses the whole file only when the
        # class or module scope holding such a needle could also hold a sink.
        tree = validate(text, path)
        chunks, scope_sink, cut = _ast_chunks(tree, needles)
        if scope_sink:
            return Plan(WHOLE, text, lines, needles, tree=tree)
    # Only a function with a scope where a capture-size source can reach a sink of its
    # own can hold a finding; libcst parses those. Python's parser reads every cut
    # function (so the syntax errors cgguard reports stay those of every function
    # holding a capture size) and its tree decides.
    screened = []
    chunk_trees = []
    spans = _SpanTrees(lines, path)
    has_sink_word = mentions_sink_word(
        text
    )  # no sink word in the file: none in any of its functions
    for start, end in chunks:
        chunk = "".join(lines[start:end])
        try:
            chunk_tree = cut.get(start) or validate(parsable(lines, start, chunk), path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # The whole file must fail too (else: a cut the chunk did not survive).
            return Plan(WHOLE, text, lines, needles, tree=validate(text, path))
        chunk_trees.append(chunk_tree)
        spans.keep(start, end, chunk_tree)
        if has_sink_word and mentions_sink_word(chunk) and _may_hit(chunk_tree):
            screened.append((start, end))
    if not has_sink_word:
        # No sink anywhere in the file: no flow through a helper, a member or a parameter
        # of it can end in one here (one that leaves for another module is the project's
        # business, :mod:`.project`). 14 of vLLM's 41 files holding a capture size.
        return Plan(NOTHING, text, lines, needles, tree=tree)
    helpers = _helper_flow_possible(text, lines, chunks, spans)
    if helpers is True or _hands_through(text, lines, path, chunk_trees, tree):
        # A helper's result may become a block count elsewhere: the rules need every caller.
        return Plan(
            WHOLE, text, lines, needles, tree=tree if tree is not None else validate(text, path)
        )
    if not screened and not helpers:
        return Plan(NOTHING, text, lines, needles, tree=tree)
    return Plan(FUNCTIONS, text, lines, needles, spans=screened, tree=tree, confirm=list(helpers))
