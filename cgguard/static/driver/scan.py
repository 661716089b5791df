"""Check one source text: decide what libcst parses, run the rules, turn reports into findings.

Two paths give the same findings (a test compares them over all of vLLM):

- the *full* path parses the whole file with libcst and runs the rules on every scope;
- the *fast* path (default) first looks for the capture-size substrings every rule
  needs (most files have none and are never parsed), then cuts out the functions
  that contain them (by indentation; by Python's tree of the file when a needle sits
  outside any function). Python's own parser reads each cut function (syntax errors
  are reported as they always were) and its tree is the screen: libcst parses a
  function only when one of its scopes holds both a capture-size source and a sink
  (:func:`_may_hit`), and libcst is imported only then, on a thread with a large
  stack (:func:`deep`). Positions are resolved only on a function with a hit. A cut
  that does not parse while the file does falls back to the full path; a file with
  a finding must also parse whole.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from itertools import accumulate

from cgguard.static.driver.findings import Finding, Fix, TextEdit
from cgguard.static.driver.prefilter import TEXT_NEEDLES as _NEEDLES
from cgguard.static.driver.prefilter import might_match
from cgguard.static.driver.sourcetext import SourceText
from cgguard.static.rules.model import SINK_WORDS
from cgguard.static.rules.pytree import children, walk

_DEF = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]")


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# Characters str.splitlines() breaks at but Python's tokenizer does not.
_ODD_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """Physical lines with their endings, split only where Python's tokenizer splits."""
    if _ODD_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # same result, much faster
    return _LINE.findall(text)


_NEEDLE = re.compile("|".join(map(re.escape, _NEEDLES)))


def _needle_lines(text: str, lines: list[str]) -> list[int]:
    """1-based numbers of the lines holding a needle, ascending."""
    starts = list(accumulate(map(len, lines), initial=0))
    found: list[int] = []
    for m in _NEEDLE.finditer(text):
        n = bisect_right(starts, m.start())
        if not found or found[-1] != n:
            found.append(n)
    return found


def check_source(text: str, path: str, *, fast: bool = True) -> list[Finding]:
    """Findings for one file's text. Raises SyntaxError/ValueError/RecursionError on bad input.

    The file's own findings (fast or full path), and those of flows through helpers
    imported from the project's other modules (:mod:`.project`, the same for both paths).
    """
    own = _check_own(text, path, fast=fast)
    from cgguard.static.driver import project

    across = project.findings(text, path)
    if not across:
        return own
    return sorted(set(own) | set(across), key=Finding.sort_key)


