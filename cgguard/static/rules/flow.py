"""Data flow from capture sizes (tokens) to block counts (sequences), one scope at a time.

A *scope* is a function body, a class body or the module body, without the scopes
nested in it. Statements are walked in order; every local name or attribute chain
assigned in the scope remembers whether its value derives from a capture size
(a :class:`Taint`). When a tainted value reaches a block-count sink (see
:mod:`cgguard.static.rules.vocabulary`), a :class:`Hit` is recorded at the place the
value *becomes* the count, with what the fix would wrap.

The walk is deliberately simple (no branches merged, no fixed point): block
counts in vLLM and its forks are straight-line code, and a forward walk sees
``try/finally`` save/restore, walrus targets and several hops through locals.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Callable

from cgguard.static.rules import vocabulary as vocab

# Kinds of taint: "token" is a per-token count (CGG001); "max" is a count that was
# passed through max(<capture size>, ...) (CGG002).
TOKEN = "token"
MAX = "max"

# Calls that hand their first argument through unchanged in magnitude.
_PASSTHROUGH_CALLS = frozenset({"int", "ceil", "round", "abs", "cdiv", "round_up"})


@dataclass(frozen=True)
class Taint:
    kind: str
    source: ast.expr  # the capture-size expression it came from
    reported: bool = False


@dataclass(frozen=True)
class Rewrite:
    """Where the fix goes: wrap ``target`` as ``min(R, target)``.

    With ``has_fallback`` the target is the first operand of ``target or K`` and
    keeps its ``or K``; otherwise ``or 1`` is added (in parentheses when
    ``needs_parens``).
    """

    target: ast.expr
    has_fallback: bool
    needs_parens: bool
    whole: ast.expr | None = None  # the ``target or K`` expression, with a fallback


@dataclass
class Hit:
    kind: str  # TOKEN or MAX
    sink: str  # what receives the count, for the message
    node: ast.expr  # the expression that becomes the count (location)
    source: ast.expr  # the capture-size expression
    rewrite: Rewrite | None
    request: str | None  # request-count expression the fix would use
    stmt_span: tuple[int, int] = (0, 0)  # lines of the statement (a compound one's header)


class ClassFacts:
    """What a class offers as a request count, read from its source text.

    ``self_attrs`` (the attributes the class assigns on ``self``) is read only when
    a fix needs it: most classes the flow passes through never produce a hit.
    """

    _SELF_ATTR = re.compile(r"self\.(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")

    def __init__(self, name: str, class_lines: Callable[[], list[str]]):
        self.name = name
        self.is_runner = "Runner" in name
        self._class_lines = class_lines
        self._attrs: frozenset[str] | None = None

    @property
    def self_attrs(self) -> frozenset[str]:
        if self._attrs is None:
            self._attrs = frozenset(self._SELF_ATTR.findall("".join(self._class_lines())))
        return self._attrs


# A marker stored in the environment for locals holding a request count.
_REQUEST = object()


class ScopeFlow:
    def __init__(
        self,
        class_facts: ClassFacts | None,
        params: list[str],
        has_needle: Callable[[ast.AST], bool] = lambda node: True,
        defaults: dict[str, ast.expr] | None = None,
    ):
        self.class_facts = class_facts
        # Whether a node's lines mention a capture size; with no taint in the scope yet,
        # expressions that do not cannot reach a sink with one.
        self.has_needle = has_needle
        self.tainted = False
        self.current_stmt: ast.stmt | None = None
        self.env: dict[str, object] = {}
        self.aliases: dict[str, ast.expr] = {}  # local name -> expression it aliases
        for p in params:
            if p in vocab.REQUEST_COUNT_NAMES:
                self.env[p] = _REQUEST
        self.hits: list[Hit] = []
        # `def f(self, n=<capture size>)`: the parameter carries the capture size.
        for p, default in (defaults or {}).items():
            taint = self.taint_of(default)
            if taint is not None:
                self.env[p] = taint
                self.tainted = True

    # ---- expressions -------------------------------------------------------
    def taint_of(self, node: ast.expr) -> Taint | None:
        if vocab.capture_source_kind(node):
            return Taint(TOKEN, node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            key = vocab.dotted(node)
            value = self.env.get(key) if key else None
            return value if isinstance(value, Taint) else None
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                t = self.taint_of(v)
                if t:
                    return t
            return None
        if isinstance(node, ast.BinOp):
            return self.taint_of(node.left) or self.taint_of(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.taint_of(node.operand)
        if isinstance(node, ast.IfExp):
            return self.taint_of(node.body) or self.taint_of(node.orelse)
        if isinstance(node, ast.NamedExpr):
            return self.taint_of(node.value)
        if isinstance(node, ast.Call):
            callee = vocab.last_name(node.func)
            if callee == "min":
                if any(self._is_request(a) for a in node.args):
                    return None
                tainted = [self.taint_of(a) for a in node.args]
                # min(capture, other) is bounded by the other value: not per-token.
                if all(tainted) and tainted:
                    return tainted[0]
                return None
            if callee == "max" and len(node.args) > 1:
                for a in node.args:
                    t = self.taint_of(a)
                    if t:
                        return replace(t, kind=MAX)
                return None
            if callee in _PASSTHROUGH_CALLS and node.args:
                return self.taint_of(node.args[0])
        return None

    def _is_request(self, node: ast.expr) -> bool:
        if vocab.mentions_request_count(node):
            return True
        for sub in ast.walk(node):
            key = vocab.dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
            if key and self.env.get(key) is _REQUEST:
                return True
        return False

    def locate(self, node: ast.expr, parent: ast.AST | None) -> Rewrite | None:
        """The smallest sub-expression of a tainted ``node`` that is the count."""
        if not self.taint_of(node):
            return None
        if vocab.capture_source_kind(node) or isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return Rewrite(node, has_fallback=False, needs_parens=_needs_parens(node, parent))
        if isinstance(node, ast.BoolOp):
            first, rest = node.values[0], node.values[1:]
            if (
                isinstance(node.op, ast.Or)
                and self.taint_of(first)
                and not any(self.taint_of(v) for v in rest)
            ):
                return Rewrite(first, has_fallback=True, needs_parens=False, whole=node)
            for v in node.values:
                r = self.locate(v, node)
                if r:
                    return r
            return None
        if isinstance(node, ast.BinOp):
            return self.locate(node.left, node) or self.locate(node.right, node)
        if isinstance(node, ast.UnaryOp):
            return self.locate(node.operand, node)
        if isinstance(node, ast.IfExp):
            return self.locate(node.body, node) or self.locate(node.orelse, node)
        if isinstance(node, ast.NamedExpr):
            return self.locate(node.value, node)
        if isinstance(node, ast.Call):
            callee = vocab.last_name(node.func)
            if callee == "max" or callee in _PASSTHROUGH_CALLS:
                for a in node.args:
                    r = self.locate(a, node)
                    if r:
                        return r
            return None
        return None

    # ---- request count for the fix ----------------------------------------
    def request_for(self, source: ast.expr) -> str | None:
        recv = _receiver(source)
        text = self._resolve(recv) if recv is not None else None
        if text is not None:
            req = self._request_from_chain(text)
            if req:
                return req
        # Fall back to a request count the scope already holds in a local.
        for key, value in self.env.items():
            if value is _REQUEST and "." not in key:
                return key
        return None

    def _resolve(self, node: ast.expr, depth: int = 0) -> str | None:
        """Text of a receiver chain with local aliases substituted."""
        if isinstance(node, ast.Name):
            alias = self.aliases.get(node.id)
            if alias is not None and depth < 8:
                return self._resolve(alias, depth + 1)
            return node.id
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value, depth)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            base = self._resolve(node.func, depth)
            return f"{base}()" if base is not None else None
        return None

    def _request_from_chain(self, chain: str) -> str | None:
        parts = chain.split(".")
        if parts[-1] == "compilation_config":
            parts = parts[:-1]
        if not parts:
            return None
        base = ".".join(parts)
        last = parts[-1]
        if base == "self":
            return self._self_request()
        if last in ("runner", "model_runner"):
            return f"{base}.max_num_reqs"
        if last == "vllm_config" or last == "get_current_vllm_config()":
            return f"{base}.scheduler_config.max_num_seqs"
        return None

    def _self_request(self) -> str | None:
        facts = self.class_facts
        if facts is None:
            return None
        attrs = facts.self_attrs
        if facts.is_runner or "max_num_reqs" in attrs:
            return "self.max_num_reqs"
        if "max_num_seqs" in attrs:
            return "self.max_num_seqs"
        if "scheduler_config" in attrs:
            return "self.scheduler_config.max_num_seqs"
        if "vllm_config" in attrs:
            return "self.vllm_config.scheduler_config.max_num_seqs"
        if "model_runner" in attrs:
            return "self.model_runner.max_num_reqs"
        return None

    # ---- sinks --------------------------------------------------------------
    def sink(self, value: ast.expr, sink: str, parent: ast.AST | None = None) -> Taint | None:
        """``value`` flows into a block-count sink; record a hit unless seen."""
        taint = self.taint_of(value)
        if taint is None:
            return None
        if not taint.reported:
            self.hits.append(
                Hit(
                    kind=taint.kind,
                    sink=sink,
                    node=value,
                    source=taint.source,
                    rewrite=self.locate(value, parent),
                    request=self.request_for(taint.source),
                    stmt_span=_statement_span(self.current_stmt) if self.current_stmt else (0, 0),
                )
            )
        return replace(taint, reported=True)

    # ---- statements ---------------------------------------------------------
    def run(self, body: list[ast.stmt]) -> list[Hit]:
        for stmt in body:
            self.stmt(stmt)
        return self.hits

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # separate scopes
        self.current_stmt = node  # header expressions come before nested bodies
        if isinstance(node, ast.Assign):
            self.expr(node.value)
            for target in node.targets:
                self.assign(target, node.value)
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expr(node.value)
                self.assign(node.target, node.value)
            return
        if isinstance(node, ast.AugAssign):
            self.expr(node.value)
            return
        # Any other statement: visit its expressions, then its nested blocks in order.
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                self.expr(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.stmt):
                        self.stmt(item)
                    elif isinstance(item, ast.expr):
                        self.expr(item)
                    elif isinstance(item, (ast.excepthandler, ast.match_case)):
                        for sub in item.body:
                            self.stmt(sub)
                    elif isinstance(item, ast.withitem):
                        self.expr(item.context_expr)

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        name = vocab.last_name(target)
        key = vocab.dotted(target)
        if name is None or key is None:
            return
        if vocab.is_sink_name(name):
            result = self.sink(value, sink=key)
        else:
            result = self.taint_of(value)
            if result is None and isinstance(value, (ast.Name, ast.Attribute)) and self._is_request(value):
                result = _REQUEST
        if result is None:
            self.env.pop(key, None)
        else:
            self.env[key] = result
            self.tainted = self.tainted or isinstance(result, Taint)
        if isinstance(target, ast.Name):
            if isinstance(value, (ast.Name, ast.Attribute, ast.Call)):
                self.aliases[target.id] = value
            else:
                self.aliases.pop(target.id, None)

    def expr(self, node: ast.expr) -> None:
        """Find sinks inside an expression: keywords, builder arguments, walrus targets."""
        if not self.tainted and not self.has_needle(node):
            return
        stack: list[ast.AST] = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
                continue
            if isinstance(cur, ast.NamedExpr):
                self.expr(cur.value)
                self.assign(cur.target, cur.value)
                continue
            if isinstance(cur, ast.Call):
                self.call(cur)
            stack.extend(reversed(list(ast.iter_child_nodes(cur))))

    def call(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg and vocab.is_sink_name(kw.arg):
                self.sink(kw.value, sink=f"{kw.arg}=")
        callee = vocab.last_name(node.func)
        # A builder also handed a request count is being bounded by it (as in
        # `profiling_block_bound(max_num_reqs, capture_size)`): nothing to report.
        if callee and vocab.is_profiling_builder(callee) and not any(
            self._is_request(a) for a in node.args if not isinstance(a, ast.Starred)
        ):
            for arg in node.args:
                if not isinstance(arg, ast.Starred):
                    self.sink(arg, sink=f"{callee}(...)")


def _statement_span(node: ast.stmt) -> tuple[int, int]:
    """Lines a suppression comment may sit on: the statement, or a compound one's header."""
    if not hasattr(node, "body"):
        return node.lineno, node.end_lineno
    end = node.lineno
    for value in ast.iter_fields(node):
        value = value[1]
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, ast.withitem):
                item = item.optional_vars or item.context_expr
            if isinstance(item, ast.expr):
                end = max(end, item.end_lineno)
    return node.lineno, end


def _receiver(source: ast.expr) -> ast.expr | None:
    """The object a capture-size expression was read from."""
    if isinstance(source, ast.Attribute):
        return source.value
    if isinstance(source, ast.Subscript) and isinstance(source.value, ast.Attribute):
        return source.value.value
    if isinstance(source, ast.Call) and isinstance(source.args[0], ast.Attribute):
        return source.args[0].value
    return None


# Parents where a bare ``a or b`` may stand without parentheses.
def _needs_parens(node: ast.expr, parent: ast.AST | None) -> bool:
    if parent is None:
        return False
    if isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.Or):
        return False
    if isinstance(parent, ast.Call) and node in parent.args:
        return False
    if isinstance(parent, ast.NamedExpr):
        return False
    return True
