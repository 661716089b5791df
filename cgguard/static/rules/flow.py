"""Data flow from capture sizes (tokens) to block counts (sequences), one scope at a time.

A *scope* is a function body, a class body or the module body, without the scopes
nested in it (libcst nodes throughout). Statements are walked in order; every local
name or attribute chain assigned in the scope remembers whether its value derives
from a capture size (a :class:`Taint`). When a tainted value reaches a block-count
sink (see :mod:`cgguard.static.rules.model`), a :class:`Hit` is recorded at the
place the value *becomes* the count, with the node the fix would wrap.

The walk is flow-sensitive: the states of an ``if``'s branches are joined (a count
is bounded afterwards only if it is bounded on every path that goes on), loops run
to a fixed point, an exception handler starts from the join of every point of its
``try`` body, and ``return``/``raise`` end a path. It sees ``try/finally``
save/restore, walrus targets and several hops through locals. No positions are
needed here: the driver resolves them only for the nodes of a hit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import libcst as cst

from cgguard.static.rules import classfacts, nodes, reach
from cgguard.static.rules import model as vocab
from cgguard.static.rules.classfacts import ClassTree

# What a call hands from its arguments to its result: None, or the callee's name and, per
# argument, a function giving (kind, tuple index or None) for each way its parameter
# reaches the callee's return (computed on first use: :mod:`cgguard.static.rules.paramflow`).
Passing = Callable[
    [cst.Call],
    "tuple[str, list[tuple[cst.BaseExpression, Callable[[], list[tuple[str, int | None]]]]]] | None",
]

# Kinds of taint: "token" is a per-token count (CGG001); "max" is a count that was
# passed through max(<capture size>, ...) (CGG002).
TOKEN = "token"
MAX = "max"

_PASSTHROUGH_CALLS = vocab.PASSTHROUGH_CALLS


@dataclass(frozen=True)
class Taint:
    kind: str
    source: cst.BaseExpression  # the capture-size expression it came from
    reported: bool = False
    # A hit at a block-named local this value passed (made there, recorded when the
    # value reaches a sink or leaves the function).
    pending: Hit | None = None
    # The call of a helper (a method of the class, a function of the module) the value
    # came from, or the read of a member (a property, an attribute the class sets from a
    # capture size), and that member's summary (helperflow.HelperSummary).
    call: cst.Call | cst.Attribute | None = None
    helper: object | None = None
    # ``helper()`` the value was passed through as an argument (a parameter of it that
    # flows to its return), for the message; the finding stays at the argument.
    through: str | None = None


@dataclass(frozen=True)
class Rewrite:
    """Where the fix goes: wrap ``target`` as ``min(R, target)``.

    With ``has_fallback`` the target is the first operand of ``target or K`` and
    keeps its ``or K`` (``fallbacks``); otherwise ``or 1`` is added (in parentheses
    when ``needs_parens``).
    """

    target: cst.BaseExpression
    has_fallback: bool
    needs_parens: bool
    whole: cst.BaseExpression | None = None  # the ``target or K`` expression, with a fallback
    fallbacks: tuple[cst.BaseExpression, ...] = ()  # K, ... (the operands after the count)
    operators: tuple[cst.BaseBooleanOp, ...] = ()  # the ``or`` before each of them
    # ``target`` is a ``min()`` without a request count (token counts, a constant): the
    # request count becomes its first argument instead of wrapping it.
    insert: bool = False


@dataclass
class Hit:
    kind: str  # TOKEN or MAX
    sink: str  # what receives the count, for the message
    node: cst.BaseExpression  # the expression that becomes the count (location)
    source: cst.BaseExpression  # the capture-size expression
    rewrite: Rewrite | None
    request: str | None  # request-count expression the fix would use
    stmt: cst.CSTNode | None = None  # the statement (a compound one: its header) for suppressions
    # The request count is a guess (``self.max_num_reqs`` in a class that shows none):
    # the fix is offered as unsafe.
    guessed: bool = False
    via: str | None = None  # ``helper()`` the count came through, for the message
    helper: object | None = None  # that helper's summary (helperflow.HelperSummary)


class ClassFacts:
    """What a class offers as a request count, read from its parsed tree
    (:mod:`cgguard.static.rules.classfacts`) only when a fix needs it: most classes the
    flow passes through never produce a hit.
    """

    def __init__(
        self,
        name: str,
        tree: Callable[[], ClassTree] | None = None,
        aliases: Callable[[], dict[str, str]] | None = None,
    ):
        self.name = name
        self._tree = tree
        # The file's import aliases (reach.import_aliases), read when a fix asks.
        self._aliases = aliases
        self._facts: ClassTree | None = None
        self._runner: bool | None = None

    def _read(self) -> ClassTree:
        if self._facts is None:
            self._facts = self._tree() if self._tree is not None else classfacts.EMPTY
        return self._facts

    @property
    def is_runner(self) -> bool:
        """A model runner: its name or one of its base classes names one (``...ModelRunner``)."""
        if self._runner is None:
            # Its own name first: the file's imports are read only for a base's alias.
            self._runner = classfacts.names_model_runner(
                self.name, ()
            ) or classfacts.names_model_runner(
                self.name, self._read().bases, self._aliases() if self._aliases is not None else {}
            )
        return self._runner

    @property
    def self_attrs(self) -> frozenset[str]:
        """Attributes the class sets on ``self`` or declares in its body (``max_num_reqs: int``)."""
        return self._read().attrs


# Markers stored in the environment for locals holding a request count / a token count /
# a capture-size list.
_REQUEST = object()
_TOKENS = object()
_CAPTURE_LIST = object()

_SKIPPED_EXPRS = (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)


def or_operands(node: cst.BooleanOperation):
    """``a or b or c`` (libcst nests it left) -> ([a, b, c], [or, or]); same for ``and``."""
    values: list[cst.BaseExpression] = [node.right]
    ops = [node.operator]
    kind = type(node.operator)
    left = node.left
    while (
        isinstance(left, cst.BooleanOperation) and isinstance(left.operator, kind) and not left.lpar
    ):
        values.append(left.right)
        ops.append(left.operator)
        left = left.left
    values.append(left)
    values.reverse()
    ops.reverse()
    return values, ops


@dataclass
class Returned:
    """A ``return`` of a capture-size count, and its fix in the function's own terms."""

    stmt: cst.Return
    value: cst.BaseExpression
    taint: Taint
    rewrite: Rewrite | None
    request: str | None
    guessed: bool
    chain: str | None  # the capture size's receiver, in the function's names
    index: int | None = None  # the element of a returned tuple, or None for the whole value
    attr: str | None = None  # ``self.<attr> = <count>``: the member it sets (not a return)


