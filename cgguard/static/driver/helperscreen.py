"""Does a file need the full parse because a helper's result may reach a block count?

The fast path parses only functions that hold a capture size and a block-count
word. A helper (``def _blocks(self): return <capture size> or 1``) has the first
and not the second; its caller (``min_blocks = self._blocks()``) the second and
not the first. The rules follow such flows across functions (the finding sits at
the helper's return when every use of it is a block count, at the call
otherwise), which needs every function of the file: this screen says when the
fast path must hand the file to the full path.

Exact in the direction that matters (it may send a file to the full parse that
did not need it, never the other way): a helper flow needs

1. a function holding a needle whose own ``return`` carries the capture size
   (Python's tree says "maybe"; the rules decide, after this screen: the screen's
   plan names such functions in ``confirm`` and :mod:`.check` asks), and
2. a use of its name inside a function whose text holds a block-count word, or
   inside a function that returns a value (a helper of a helper), and so on.

Part of the screen stage (:mod:`.screen` calls it; it never calls back). Imports
nothing heavy: callers pass Python's trees.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from itertools import accumulate

from cgguard.static.driver.sourcetext import word_char, word_matches
from cgguard.static.rules import model
from cgguard.static.rules.model import (
    CAPTURE_LIST_NAMES,
    CAPTURE_SIZE_ATTRS,
    is_sink_name,
    mentions_sink_word,
)
from cgguard.static.rules.pytree import children, parameter_defaults, statements, walk

_DEF_NAME = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")
# `return <value>` (not a bare `return`), at the start of a line's code.
_RETURN_VALUE = re.compile(r"^[ \t]*return[ \t]*[^\s#;]", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z_]\w*")

Span = tuple[int, int]  # (first line index, index after the last line)


def def_name(line: str) -> str | None:
    m = _DEF_NAME.match(line)
    return m.group(1) if m else None


_DEF_WORD = re.compile(r"def[ \t]+(\w+)")


def defined_names(text: str) -> set[str]:
    """Names after the word ``def`` anywhere in ``text`` (a superset of its functions).
    Found from the literal ``def``: a pattern starting with ``\\b`` is tried at every
    position (7 ms on vLLM's model runner, against 0.4 ms)."""
    return {m.group(1) for m in word_matches(_DEF_WORD, text)}


def needs_full_parse(
    text: str,
    lines: list[str],
    chunks: list[Span],
    enclosing_function: Callable[[int], Span | None],
    returns_capture: Callable[[int, int], bool],
    tree_of: Callable[[int, int], ast.AST | None],
) -> bool | list[Span]:
    """True when a helper's result may reach a block count (see the module doc); else the
    helpers whose return the rules must read to know (``returns_capture`` is Python's
    tree's cheap "maybe"; an empty list: none can).

    ``chunks`` are the functions holding a needle; ``enclosing_function(i)`` the span
    of the function around line index ``i`` (None at module or class level);
    ``tree_of(start, end)`` Python's tree of a span (None where it does not parse),
    each span parsed once per file whichever screen asks.
    """
    candidates: dict[str, Span] = {}
    members: set[str] = set()  # attributes set on self from a capture-size count
    for start, end in chunks:
        name = def_name(lines[start])
        if name is None:
            continue
        body = "".join(lines[start:end])
        # A helper only where Python's tree says its return may carry the capture size
        # (the last test below, made first: most functions returning a value do not).
        if (
            "return" in body
            and _RETURN_VALUE.search(body)
            and may_return_capture(tree_of(start, end))
        ):
            candidates.setdefault(name, (start, end))
        if "self." in body:
            for attr in stored_members(tree_of(start, end), walrus=":=" in body):
                members.add(attr)
                candidates.setdefault(attr, (start, end))
    if not candidates:
        return []
    starts = list(accumulate(map(len, lines), initial=0))
    functions: dict[Span, tuple[str | None, bool, bool]] = {}

    def function_at(i: int) -> tuple[str | None, bool, bool] | None:
        """(name, holds a block-count word, returns a value) of the function around line i."""
        span = enclosing_function(i)
        if span is None:
            return None  # module or class level: never a block count
        found = functions.get(span)
        if found is None:
            body = "".join(lines[span[0] : span[1]])
            found = functions[span] = (
                def_name(lines[span[0]]),
                mentions_sink_word(body),
                _RETURN_VALUE.search(body) is not None,
            )
        return found

    def positions(names: set[str]):
        """(name, offset) of each occurrence of a name in ``names`` as a whole word."""
        if len(names) > 64:  # many names: every word, looked up (linear in the text)
            for m in _WORD.finditer(text):
                if m.group() in names:
                    yield m.group(), m.start()
            return
        for name in sorted(names):
            at = text.find(name)
            while at >= 0:
                end = at + len(name)
                if not (at and word_char(text[at - 1])) and not (
                    end < len(text) and word_char(text[end])
                ):
                    yield name, at
                at = text.find(name, end)

    def uses(names: set[str]):
        """(name, line index) of each use of a name in ``names``, its own def line excluded."""
        for word, at in positions(names):
            i = bisect_right(starts, at) - 1
            if def_name(lines[i]) != word:
                yield word, i

    # Which helpers' results reach a function with a block-count word, directly or through
    # functions returning them (each name carries the helpers it may return).
    carries: dict[str, set[str]] = {n: {n} for n in candidates}
    reaching: set[str] = set()
    frontier = set(candidates)
    while frontier:
        grown: set[str] = set()
        for name, i in uses(frontier):
            found = function_at(i)
            if found is None:
                continue
            caller, sink, returns = found
            if sink:
                reaching |= carries[name]
            elif returns and caller is not None:
                mine = carries.setdefault(caller, set())
                if not carries[name] <= mine:
                    mine |= carries[name]
                    grown.add(caller)
        frontier = grown
    # A member set from a capture size (Python's tree said so) that a function may hand
    # to a sink (Python's tree again, flow-insensitive): the rules follow it across methods.
    if reaching & members:
        asked: set[Span] = set()  # each function once, however often it uses the members
        for _name, i in uses(reaching & members):
            span = enclosing_function(i)
            if span is None or span in asked:
                continue
            asked.add(span)
            if member_may_sink(tree_of(*span), reaching & members):
                return True
    # Text first, then Python's tree (a cheap over-approximation); the rules' own parse
    # decides (the caller's ``confirm``): does the helper's own return carry the capture size?
    return [
        candidates[n]
        for n in sorted(reaching)
        if may_return_capture(tree_of(*candidates[n])) and returns_capture(*candidates[n])
    ]


def may_return_capture(tree: ast.AST | None) -> bool:
    """Can a function of ``tree`` (a cut function) return a capture-size count?

    A flow-insensitive over-approximation of the rules' flow on Python's tree: names
    and attribute chains assigned (in any order, unpacked or chained, walrus too) from
    an expression mentioning a capture-size name or such a name are tainted; so are
    parameters whose default mentions one. False only when no ``return`` value of the
    function's own code mentions either, which the flow then cannot taint.
    """
    if tree is None:
        return True  # the parse that follows decides
    # Functions are statements: their walk skips the expressions (most of the nodes).
    nodes = (
        (tree, *statements(tree))
        if isinstance(tree, (ast.FunctionDef, ast.AsyncFunctionDef))
        else statements(tree)
    )
    return any(
        _function_may_return(node)
        for node in nodes
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


_CAPTURE_NAMES = CAPTURE_SIZE_ATTRS | CAPTURE_LIST_NAMES


def stored_members(tree: ast.AST | None, walrus: bool = True) -> set[str]:
    """Attributes a function of ``tree`` (a cut function) sets on ``self`` from a value that
    may carry a capture-size count (not a list of them): candidates for the rules' member flow.
    ``walrus``: the text holds ``:=`` (else assignments are statements, and only statements
    are walked)."""
    if tree is None:
        return set()  # the chunk's own parse reports it
    out: set[str] = set()
    for func in statements(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        tainted: set[str] = set()
        stores: list[tuple[list[ast.AST], ast.AST]] = []
        for node in walk(func) if walrus else statements(func):
            if isinstance(node, ast.Assign):
                stores.append((node.targets, node.value))
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                stores.append(([node.target], node.value))
        if not any(_self_target(t) for targets, _ in stores for t in targets):
            continue  # sets nothing on self: no member to find
        _taint_targets(stores, tainted, _counts)
        out |= {
            key.split(".", 1)[1]
            for key in tainted
            if key.startswith("self.") and key.count(".") == 1
        }
    return out


def sink_key(key: ast.AST | None) -> bool:
    """A dict key or subscript naming a block count (``{"num_gpu_blocks_override": n}``)."""
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and is_sink_name(key.value)


def sink_target(target: ast.AST) -> bool:
    """An assignment target that receives a block count (unpacked targets too):
    a name or attribute named like one, ``d["num_gpu_blocks_override"]``."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(sink_target(e) for e in target.elts)
    if isinstance(target, ast.Starred):
        return sink_target(target.value)
    if isinstance(target, ast.Subscript):
        return sink_key(target.slice)
    last = (
        target.attr
        if isinstance(target, ast.Attribute)
        else target.id
        if isinstance(target, ast.Name)
        else None
    )
    return last is not None and is_sink_name(last)


def _self_target(target: ast.AST) -> bool:
    """Does an assignment target set an attribute of ``self`` (unpacked targets too)?"""
    return any(key.startswith("self.") for key in target_keys(target))


def member_may_sink(tree: ast.AST | None, members: set[str]) -> bool:
    """Can the function of ``tree`` (a cut function) hand ``self.<member>`` to a block-count
    sink (or return it)? Flow-insensitive, on Python's tree: an over-approximation of the rules."""
    if tree is None:
        return True  # the parse that follows decides
    tainted = {f"self.{m}" for m in members}

    def mentions(expr: ast.AST | None) -> bool:
        return expr is not None and any(
            isinstance(n, (ast.Name, ast.Attribute)) and dotted_name(n) in tainted
            for n in _value_nodes(expr)
        )

    stores: list[tuple[list[ast.AST], ast.AST]] = []
    nodes = list(walk(tree))  # walked once: the stores now, the sinks below
    for node in nodes:
        if isinstance(node, ast.Assign):
            stores.append((node.targets, node.value))
        elif (
            isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.AugAssign))
            and node.value is not None
        ):
            stores.append(([node.target], node.value))
    changed = True
    while changed:
        changed = False
        for targets, value in stores:
            if mentions(value):
                for target in targets:
                    for key in target_keys(target):
                        if key not in tainted:
                            tainted.add(key)
                            changed = True
    for targets, value in stores:
        if mentions(value) and any(sink_target(t) for t in targets):
            return True
    for node in nodes:
        if isinstance(node, ast.Return) and mentions(node.value):
            return True
        if (
            isinstance(node, ast.keyword)
            and (node.arg is None or model.is_sink_name(node.arg))
            and mentions(node.value)
        ):
            return True
        if isinstance(node, ast.Dict) and any(
            sink_key(k) and mentions(v) for k, v in zip(node.keys, node.values)
        ):
            return True
        if isinstance(node, ast.Call):
            callee = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", "")
            )
            if model.is_profiling_builder(callee) and any(mentions(a) for a in node.args):
                return True
    return False