def _check_own(text: str, path: str, *, fast: bool = True) -> list[Finding]:
    if fast and not might_match(text):
        return []
    lines = split_lines(text)
    needles = _needle_lines(text, lines)
    if not fast:
        validate(text, path)
        return deep(lambda: _full(text, lines, path, needles))
    chunks = _function_chunks(lines, needles)
    tree = None
    cut: dict[int, ast.AST] = {}  # start line index -> the function, when Python's tree cut the file
    if chunks is None:
        # A needle outside any function (a class field, a module constant): Python's
        # parser reads the whole file (reporting a syntax error, as before) and tells
        # exactly which functions to cut; libcst parses the whole file only when the
        # class or module scope holding such a needle could also hold a sink.
        tree = validate(text, path)
        chunks, scope_sink, cut = _ast_chunks(tree, needles)
        if scope_sink:
            return deep(lambda: _full(text, lines, path, needles))
    # The screen: only a function with a scope holding both a capture-size source and
    # a sink of its own can hold a finding; libcst parses those. Python's parser reads
    # every cut function (so the syntax errors cgguard reports stay those of every
    # function holding a capture size) and its tree decides.
    screened = []
    chunk_trees = []
    spans = _SpanTrees(lines, path)
    for start, end in chunks:
        chunk = "".join(lines[start:end])
        try:
            chunk_tree = cut.get(start) or validate(_parsable(lines, start, chunk), path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            validate(text, path)  # the whole file must fail too (else: a cut the chunk did not survive)
            return deep(lambda: _full(text, lines, path, needles))
        chunk_trees.append(chunk_tree)
        spans.keep(start, end, chunk_tree)
        if SINK_WORDS.search(chunk) and _may_hit(chunk_tree):
            screened.append((start, end))
    if _helper_flow_possible(text, lines, chunks, path, spans) or _hands_through(text, lines, path, chunk_trees, tree):
        # A helper's result may become a block count elsewhere: the rules need every caller.
        if tree is None:
            validate(text, path)
        return deep(lambda: _full(text, lines, path, needles))
    if not screened:
        return []
    return deep(lambda: _check_chunks(text, lines, path, needles, screened, tree))


def _ast_chunks(tree: ast.Module, needles: list[int]) -> tuple[list[tuple[int, int]], bool, dict[int, ast.AST]]:
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
        chain = _statements_at(tree, lineno, cache)
        func = next((n for n in chain if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if func is not None:
            chunks[func.lineno] = (func.lineno - 1, func.end_lineno)
            funcs[func.lineno - 1] = func
            continue
        scope = next((n for n in reversed(chain) if isinstance(n, ast.ClassDef) and n.lineno < lineno), tree)
        scopes[id(scope)] = scope
    if any(_source_and_sink(scope, []) for scope in scopes.values()):
        return [], True, {}
    return sorted(chunks.values()), False, funcs


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    from cgguard.static.driver.helperscreen import _mentions, _target_keys

    source = False
    tainted: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        positional = [*a.posonlyargs, *a.args]
        pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
        pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
        for param, default in pairs:
            if any(_is_source(n) for n in walk(default)):
                source = True
            if _mentions(default, tainted):
                tainted.add(param.arg)
    stores: list[tuple[list[str], ast.AST]] = []
    sinks: list[ast.AST] = []  # values that reach a sink
    stack = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            nested.append(node)
            continue
        source = source or _is_source(node)
        targets = value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [node.target], node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets, value = [node.optional_vars], node.context_expr
        elif isinstance(node, ast.keyword):
            if node.arg is None or _is_sink(node):
                sinks.append(node.value)  # a sink keyword, or a dict splatted into a call
        elif isinstance(node, ast.Call) and _is_sink(node):
            sinks += [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Dict):
            sinks += [v for k, v in zip(node.keys, node.values) if _is_sink_key(k)]
        if targets is not None:
            stores.append(([k for t in targets for k in _store_keys(t)], value))
            if any(_sink_target(t) for t in targets):
                sinks.append(value)
        stack.extend(children(node))
    if not (source and sinks):
        return False
    changed = True
    while changed:
        changed = False
        for keys, value in stores:
            if not set(keys) <= tainted and _mentions(value, tainted):
                tainted.update(keys)
                changed = True
    return any(_mentions(value, tainted) for value in sinks)


def _is_sink_key(key: ast.AST | None) -> bool:
    """A dict key or subscript naming a block count (``{"num_gpu_blocks_override": n}``)."""
    from cgguard.static.rules import model as vocab

    return isinstance(key, ast.Constant) and isinstance(key.value, str) and vocab.is_sink_name(key.value)


def _sink_target(target: ast.AST) -> bool:
    """An assignment target that receives a block count (unpacked targets too)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_sink_target(e) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _sink_target(target.value)
    if isinstance(target, ast.Subscript):
        return _is_sink_key(target.slice)
    return isinstance(target, (ast.Name, ast.Attribute)) and _is_sink(target)


def _store_keys(target: ast.AST):
    """The names and chains an assignment target taints: an element store taints its
    container (``sizes[0] = n`` -> ``sizes``)."""
    from cgguard.static.driver.helperscreen import _dotted, _target_keys

    if isinstance(target, ast.Subscript):
        base = _dotted(target.value)
        return [base] if base is not None else []
    if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
        elts = target.elts if not isinstance(target, ast.Starred) else [target.value]
        return [k for e in elts for k in _store_keys(e)]
    return list(_target_keys(target))


def _last(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _is_source(node: ast.AST) -> bool:
    from cgguard.static.rules import model as vocab

    # A value read (an assignment target is not a source).
    if isinstance(node, ast.Attribute):
        return node.attr in vocab.CAPTURE_SIZE_ATTRS and not isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.Subscript):
        return _last(node.value) in vocab.CAPTURE_LIST_NAMES and not isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == vocab.GETATTR and len(node.args) >= 2:
            name = node.args[1]
            return isinstance(name, ast.Constant) and vocab.is_capture_attr_name(name.value)
        return _last(node.func) == "max" and any(_last(a) in vocab.CAPTURE_LIST_NAMES for a in node.args)
    return False


def _is_sink(node: ast.AST) -> bool:
    from cgguard.static.rules import model as vocab

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
        return any(isinstance(k, ast.Constant) and isinstance(k.value, str) and vocab.is_sink_name(k.value)
                   for k in node.keys)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and vocab.is_sink_name(key.value)
    return False


def _statements_at(tree: ast.Module, lineno: int, cache: dict[int, list[int]]) -> list[ast.stmt]:
    """The statements holding line ``lineno``, outermost first (bisection, block by block)."""
    chain: list[ast.stmt] = []
    block: list[ast.stmt] | None = tree.body
    while block:
        starts = cache.get(id(block))
        if starts is None:
            starts = cache[id(block)] = [_first_line(stmt) for stmt in block]
        i = bisect_right(starts, lineno) - 1
        if i < 0 or block[i].end_lineno < lineno:
            break
        chain.append(block[i])
        block = _inner_block(block[i], lineno)
    return chain


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno


def _parsable(lines: list[str], start: int, chunk: str) -> str:
    """A function cut out of a file as a module: an indented one goes under ``if 1:``."""
    return ("if 1:\n" + chunk) if lines[start][:1] in (" ", "\t") else chunk


def _check_chunks(text, lines, path, needles, chunks, tree=None) -> list[Finding]:
    findings: list[Finding] = []
    src = SourceText(text, lines)
    whole = _WholeFile(text, lines, path, tree)
    for start, end in chunks:
        offset = start - (1 if lines[start][:1] in (" ", "\t") else 0)
        module = parse(_parsable(lines, start, "".join(lines[start:end])), path)  # validated already
        from cgguard.static.rules.engine import scope_hits

        positions = _Positions(module, offset)
        hits = scope_hits(
            module, whole.class_around(start + 1), _class_facts_at(lines, positions, whole.aliases), helpers=False
        )
        if hits:
            findings.extend(_findings(hits, module, positions, src, path, whole.none_checked))
    if findings:
        whole.check_parses()  # the full path would parse the whole file: a finding needs it to
    return sorted(set(findings), key=Finding.sort_key)


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
                self._trees[key] = ast.parse(_parsable(self.lines, start, "".join(self.lines[start:end])))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[key] = None
        return self._trees[key]


def _helper_flow_possible(text: str, lines: list[str], chunks, path: str, spans: _SpanTrees) -> bool:
    """Can a count returned by a helper reach a block count? (:mod:`.helperscreen`)"""
    from cgguard.static.driver.helperscreen import needs_full_parse

    def enclosing_function(i: int):
        start = i if _DEF.match(lines[i]) else _enclosing(lines, i, _DEF)
        return None if start is None else (start, _block_end(lines, start))

    def returns_capture(start: int, end: int) -> bool:
        # A function with no capture-size source of its own (Python's tree says so,
        # cheaply) returns none: libcst is not needed to know.
        tree = spans(start, end)
        if tree is not None and not any(_is_source(n) for n in walk(tree)):
            return False

        def work() -> bool:
            from cgguard.static.rules.engine import function_returns_capture

            return function_returns_capture(parse(_parsable(lines, start, "".join(lines[start:end])), path))

        return deep(work)  # the chunk was validated already

    return needs_full_parse(text, lines, chunks, enclosing_function, returns_capture, spans)


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
                cut = ast.parse(_parsable(lines, i, "".join(lines[i : _block_end(lines, i)])))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                whole = validate(text, path)
                yield from (n for n in walk(whole) if isinstance(n, _FUNCS) and n.name in names)
                return
            yield from (n for n in walk(cut) if isinstance(n, _FUNCS) and n.name == name)

    return hands_capture_through(text, chunk_trees, callees)


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


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


def parse(source: str, path: str):
    """libcst's module for ``source`` (already :func:`validate`-d); call it inside :func:`deep`."""
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SyntaxError(
            f"libcst cannot parse this: {exc.message}", (path, exc.raw_line, exc.raw_column + 1, None)
        ) from None


MAX_NESTING = 20_000
# Each level of a long chain needs one of these; fewer of them in a text, no deep chain.
_OPERATORS = re.compile(r"[-+*/%@&|^]| or | and ")
_DEEP_STACK = 1 << 30  # bytes of stack for the thread that parses and walks (virtual: only what is used counts)
_DEEP_RECURSION = 400_000


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


def deep(work):
    """Run ``work()`` on a thread with a large stack and recursion limit.

    libcst's parser and tree walks recurse once per nesting level; generated code
    nests far deeper than the main thread's stack allows. The calling thread waits.
    """
    import sys
    import threading

    from cgguard.static.driver import parallel

    if parallel.in_child() and "libcst" not in sys.modules:
        raise parallel.ParentOnly  # the parent parses (and imports libcst) for both
    result: list = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            error.append(exc)

    old_limit = sys.getrecursionlimit()
    thread = None
    # A smaller stack where the address space is limited (ulimit -v); the limit follows it.
    for stack, limit in ((_DEEP_STACK, _DEEP_RECURSION), (_DEEP_STACK // 8, _DEEP_RECURSION // 8)):
        try:
            old_size = threading.stack_size(stack)
        except (ValueError, RuntimeError):
            continue
        sys.setrecursionlimit(max(old_limit, limit))
        try:
            candidate = threading.Thread(target=run, name="cgguard-libcst", daemon=True)
            candidate.start()
            thread = candidate
            break
        except (RuntimeError, MemoryError):
            sys.setrecursionlimit(old_limit)
            continue
        finally:
            threading.stack_size(old_size)
    if thread is None:
        return work()  # no thread to be had: the default stack, and its limits
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


def _full(text: str, lines: list[str], path: str, needles: list[int]) -> list[Finding]:
    module = parse(text, path)
    if not needles:
        return []
    from cgguard.static.rules.engine import scope_hits

    positions = _Positions(module, 0)
    aliases = _Aliases(text, path)
    hits = scope_hits(module, None, _class_facts_at(lines, positions, aliases))
    findings = _findings(hits, module, positions, SourceText(text, lines), path) if hits else []
    return sorted(set(findings), key=Finding.sort_key)


# ---- positions and findings -------------------------------------------------------


class _Positions:
    """Node spans in file coordinates, resolved on first use (a hit) for the whole module."""

    def __init__(self, module, offset: int):
        self.module = module
        self.offset = offset
        self._ranges = None

    def __call__(self, node) -> tuple[int, int, int, int]:
        if self._ranges is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            try:
                self._ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
            except (RecursionError, KeyError) as exc:
                # libcst renders the module to find positions, recursing once per nesting
                # level: past the interpreter's limit (Python 3.12+ stops sooner) the
                # RecursionError may surface as a KeyError from its position bookkeeping.
                # Either way the file is too deeply nested, as a parse that fails is.
                raise RecursionError("too deeply nested to find positions") from exc
        r = self._ranges[node]
        return (r.start.line + self.offset, r.start.column, r.end.line + self.offset, r.end.column)


def _class_facts_at(lines: list[str], positions: _Positions, aliases):
    """Facts of a class parsed in the module, read from its libcst node when a fix asks
    (``lines`` and ``positions`` are kept for the callers' signature)."""
    from cgguard.static.rules import classfacts
    from cgguard.static.rules.flow import ClassFacts

    def facts(node) -> ClassFacts:
        return ClassFacts(node.name.value, lambda: classfacts.of_cst(node), aliases)

    return facts


class _Aliases:
    """The file's import aliases, from Python's tree of it, read once and only when asked."""

    def __init__(self, text: str, path: str, tree: ast.Module | None = None):
        self._text, self._path, self._tree = text, path, tree
        self._found: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        if self._found is None:
            from cgguard.static.rules.reach import import_aliases

            tree = self._tree if self._tree is not None else ast.parse(self._text, filename=self._path)
            self._found = import_aliases(tree)
        return self._found


class _WholeFile:
    """The whole file, parsed by Python's own parser only when a chunk has a hit.

    A finding needs the file to parse (as the full path would), and a method's
    class (outside the chunk) tells which request count the fix can use. Both come
    from this one cheap parse; the rules' analysis stays on libcst. Per-file facts
    are kept here so that many findings in one file cost linear time.
    """

    def __init__(self, text: str, lines: list[str], path: str, tree: ast.Module | None = None):
        self.text, self.lines, self.path = text, lines, path
        self._tree = tree
        self._starts: dict[int, list[int]] = {}
        self._facts: dict[int, object] = {}
        self.none_checked: dict[str, bool] = {}
        self._aliases: dict[str, str] | None = None

    def check_parses(self) -> None:
        if self._tree is None:
            self._tree = ast.parse(self.text, filename=self.path)

    def aliases(self) -> dict[str, str]:
        from cgguard.static.rules.reach import import_aliases

        self.check_parses()
        if self._aliases is None:
            self._aliases = import_aliases(self._tree)
        return self._aliases

    def class_around(self, lineno: int) -> "_LazyClassFacts":
        """Facts of the innermost class holding line ``lineno``, looked up on first use."""
        return _LazyClassFacts(self, lineno)

    def facts_at(self, lineno: int):
        """Facts of the innermost class holding ``lineno`` (found by bisection, block by block)."""
        from cgguard.static.rules.flow import ClassFacts

        self.check_parses()
        chain = _statements_at(self._tree, lineno, self._starts)
        found = next((n for n in reversed(chain) if isinstance(n, ast.ClassDef) and n.lineno < lineno), None)
        if found is None:
            return None
        facts = self._facts.get(id(found))
        if facts is None:
            from cgguard.static.rules import classfacts

            facts = self._facts[id(found)] = ClassFacts(found.name, lambda: classfacts.of_ast(found), self.aliases)
        return facts


def _inner_block(stmt: ast.stmt, lineno: int) -> list[ast.stmt] | None:
    """The statement list nested in ``stmt`` that holds line ``lineno``, if any."""
    blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(stmt, "handlers", ())]
    blocks += [c.body for c in getattr(stmt, "cases", ())]
    for block in blocks:
        if isinstance(block, list) and block and block[0].lineno <= lineno <= block[-1].end_lineno:
            return block
    return None


class _LazyClassFacts:
    """ClassFacts of the class around a chunk; nothing is parsed unless a fix asks."""

    def __init__(self, whole: _WholeFile, lineno: int):
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


def _findings(hits, module, positions: _Positions, src: SourceText, path: str, none_checked=None) -> list[Finding]:
    from cgguard.static.rules.base import Context
    from cgguard.static.rules.engine import reports, statement_lines

    ctx = Context(module, src.text, src.lines, positions, none_checked)
    out = []
    for report in reports(hits, ctx):
        line, col, end_line, end_col = ctx.span(report.hit.node)
        fix = None
        if report.fix is not None:
            rep = report.fix.replacement
            first, c0, last, c1 = ctx.span(rep.old)
            edit = TextEdit(src.char_offset(first, c0), src.char_offset(last, c1), ctx.code(rep.core))
            fix = Fix(report.fix.applicability, report.fix.description, (edit,))
        out.append(
            Finding(
                path=path,
                line=line,
                col=col + 1,
                end_line=end_line,
                end_col=end_col + 1,
                code=report.code,
                message=report.message,
                fix=fix,
                stmt_lines=statement_lines(report.hit.stmt, ctx),
            )
        )
    return out


def _indent(line: str) -> int | None:
    """Width of the leading whitespace, None for blank and comment-only lines."""
    stripped = line.lstrip(" \t")
    if not stripped.strip() or stripped.startswith("#"):
        return None
    return len(line) - len(stripped)


def _block_end(lines: list[str], start: int) -> int:
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
        end = _block_end(lines, start)
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