class ScopeFlow:
    def __init__(
        self,
        class_facts: ClassFacts | None,
        params: list[str],
        defaults: dict[str, cst.BaseExpression] | None = None,
        helper: Callable[[cst.Call], object | None] | None = None,
        *,
        function: bool = True,
        passing: Passing | None = None,
        summarising: bool = False,
    ):
        self.class_facts = class_facts
        # A function's names are locals; a class's or module's are attributes and globals
        # others read, so a block-count name there is a sink itself.
        self.function = function
        self.params = params
        # The summary of the helper a call calls (helperflow.HelperSummary), or None.
        self.helper = helper
        # What a call hands through from its arguments to its result (the callee's
        # parameters that flow to its return), or None (see :mod:`.paramflow`).
        self.passing = passing
        # A pass that summarises the function's parameters: every return of a seeded
        # parameter counts, even one a block-named local or a sink saw on the way.
        self.summarising = summarising
        self.returns: list[Returned] = []
        self.stored: list[Returned] = []  # `self.name = <count>` (members other methods read)
        self.sunk_calls: set[int] = (
            set()
        )  # ids of helper calls (their func) that became block counts
        self.other_uses: set[int] = set()  # ids of helper calls whose count also went elsewhere
        self._sunk: dict[int, Taint] = {}  # values already reported (chained targets)
        self._pending: dict[int, Taint] = {}  # values assigned to block-named locals
        self._emitted: set[int] = set()  # ids of pending hits recorded
        self._returned: set[int] = set()  # ids of returns walked
        self.dead = False  # after a return or raise
        self.current_stmt: cst.CSTNode | None = None
        self.env: dict[str, object] = {}
        self.aliases: dict[str, cst.BaseExpression] = {}  # local name -> expression it aliases
        for p in params:
            if p in vocab.REQUEST_COUNT_NAMES:
                self.env[p] = _REQUEST
        self.hits: list[Hit] = []
        # `def f(self, n=<capture size>)`: the parameter carries the capture size.
        for p, default in (defaults or {}).items():
            taint = self.taint_of(default)
            if taint is not None:
                self.env[p] = taint

    # ---- expressions -------------------------------------------------------
    def taint_of(self, node: cst.BaseExpression) -> Taint | None:
        if nodes.capture_source_kind(node):
            return Taint(TOKEN, node)
        if isinstance(node, (cst.Name, cst.Attribute)):
            key = nodes.dotted(node)
            value = self.env.get(key) if key else None
            if isinstance(value, Taint):
                return value
            if value is None and isinstance(node, cst.Attribute) and self.helper is not None:
                # A member of the class read here: a property, or an attribute another
                # method set from a capture size.
                summary = self.helper(node)
                if summary is not None and summary.index is None:
                    return Taint(summary.kind, summary.source, call=node, helper=summary)
            return None
        if isinstance(node, cst.Subscript):
            index = nodes.single_index(node)
            if index is not None and nodes.is_minus_one(index) and self._capture_list(node.value):
                return Taint(TOKEN, node)  # `sizes[-1]` of a local holding a capture-size list
            # `helper()[0]`: the element of a helper's tuple that carries the count.
            if (
                isinstance(node.value, cst.Call)
                and isinstance(index, cst.Integer)
                and self.helper is not None
            ):
                summary = self.helper(node.value)
                if summary is not None and summary.index == index.evaluated_value:
                    return Taint(summary.kind, summary.source, call=node.value, helper=summary)
            if isinstance(node.value, cst.Call) and isinstance(index, cst.Integer):
                return self._passed(node.value, index.evaluated_value)
            return None
        if isinstance(node, cst.BooleanOperation):
            return self.taint_of(node.left) or self.taint_of(node.right)
        if isinstance(node, cst.BinaryOperation):
            return self.taint_of(node.left) or self.taint_of(node.right)
        if isinstance(node, cst.UnaryOperation):
            return self.taint_of(node.expression)
        if isinstance(node, cst.IfExp):
            return self.taint_of(node.body) or self.taint_of(node.orelse)
        if isinstance(node, cst.NamedExpr):
            return self.taint_of(node.value)
        if isinstance(node, cst.Call):
            summary = self.helper(node) if self.helper is not None else None
            if summary is not None:
                if summary.index is not None:
                    return None  # a tuple: one element is the count (see assign_call)
                return Taint(summary.kind, summary.source, call=node, helper=summary)
            passed = self._passed(node, None)
            if passed is not None:
                return passed
            callee = nodes.last_name(node.func)
            args = nodes.positional(node)
            if (
                callee == "max"
                and len(args) == 1
                and not args[0].star
                and self._capture_list(args[0].value)
            ):
                return Taint(TOKEN, node)  # max(sizes) of a local holding a capture-size list
            if callee == "min":
                if any(self._is_request(a.value) for a in args):
                    return None
                # Only a request count bounds it: min(capture, <token count>) still counts
                # tokens, and so does min(capture, <constant>) (one block per token up to it).
                return next((t for t in map(self._arg_taint, args) if t), None)
            if callee == "max" and len(args) > 1:
                for a in args:
                    t = self._arg_taint(a)
                    if t:
                        return replace(t, kind=MAX)
                return None
            if callee in _PASSTHROUGH_CALLS and args:
                return self._arg_taint(args[0])
        return None

    def _passed_args(self, call: cst.Call, index: int | None):
        """(argument, its taint, the kind the callee returns it as) for each argument of
        ``call`` that the callee hands to its return (element ``index`` of a tuple)."""
        if self.passing is None:
            return
        found = self.passing(call)
        if found is None:
            return
        name, params = found
        for arg, summary in params:
            taint = self.taint_of(arg)
            if taint is None:
                continue
            for kind, at in summary():
                if at == index:
                    yield arg, taint, kind, name
                    break

    def entry(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """The argument of ``node`` (a call, or an element of its tuple) whose count the
        callee hands through to its result (:meth:`_passed`)."""
        index = None
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call):
            at = nodes.single_index(node)
            if not isinstance(at, cst.Integer):
                return None
            index, node = at.evaluated_value, node.value
        if not isinstance(node, cst.Call) or self.passing is None:
            return None
        if self.helper is not None and self.helper(node) is not None:
            return None  # the helper's own count
        indexes = [index] if index is not None else [None, *range(len(node.args) + 8)]
        for i in indexes:
            for arg, _, _, _ in self._passed_args(node, i):
                return arg
        return None

    def _passed(self, call: cst.Call, index: int | None) -> Taint | None:
        """The taint a call's result carries from an argument (``self._blocks_for(<capture size>)``)."""
        for _, taint, kind, name in self._passed_args(call, index):
            kind = MAX if MAX in (kind, taint.kind) else taint.kind
            return replace(taint, kind=kind, through=taint.through or f"{name}()")
        return None

    def _capture_list(self, node: cst.BaseExpression) -> bool:
        """A local holding a capture-size list (``sizes = cc.cudagraph_capture_sizes``)."""
        return isinstance(node, cst.Name) and self.env.get(node.value) is _CAPTURE_LIST

    def _arg_taint(self, arg: cst.Arg) -> Taint | None:
        return None if arg.star else self.taint_of(arg.value)

    def _count_kind(self, node: cst.BaseExpression) -> str | None:
        return reach.count_kind(node, self._local_kind)

    def _local_kind(self, key: str) -> str | None:
        value = self.env.get(key)
        if value is _REQUEST:
            return reach.REQUESTS
        if value is _TOKENS or isinstance(value, Taint):
            return reach.TOKENS
        return None

    def _is_request(self, node: cst.CSTNode) -> bool:
        if nodes.mentions_request_count(node):
            return True
        for sub in nodes.walk(node):
            key = nodes.dotted(sub) if isinstance(sub, (cst.Name, cst.Attribute)) else None
            if key and self.env.get(key) is _REQUEST:
                return True
        return False

    def locate(self, node: cst.BaseExpression, parent: cst.CSTNode | None) -> Rewrite | None:
        """The smallest sub-expression of a tainted ``node`` that is the count."""
        entry = self.entry(node)
        if entry is not None:
            # The count enters at an argument the callee hands through: the fix bounds it
            # there (a keyword's value needs no parentheses either).
            positional = isinstance(node, cst.Call) and any(
                a.value is entry for a in nodes.positional(node)
            )
            return self.locate(entry, node if positional else None)
        if not self.taint_of(node):
            return None
        if nodes.capture_source_kind(node) or isinstance(
            node, (cst.Name, cst.Attribute, cst.Subscript)
        ):
            return Rewrite(node, has_fallback=False, needs_parens=_needs_parens(node, parent))
        if isinstance(node, cst.BooleanOperation):
            values, ops = or_operands(node)
            first, rest = values[0], values[1:]
            if (
                isinstance(node.operator, cst.Or)
                and self.taint_of(first)
                and not any(self.taint_of(v) for v in rest)
            ):
                return Rewrite(
                    first,
                    has_fallback=True,
                    needs_parens=False,
                    whole=node,
                    fallbacks=tuple(rest),
                    operators=tuple(ops),
                    insert=reach.is_min_call(first),
                )
            for v in values:
                r = self.locate(v, node)
                if r:
                    return r
            return None
        if isinstance(node, cst.BinaryOperation):
            return self.locate(node.left, node) or self.locate(node.right, node)
        if isinstance(node, cst.UnaryOperation):
            return self.locate(node.expression, node)
        if isinstance(node, cst.IfExp):
            return self.locate(node.body, node) or self.locate(node.orelse, node)
        if isinstance(node, cst.NamedExpr):
            return self.locate(node.value, node)
        if isinstance(node, cst.Call):
            if self.helper is not None and self.helper(node) is not None:
                return Rewrite(node, has_fallback=False, needs_parens=_needs_parens(node, parent))
            callee = nodes.last_name(node.func)
            if callee == "min":
                return Rewrite(node, has_fallback=False, needs_parens=False, insert=True)
            if callee == "max" or callee in _PASSTHROUGH_CALLS:
                for a in nodes.positional(node):
                    r = None if a.star else self.locate(a.value, node)
                    if r:
                        return r
            return None
        return None

    # ---- request count for the fix ----------------------------------------
    def request_for(self, source: cst.BaseExpression) -> str | None:
        return self.request_of(Taint(TOKEN, source))[0]

    def request_of(self, taint: Taint) -> tuple[str | None, bool]:
        """The request count the fix would use, and whether it is a guess."""
        text = self.chain_of(taint)
        if text is not None:
            req = self._request_from_chain(text)
            if req:
                return req, False
        # Fall back to a request count the scope already holds in a local.
        for key, value in self.env.items():
            if value is _REQUEST and "." not in key:
                return key, False
        # Read from this object (`self.cc.max_cudagraph_capture_size`): what the class
        # offers; where it shows nothing, the runners' name as a guess (an unsafe fix).
        facts = self.class_facts
        if (
            text is not None
            and text.split(".", 1)[0] == "self"
            and facts is not None
            and facts.name
        ):
            own = self._self_request()
            return (own, False) if own else ("self.max_num_reqs", True)
        return None, False

    def chain_of(self, taint: Taint) -> str | None:
        """The capture size's receiver chain (``self.compilation_config``) in this scope's names."""
        if taint.call is None:
            recv = _receiver(taint.source)
            return self._resolve(recv) if recv is not None else None
        # Through a helper: its chain, with its parameters replaced by this call's arguments.
        summary = taint.helper
        chain = summary.chain
        if chain is None:
            return None
        root, dot, rest = chain.partition(".")
        owner = summary.owner
        params = owner.params() + owner.kwonly()
        call = taint.call
        receiver = call.func if isinstance(call, cst.Call) else call
        if owner.implicit_first and params[:1] == [root]:
            # `self.helper()` / `self.member`: the same object; `cls.`/`Klass.`: no object.
            own = isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
            base = "self" if own and receiver.value.value == "self" else None
        elif root in params:
            arg = (
                reach.call_argument(call, owner, root)
                if isinstance(call, cst.Call) and not summary.stored
                else None
            )
            base = self._resolve(arg) if arg is not None else None
        else:
            base = root  # a global (get_current_vllm_config()...)
        return None if base is None else base + dot + rest

    def _resolve(self, node: cst.BaseExpression, depth: int = 0) -> str | None:
        """Text of a receiver chain with local aliases substituted."""
        if isinstance(node, cst.Name):
            alias = self.aliases.get(node.value)
            if alias is not None and depth < 8:
                return self._resolve(alias, depth + 1)
            return node.value
        if isinstance(node, cst.Attribute):
            base = self._resolve(node.value, depth)
            return f"{base}.{node.attr.value}" if base is not None else None
        if isinstance(node, cst.Call) and not node.args:
            base = self._resolve(node.func, depth)
            return f"{base}()" if base is not None else None
        return None

    def _request_from_chain(self, chain: str) -> str | None:
        parts = chain.split(".")
        if parts[-1] in vocab.CAPTURE_LIST_NAMES:
            parts = parts[:-1]  # `sizes[-1]` of a local list: its receiver
        for i, part in enumerate(parts[:-1]):
            if part in ("runner", "model_runner") and i + 1 < len(parts):
                # `runner.vllm_config.compilation_config`: the runner has the request count.
                return ".".join(parts[: i + 1]) + ".max_num_reqs"
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
        if facts.is_runner:
            return "self.max_num_reqs"
        attrs = facts.self_attrs  # read only for a class that is no runner
        if "max_num_reqs" in attrs:
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
    def sink(
        self, value: cst.BaseExpression, sink: str, parent: cst.CSTNode | None = None
    ) -> Taint | None:
        """``value`` flows into a block-count sink; record a hit unless seen.

        A value that went through a block-named local first (:meth:`pending`) is
        reported there, where it became the count.
        """
        seen = self._sunk.get(id(value))
        if seen is not None:
            return seen  # `a_blocks = b_blocks = <count>`: one finding
        taint = self.taint_of(value)
        if taint is None:
            return None
        if taint.pending is not None:
            self.emit(taint)
        elif not taint.reported:
            if taint.call is not None:
                self.sunk_calls.add(_ref_id(taint.call))
            self.hits.append(self._hit(taint, value, sink, parent))
        result = self._sunk[id(value)] = replace(taint, reported=True)
        return result

    def _hit(
        self, taint: Taint, value: cst.BaseExpression, sink: str, parent: cst.CSTNode | None
    ) -> Hit:
        request, guessed = self.request_of(taint)
        entry = self.entry(value) if taint.through is not None else None
        return Hit(
            kind=taint.kind,
            sink=sink,
            node=value if entry is None else entry,  # where the count enters
            source=taint.source,
            rewrite=self.locate(value, parent),
            request=request,
            stmt=self.current_stmt,
            guessed=guessed,
            via=taint.helper.spelled if taint.helper is not None else taint.through,
            helper=taint.helper,
        )

    def pending(
        self, value: cst.BaseExpression, sink: str, parent: cst.CSTNode | None
    ) -> Taint | None:
        """``value`` is assigned to a local named like a block count.

        No sink by itself: the hit is made here (where the value becomes the count)
        and recorded only when the local's value reaches a sink or leaves the
        function (:meth:`emit`).
        """
        seen = self._pending.get(id(value))
        if seen is not None:
            return seen  # chained targets, or a loop's second pass
        taint = self.taint_of(value)
        if taint is None:
            return None
        if taint.pending is None and not taint.reported:
            taint = replace(taint, pending=self._hit(taint, value, sink, parent))
        self._pending[id(value)] = taint
        return taint

    def emit(self, taint: Taint | None) -> None:
        """A value carrying a pending block-local hit reached a sink or left the function."""
        if taint is None or taint.pending is None or id(taint.pending) in self._emitted:
            return
        self._emitted.add(id(taint.pending))
        if taint.call is not None:
            self.sunk_calls.add(_ref_id(taint.call))
        self.hits.append(taint.pending)

    def escapes(self, node: cst.BaseExpression) -> None:
        """``node`` leaves the function (returned, stored on an object, passed to a call)."""
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            for element in node.elements:
                self.escapes(element.value)
            return
        if isinstance(node, cst.Dict):
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    self.escapes(element.value)
            return
        if isinstance(node, cst.StarredElement):
            node = node.value
        taint = self.taint_of(node)
        if taint is not None and taint.pending is None and taint.call is not None:
            # A member's count used otherwise (a token buffer...): its finding stays at its uses.
            self.other_uses.add(_ref_id(taint.call))
        self.emit(taint)

    # ---- states (flow-sensitive walk) ----------------------------------------
    def snapshot(self) -> State:
        return State(dict(self.env), dict(self.aliases), self.dead)

    def restore(self, state: State) -> None:
        self.env, self.aliases, self.dead = dict(state.env), dict(state.aliases), state.dead

    def join(self, *states: State) -> State:
        """Where paths meet: a value is bounded only if it is bounded on every live path."""
        live = [s for s in states if not s.dead]
        if not live:
            return State({}, {}, True)
        if len(live) == 1:
            return live[0]
        env: dict[str, object] = {}
        for key in {k for s in live for k in s.env}:
            values = [s.env.get(key) for s in live]
            taint = next(
                (v for v in values if isinstance(v, Taint) and v.pending is not None), None
            )
            taint = taint or next((v for v in values if isinstance(v, Taint)), None)
            if taint is not None:
                env[key] = taint
            elif any(v is _TOKENS for v in values):
                env[key] = _TOKENS
            elif all(v is _REQUEST for v in values):
                env[key] = _REQUEST
            elif all(v is _CAPTURE_LIST for v in values):
                env[key] = _CAPTURE_LIST
            elif all(isinstance(v, SplatDict) for v in values):
                env[key] = SplatDict.merged(values)
        aliases: dict[str, cst.BaseExpression] = {}
        for s in live:
            for k, v in s.aliases.items():
                aliases.setdefault(k, v)
        return State(env, aliases, False)

    # ---- statements ---------------------------------------------------------
    def run(self, body: Sequence[cst.CSTNode]) -> list[Hit]:
        for stmt in body:
            if self.dead:
                break  # after a return or raise: unreachable
            self.stmt(stmt)
        return self.hits

    def block(self, body: cst.BaseSuite | cst.Else | cst.Finally | None) -> None:
        if body is None:
            return
        if isinstance(body, (cst.Else, cst.Finally)):
            body = body.body
        self.run(body.body)

    def branch(self, start: State, body, bound: str | None = None) -> State:
        """Run ``body`` from ``start`` (with ``bound`` known to be at most a request count)."""
        self.restore(start)
        if bound is not None and not self.dead:
            self.env[bound] = _REQUEST
        if isinstance(body, cst.If):
            self.stmt(body)
        else:
            self.block(body)
        return self.snapshot()

    def stmt(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            self.run(node.body)
            return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return  # separate scopes
        self.current_stmt = node  # header expressions come before nested bodies
        if isinstance(node, cst.Assign):
            self.expr(node.value)
            for target in node.targets:
                if self.assign_call(target.target, node.value):
                    continue
                for name, value in reach.unpack_pairs(target.target, node.value):
                    if value is None:
                        self.forget(name)
                    else:
                        self.assign(name, value, reach.element_parent(node.value, value))
        elif isinstance(node, cst.Return):
            if node.value is not None:
                self.expr(node.value)
                self.returned(node)
            self.dead = True
        elif isinstance(node, cst.Raise):
            for child in nodes.children(node):
                if isinstance(child, cst.BaseExpression):
                    self.expr(child)
            self.dead = True
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.expr(node.value)
                self.assign(node.target, node.value)
        elif isinstance(node, cst.AugAssign):
            self.expr(node.value)
            key = nodes.dotted(node.target)
            # `x += <capture size>`: x now carries it too; `x //= n` keeps what x had.
            taint = self.taint_of(node.value)
            if key is not None and taint is not None and not isinstance(self.env.get(key), Taint):
                self.env[key] = taint
        elif isinstance(node, cst.If):
            self.expr(node.test)
            body_bound, else_bound = self._clamped(node.test)
            pre = self.snapshot()
            taken = self.branch(pre, node.body, body_bound)
            other = self.branch(pre, node.orelse, else_bound)
            self.restore(self.join(taken, other))
        elif isinstance(node, (cst.While, cst.For)):
            if isinstance(node, cst.While):
                self.expr(node.test)
            else:
                self.expr(node.iter)
                self.forget(node.target)
            pre = self.snapshot()
            # Twice: what one iteration leaves is what the next starts from (values
            # here move one way, unbounded wins, so two passes reach the fixed point
            # of one-hop loops; longer chains through a loop are rare in this code).
            state = pre
            for _ in range(2):
                after = self.branch(self.join(pre, state), node.body)
                state = self.join(state, after)
            self.restore(self.join(pre, state))
            self.block(node.orelse)
        elif isinstance(node, (cst.Try, cst.TryStar)):
            pre = self.snapshot()
            # A handler may start after any statement of the body: from the join of all.
            anywhere = [pre]
            for stmt in node.body.body:
                if self.dead:
                    break
                self.stmt(stmt)
                anywhere.append(self.snapshot())
            body_end = self.snapshot()
            handler_start = self.join(*[replace(s, dead=False) for s in anywhere])
            outs = [self.branch(body_end, node.orelse)]
            for handler in node.handlers:
                outs.append(self.branch(handler_start, handler.body))
            self.restore(self.join(*outs))
            if node.finalbody is not None:
                dead = self.dead
                self.dead = False
                self.block(node.finalbody)
                self.dead = self.dead or dead
        elif isinstance(node, cst.With):
            for item in node.items:
                self.expr(item.item)
            self.block(node.body)
        elif isinstance(node, cst.Match):
            self.expr(node.subject)
            pre = self.snapshot()
            outs = [pre]
            for case in node.cases:
                outs.append(self.branch(pre, case.body))
            self.restore(self.join(*outs))
        else:
            # Any other statement: its expressions, in order.
            for child in nodes.children(node):
                if isinstance(child, cst.BaseExpression):
                    self.expr(child)

    def _clamped(self, test: cst.BaseExpression) -> tuple[str | None, str | None]:
        """``if x > R:`` / ``if x <= R:``: which branch knows ``x`` is at most a request count.

        The clamp idiom ``if x > R: x = R`` then leaves ``x`` bounded on both paths.
        """
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None, None
        left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
            left, right = right, left  # R < x  is  x > R
        elif not isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            return None, None
        # `left > right` holds on the body's path, `left <= right` on the other.
        for big, small, bound_in_body in ((left, right, False), (right, left, True)):
            key = nodes.dotted(big) if isinstance(big, (cst.Name, cst.Attribute)) else None
            if key and isinstance(self.env.get(key), Taint) and self._is_request(small):
                return (key, None) if bound_in_body else (None, key)
        return None, None

    def returned(self, node: cst.Return) -> None:
        """A ``return`` of a capture-size count makes this function a helper (see helperflow)."""
        value = node.value
        if id(node) in self._returned:
            return  # a loop's second pass
        self._returned.add(id(node))
        self.escapes(value)
        if isinstance(value, cst.Tuple):
            # `return <count>, other`: the element that carries the count, by position.
            for i, element in enumerate(value.elements):
                if isinstance(element, cst.StarredElement):
                    return
                self._summarise(node, element.value, i, value)
            return
        self._summarise(node, value, None, None)

    def _summarise(self, stmt, value, index, parent) -> None:
        taint = self.taint_of(value)
        if taint is None or (
            not self.summarising and (taint.reported or taint.pending is not None)
        ):
            return
        request, guessed = self.request_of(taint)
        self.returns.append(
            Returned(
                stmt,
                value,
                taint,
                self.locate(value, parent),
                request,
                guessed,
                self.chain_of(taint),
                index,
            )
        )

    def stored_on_self(self, target: cst.Attribute, value: cst.BaseExpression, parent) -> None:
        """``self.name = <count>`` (not a block-count name): a member other methods may read."""
        if not (isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        taint = self.taint_of(value)
        if taint is None or taint.reported or taint.pending is not None:
            return
        request, guessed = self.request_of(taint)
        self.stored.append(
            Returned(
                self.current_stmt,
                value,
                taint,
                self.locate(value, parent),
                request,
                guessed,
                self.chain_of(taint),
                None,
                target.attr.value,
            )
        )

    def assign_call(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """``a, b = helper()`` where one element of the helper's tuple carries the count
        (its own, or an argument it hands through)."""
        if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call)):
            return False
        elements = target.elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return False
        summary = self.helper(value) if self.helper else None
        if summary is not None and summary.index is not None and summary.index < len(elements):
            index, taint = (
                summary.index,
                Taint(summary.kind, summary.source, call=value, helper=summary),
            )
        else:
            passed = (
                [(i, self._passed(value, i)) for i in range(len(elements))] if self.passing else []
            )
            index, taint = next(((i, t) for i, t in passed if t is not None), (None, None))
            if taint is None:
                return False
        self.forget(target)
        element = elements[index].value
        key = nodes.dotted(element)
        if key is not None:
            name = nodes.last_name(element) or ""
            if vocab.is_sink_name(name) and isinstance(element, cst.Attribute):
                if summary is not None:
                    self.sink(value, sink=key)
                elif not taint.reported:
                    self.emit(taint)
                    if taint.pending is None:
                        self.hits.append(self._hit(taint, value, key, None))
                taint = replace(taint, reported=True)
            elif vocab.is_sink_name(name) and taint.pending is None and not taint.reported:
                taint = self._pending.setdefault(
                    id(value), replace(taint, pending=self._hit(taint, value, key, None))
                )
            self.env[key] = taint
        return True

    def forget(self, target: cst.BaseExpression) -> None:
        """A target assigned a value the flow does not follow (``a, b = f()``)."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.forget(element.value)
            return
        if isinstance(target, cst.StarredElement):
            target = target.value
        key = nodes.dotted(target)
        if key is not None:
            self.env.pop(key, None)
        if isinstance(target, cst.Name):
            self.aliases.pop(target.value, None)

    def assign(
        self,
        target: cst.BaseExpression,
        value: cst.BaseExpression,
        parent: cst.CSTNode | None = None,
    ) -> None:
        if isinstance(target, cst.Subscript):
            self._store_item(target, value)
            return
        name = nodes.last_name(target)
        key = nodes.dotted(target)
        if name is None or key is None:
            return
        if vocab.is_sink_name(name) and isinstance(target, cst.Name) and self.function:
            result = self.pending(value, sink=key, parent=parent)
        elif vocab.is_sink_name(name):
            result = self.sink(value, sink=key, parent=parent)
        else:
            result = self.taint_of(value)
            if isinstance(target, cst.Attribute):
                self.escapes(value)  # stored on an object
                self.stored_on_self(target, value, parent)
            if result is None:
                splat = self._splat_dict(value)
                if splat is not None:
                    result = splat
                elif (
                    isinstance(target, cst.Name)
                    and nodes.last_name(value) in vocab.CAPTURE_LIST_NAMES
                ):
                    result = _CAPTURE_LIST
                else:
                    kind = self._count_kind(value)
                    result = (
                        _REQUEST
                        if kind == reach.REQUESTS
                        else _TOKENS
                        if kind == reach.TOKENS
                        else None
                    )
        if result is None:
            self.env.pop(key, None)
        else:
            self.env[key] = result
        if isinstance(target, cst.Name):
            if isinstance(value, (cst.Name, cst.Attribute, cst.Call)):
                self.aliases[target.value] = value
            else:
                self.aliases.pop(target.value, None)

    # ---- dicts splatted into calls ------------------------------------------
    def _splat_dict(self, value: cst.BaseExpression) -> SplatDict | None:
        """A dict literal (or ``dict(...)``) with block-count string keys: sinks if splatted."""
        entries = _dict_sinks(value)
        return SplatDict(tuple((n, v, self.current_stmt) for n, v in entries)) if entries else None

    def _store_item(self, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """``overrides["num_gpu_blocks_override"] = n``: one more key of a dict to splat."""
        key = (
            nodes.dotted(target.value)
            if isinstance(target.value, (cst.Name, cst.Attribute))
            else None
        )
        index = nodes.single_index(target)
        name = _string_value(index) if index is not None else None
        if key is None or name is None or not vocab.is_sink_name(name):
            self.escapes(value)
            return
        held = self.env.get(key)
        entries = held.entries if isinstance(held, SplatDict) else ()
        self.env[key] = SplatDict((*entries, (name, value, self.current_stmt)))

    def _splatted(self, value: cst.BaseExpression) -> None:
        """``f(**d)``: each block-count key of ``d`` is a keyword of ``f``."""
        entries = [(n, v, self.current_stmt) for n, v in _dict_sinks(value)]
        if not entries and isinstance(value, (cst.Name, cst.Attribute)):
            held = self.env.get(nodes.dotted(value) or "")
            entries = list(held.entries) if isinstance(held, SplatDict) else []
        splat_stmt = self.current_stmt
        for name, element, stmt in entries:
            # The finding belongs to the statement that put the count in the dict (its
            # suppression comments, the statement a fix lays out), not to the splat.
            self.current_stmt = stmt
            self.sink(element, sink=f'"{name}"')
        self.current_stmt = splat_stmt

    def expr(self, node: cst.BaseExpression) -> None:
        """Find sinks inside an expression: keywords, builder arguments, walrus targets."""
        stack: list[cst.CSTNode] = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, _SKIPPED_EXPRS):
                continue
            if isinstance(cur, cst.NamedExpr):
                self.expr(cur.value)
                self.assign(cur.target, cur.value)
                continue
            if isinstance(cur, cst.Call):
                self.call(cur)
            stack.extend(reversed(list(nodes.children(cur))))

    def call(self, node: cst.Call) -> None:
        sunk: set[int] = set()
        for arg in node.args:
            if arg.keyword is not None and vocab.is_sink_name(arg.keyword.value):
                self.sink(arg.value, sink=f"{arg.keyword.value}=")
                sunk.add(id(arg))
            elif arg.star == "**":
                self._splatted(arg.value)
                sunk.add(id(arg))
        callee = nodes.last_name(node.func)
        args = [a for a in nodes.positional(node) if not a.star]
        # A builder also handed a request count is being bounded by it (as in
        # `profiling_block_bound(max_num_reqs, capture_size)`): nothing to report.
        if (
            callee
            and vocab.is_profiling_builder(callee)
            and not any(self._is_request(a.value) for a in args)
        ):
            for arg in args:
                self.sink(arg.value, sink=f"{callee}(...)")
                sunk.add(id(arg))
        if callee not in vocab.NON_ESCAPING_CALLS:
            # Handed to another function: a block-named local's count leaves this one.
            for arg in node.args:
                if id(arg) not in sunk:
                    self.escapes(arg.value)


@dataclass(frozen=True)
class State:
    env: dict
    aliases: dict
    dead: bool


@dataclass(frozen=True)
class SplatDict:
    """A local dict holding block counts under string keys (sinks once splatted)."""

    # (key, value, the statement that stored it)
    entries: tuple[tuple[str, cst.BaseExpression, cst.CSTNode | None], ...]

    @staticmethod
    def merged(values) -> SplatDict:
        out: list = []
        for v in values:
            out.extend(e for e in v.entries if e not in out)
        return SplatDict(tuple(out))


def _string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _dict_sinks(value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """(key, value) of block-count string keys in ``{...}`` or ``dict(...)``."""
    out = []
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                name = _string_value(element.key)
                if name is not None and vocab.is_sink_name(name):
                    out.append((name, element.value))
    return out


def _ref_id(read: cst.Call | cst.Attribute) -> int:
    """The node a reference search finds for a member's call or read (its name)."""
    return id(read.func) if isinstance(read, cst.Call) else id(read)


def _receiver(source: cst.BaseExpression) -> cst.BaseExpression | None:
    """The object a capture-size expression was read from."""
    if isinstance(source, cst.Attribute):
        return source.value
    if isinstance(source, cst.Subscript) and isinstance(source.value, cst.Attribute):
        return source.value.value
    if isinstance(source, cst.Subscript) and isinstance(source.value, cst.Name):
        return source.value  # a local list: resolved through its alias
    if isinstance(source, cst.Call) and nodes.getattr_name(source) is not None:
        return source.args[0].value  # getattr(<receiver>, "max_capture_size", ...)
    if isinstance(source, cst.Call) and isinstance(source.args[0].value, cst.Attribute):
        return source.args[0].value.value
    if isinstance(source, cst.Call) and isinstance(source.args[0].value, cst.Name):
        return source.args[0].value
    return None


# Parents where a bare ``a or b`` may stand without parentheses.
def _needs_parens(node: cst.BaseExpression, parent: cst.CSTNode | None) -> bool:
    if parent is None:
        return False
    if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or):
        return False
    if isinstance(parent, cst.Call) and any(a.value is node for a in nodes.positional(parent)):
        return False
    if isinstance(parent, cst.NamedExpr):
        return False
    # `x if c else <count> or 1` and `a, b = <count> or 1, c` need none either.
    if isinstance(parent, cst.IfExp) and node is not parent.test:
        return False
    return not isinstance(parent, (cst.Tuple, cst.List))