# Calls whose value is their arguments' (magnitude-keeping calls, min/max, getattr).
_CARRYING_CALLS = model.PASSTHROUGH_CALLS | {"min", "max", model.GETATTR}


def _value_nodes(expr: ast.AST):
    """The nodes whose value may flow into ``expr``'s value as the rules follow it: calls
    other than magnitude-keeping ones, ``min``/``max`` and ``getattr`` end a flow
    (``torch.zeros(n)`` is a buffer, not a count)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Call):
            callee = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", None)
            )
            if callee not in _CARRYING_CALLS:
                stack.append(node.func)
                continue
        stack.extend(children(node))


def _counts(expr: ast.AST, tainted: set[str]) -> bool:
    """May ``expr`` carry a capture-size *count* (a size, an element of the list, a tainted name)?"""
    for node in _value_nodes(expr):
        if isinstance(node, ast.Attribute):
            if node.attr in CAPTURE_SIZE_ATTRS or dotted_name(node) in tainted:
                return True
        elif (
            isinstance(node, ast.Name)
            and node.id in tainted
            or isinstance(node, ast.Constant)
            and node.value in CAPTURE_SIZE_ATTRS
            or isinstance(node, (ast.Subscript, ast.Call))
            and any(
                isinstance(n, (ast.Attribute, ast.Name))
                and (dotted_name(n) or "").rsplit(".", 1)[-1] in CAPTURE_LIST_NAMES
                for n in walk(node)
            )
            and (isinstance(node, ast.Subscript) or getattr(node.func, "id", None) == "max")
        ):
            return True
    return False


_PASSED_OVER = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Name, ast.Constant}
)


def _function_may_return(func: ast.AST) -> bool:
    assignments: list[tuple[list[ast.AST], ast.AST]] = []
    returns: list[ast.AST] = []
    stack = list(func.body)
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = node.__class__  # the parser makes no subclasses: a class test is isinstance here
        if kind in _PASSED_OVER:
            continue  # its own scope, or a name or constant (nothing below it)
        if kind is ast.Return:
            if node.value is not None:
                returns.append(node.value)
        elif kind is ast.Assign:
            assignments.append((node.targets, node.value))
        elif (kind is ast.AnnAssign or kind is ast.NamedExpr) and node.value is not None:
            assignments.append(([node.target], node.value))
        push(children(node))
    if not returns:
        return False
    tainted: set[str] = set()
    for param, default in parameter_defaults(func):
        if mentions_taint(default, tainted):
            tainted.add(param.arg)
    _taint_targets(assignments, tainted, mentions_taint)
    return any(mentions_taint(value, tainted) for value in returns)


def returns_capture_alone(func: ast.AST) -> bool:
    """May ``func``, read on its own, return a capture-size count? The screen for a helper
    of another module, whose summary the rules take from that one function parsed alone
    (:meth:`cgguard.static.driver.projectindex.Project.function_helper`): there a call of any
    other function ends a value, as in :func:`_reads` with no function defined."""
    seeds = {p.arg for p, d in parameter_defaults(func) if _carries(d, set(), set())}
    return _return_carries(func, seeds, set())


def mentions_taint(expr: ast.AST, tainted: set[str]) -> bool:
    """Does ``expr`` read a capture size (by name, list name or ``getattr`` constant)
    or one of the ``tainted`` dotted names?"""
    for node in walk(expr):
        if isinstance(node, ast.Attribute):
            if node.attr in _CAPTURE_NAMES or dotted_name(node) in tainted:
                return True
        elif isinstance(node, ast.Name) and (node.id in _CAPTURE_NAMES or node.id in tainted):
            return True
        elif isinstance(node, ast.Constant) and node.value in CAPTURE_SIZE_ATTRS:
            return True  # getattr(x, "max_capture_size", ...)
    return False


def target_keys(target: ast.AST):
    """The dotted names an assignment target stores to (tuples and starred unpacked)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from target_keys(element)
    elif isinstance(target, ast.Starred):
        yield from target_keys(target.value)
    else:
        key = dotted_name(target)
        if key is not None:
            yield key


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# ---- arguments handed through a helper's parameter (rules.paramflow) ---------------------


def hands_capture_through(
    text: str, chunk_trees: list[ast.AST], callees: Callable[[set[str]], Iterable[ast.AST]]
) -> bool:
    """Can a function holding a needle pass a capture-size count to a function of this
    file whose parameter reaches its return (``self._blocks_for(<capture size>)``)?

    The rules follow such calls only on the whole module; an over-approximation of
    them on Python's tree (flow-insensitive; values pass only through what the rules
    follow: operators, magnitude-keeping calls, ``min``/``max`` and calls of functions
    of the file), so the fast path hands such a file to the full path. ``callees(names)``
    gives Python's trees of the file's functions so named.
    """
    defined = defined_names(text)
    if not defined:
        return False
    called: set[str] = set()
    for tree in chunk_trees:
        called |= called_with_capture(tree, defined)
    if not called:
        return False
    return any(returns_a_parameter(func, defined) for func in callees(called))


def called_with_capture(tree: ast.AST, defined: set[str] | None) -> set[str]:
    """Names of the functions called in ``tree`` with an argument that may carry a capture
    size (flow-insensitive, the whole tree as one scope: an over-approximation). ``defined``:
    calls of these carry their arguments too (None: every callee does); functions defined
    in ``tree`` itself are left out (the module's own analysis follows those)."""
    nodes = list(walk(tree))
    local = {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls = [
        n
        for n in nodes
        if isinstance(n, ast.Call)
        and _callee(n) not in local
        and (defined is None or _callee(n) in defined)
    ]
    if not calls:
        return set()
    tainted = _tainted_names(tree, set(), defined, nodes)
    return {
        _callee(n)
        for n in calls
        if any(_carries(a, tainted, defined) for a in (*n.args, *(k.value for k in n.keywords)))
    }


def returns_a_parameter(func: ast.AST, defined: set[str] | None) -> bool:
    """May a parameter of ``func`` reach one of its ``return`` values (flow-insensitive)?"""
    a = func.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    return bool(params) and _return_carries(func, params, defined)


def _return_carries(func: ast.AST, seeds: set[str], defined: set[str] | None) -> bool:
    """May a ``return`` value of ``func`` carry a capture size or a name tainted from ``seeds``
    (flow-insensitive; calls carry as :func:`_reads` says)?"""
    tainted = _tainted_names(func, seeds, defined)
    return any(
        isinstance(n, ast.Return) and n.value is not None and _carries(n.value, tainted, defined)
        for n in walk(func)
    )


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _reads(expr: ast.AST, defined: set[str] | None) -> tuple[bool, set[str]]:
    """(does ``expr`` name a capture size, the names and chains its value may carry) as the
    rules follow values: operators, magnitude-keeping calls, ``min``/``max``/``getattr``
    and calls of ``defined`` (None: every call) carry; other calls (``torch.zeros(n)``,
    a buffer) and comprehensions end a value."""
    carrying = _CARRYING_CALLS
    capture = False
    keys: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Attribute):
            capture = capture or node.attr in _CAPTURE_NAMES
            key = dotted_name(node)
            if key is not None:
                keys.add(key)
                continue
        elif isinstance(node, ast.Name):
            capture = capture or node.id in _CAPTURE_NAMES
            keys.add(node.id)
            continue
        elif isinstance(node, ast.Constant):
            capture = capture or node.value in CAPTURE_SIZE_ATTRS
            continue
        elif isinstance(node, ast.Call):
            name = _callee(node)
            if name not in carrying and defined is not None and name not in defined:
                continue
        elif isinstance(
            node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
        ):
            continue
        stack.extend(children(node))
    return capture, keys


def _carries(expr: ast.AST, tainted: set[str], defined: set[str] | None) -> bool:
    """May ``expr``'s value carry a capture size or a ``tainted`` name (see :func:`_reads`)?"""
    capture, keys = _reads(expr, defined)
    return capture or not keys.isdisjoint(tainted)


def _tainted_names(
    func: ast.AST, seeds: set[str], defined: set[str] | None, walked=None
) -> set[str]:
    """Names and chains assigned (in any order) a value that may carry a capture size or
    ``seeds`` (``walked``: the nodes of ``func``, when the caller has them)."""
    tainted = set(seeds)
    stores: list[tuple[list[str], bool, set[str]]] = []
    for node in walked if walked is not None else walk(func):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif (
            isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.AugAssign))
            and node.value is not None
        ):
            targets, value = [node.target], node.value
        else:
            continue
        capture, keys = _reads(value, defined)
        if capture or keys:
            stores.append(([k for t in targets for k in target_keys(t)], capture, keys))
    changed = True
    while changed:
        changed = False
        for targets, capture, keys in stores:
            if capture or not keys.isdisjoint(tainted):
                for key in targets:
                    if key not in tainted:
                        tainted.add(key)
                        changed = True
    return tainted


def _taint_targets(stores, tainted: set[str], carries: Callable[[ast.AST, set[str]], bool]) -> None:
    """Add to ``tainted`` every target of ``stores`` ((targets, value) pairs, in any order)
    assigned a value that ``carries`` taint, until nothing more changes (a fixed point)."""
    changed = True
    while changed:
        changed = False
        for targets, value in stores:
            if not carries(value, tainted):
                continue
            for target in targets:
                for key in target_keys(target):
                    if key not in tainted:
                        tainted.add(key)
                        changed = True
