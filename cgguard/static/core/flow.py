"""Data flow from sources to sinks in one scope of the intermediate form.

A *scope* is a function body, a class body or the module body, without the scopes nested in
it. Statements are walked in order; every local name or attribute chain assigned in the scope
remembers whether its value derives from a source (a :class:`Taint`). Where a tainted value
reaches a sink of the model, a :class:`Hit` is recorded at the place the value *becomes* the
count, with the expression a fix would bound.

The walk is flow-sensitive: the states of an ``if``'s branches are joined (a count is bounded
afterwards only if it is bounded on every path that goes on), loops run twice, an exception
handler starts from the join of every point of its ``try`` body, and ``return``/``raise`` end
a path. What calls do is asked of a :class:`Resolver` (the program's summaries).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from cgguard.static.core import ir
from cgguard.static.core.patterns import Model, dotted, getattr_name, last_name

TOKEN = "token"  # the source's own count (the first rule)
MAX = "max"  # the count after a widening call (``max()``: the second rule)

REQUESTS = "requests"
TOKENS = "tokens"
_OPAQUE = "opaque"


@dataclass(frozen=True, eq=False)
class Rewrite:
    """Where the fix goes: bound ``target`` by the request count.

    With ``has_fallback`` the target is the first operand of ``target or K`` (``whole``) and
    keeps its fallbacks; otherwise ``or 1`` is added (in parentheses when ``needs_parens``).
    With ``insert`` the target is a ``min()`` without a request count: the request count
    becomes its first argument.
    """

    target: ir.Expr
    has_fallback: bool
    needs_parens: bool
    whole: ir.Expr | None = None
    fallbacks: tuple[ir.Expr, ...] = ()
    insert: bool = False


@dataclass(frozen=True, eq=False)
class Hit:
    kind: str  # TOKEN or MAX
    sink: str  # what receives the count, for the message
    node: ir.Expr  # where the count enters (the finding's place)
    source: ir.Expr  # the source expression
    rewrite: Rewrite | None
    request: str | None  # the request count a fix would use
    stmt: object | None = None  # the statement holding ``node`` (suppressions, layout)
    guessed: bool = False  # the request count is a guess: the fix is unsafe
    via: str | None = None  # ``helper()`` the count came through, for the message
    helper: object | None = None  # that helper's summary
    path: str | None = None  # the module the hit is in, where not the one analysed
    none_tested: bool = False  # the code tests the source's value for None (any alias)
    # The rule reporting it: the driver stamps it from the configuration whose model the
    # core ran (the core knows no rule; None: the one model's, by ``kind``).
    rule: str | None = None


@dataclass(frozen=True, eq=False)
class Taint:
    kind: str
    source: ir.Expr
    reported: bool = False
    pending: Hit | None = None  # made at a block-named local, recorded once it reaches a sink
    call: ir.Call | ir.Attribute | None = None  # the member call or read it came from
    helper: Summary | None = None
    through: str | None = None  # ``helper()`` it was passed through as an argument


@dataclass(eq=False)
class Returned:
    """A ``return`` (or a store on ``self``) of a followed count, with its fix in the scope's terms."""

    stmt: object
    value: ir.Expr
    taint: Taint
    rewrite: Rewrite | None
    request: str | None
    guessed: bool
    chain: str | None  # the source's receiver, in the scope's names
    index: int | None = None  # the element of a returned tuple
    attr: str | None = None  # ``self.<attr> = <count>``: the member it sets


@dataclass(eq=False)
class Summary:
    """What a member carries: a function's return, a property, an attribute set on ``self``."""

    function: FunctionInfo
    kind: str
    source: ir.Expr
    chain: str | None
    returns: list[Returned] = field(default_factory=list)
    index: int | None = None
    attr: str | None = None
    path: str | None = None  # the module it is defined in

    @property
    def stored(self) -> bool:
        return self.attr is not None

    @property
    def name(self) -> str:
        return self.attr if self.attr is not None else self.function.name

    @property
    def spelled(self) -> str:
        if self.attr is not None or self.function.is_property:
            return f"self.{self.name}"
        return f"{self.name}()"


@dataclass(eq=False)
class FunctionInfo:
    """A function of the program and where it lives."""

    node: ir.FunctionDef
    cls: ir.ClassDef | None
    path: str

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def decorators(self) -> frozenset[str]:
        return frozenset(last_name(_undecorated(d)) or "" for d in self.node.decorators)

    @property
    def is_property(self) -> bool:
        return self.cls is not None and bool(self.decorators & {"property", "cached_property"})

    @property
    def implicit_first(self) -> bool:
        return self.cls is not None and "staticmethod" not in self.decorators

    def positional(self) -> list[str]:
        return [p.name for p in self.node.params if p.kind in ("posonly", "pos")]

    def names(self) -> list[str]:
        return [p.name for p in self.node.params if p.kind in ("posonly", "pos", "kwonly")]


def _undecorated(node: ir.Expr) -> ir.Expr:
    return node.func if isinstance(node, ir.Call) else node


class ClassFacts(Protocol):
    name: str

    @property
    def is_runner(self) -> bool: ...

    @property
    def self_attrs(self) -> frozenset[str]: ...


# What a call hands from its arguments to its result: the callee's name and, per argument,
# a function giving (kind, tuple index or None) for each way its parameter reaches the return.
Passed = tuple[str, list[tuple[ir.Expr, Callable[[], list[tuple[str, int | None]]]]]]


class Resolver(Protocol):
    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        """The summary of the helper a call calls or the member a read reads."""

    def requests(self, node: ir.Call | ir.Attribute) -> bool:
        """Does the helper a call calls (the property a read reads) return a request count?"""

    def passing(self, call: ir.Call) -> Passed | None:
        """What a call hands through from its arguments to its result."""

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        """Arguments of ``call`` (those ``tainted``) that the callee hands to a sink."""

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        """From here on the scope's ``name`` calls ``func``, a function defined in it (a
        nested ``def``, a lambda as the function returning its body); None: no longer."""

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        """(sink key, argument) for each argument of ``call`` (those ``tainted``) that the
        callee returns in a dict under a sink key: the dict is a sink once splatted."""

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        """(member, argument) for each argument of ``call`` (those ``tainted``) that the
        object it builds keeps as a member with its count: a field of a dataclass or a
        named tuple of the program, or a member its ``__init__`` sets from the parameter."""

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        """Is what a call returns, or a member of ``self`` holds, a list of sources?"""

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[str | None, bool]:
        """What the callee returns of the lists of sources ``call`` hands it (``listed``
        tells one): the kind of the count it picks from one (its largest, its last) or
        None, and whether it returns one (a sorted copy)."""


class NoResolver:
    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        return None

    def requests(self, node: ir.Call | ir.Attribute) -> bool:
        return False

    def passing(self, call: ir.Call) -> Passed | None:
        return None

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        return []

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        return None

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        return []

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        return []

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        return False

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[str | None, bool]:
        return None, False


_REQUEST = object()
_TOKENS = object()
_UNKNOWN = object()  # not in taint_of's memo
_SOURCE_LIST = object()
_SOURCE_ELEMENT = object()

# Nodes with no node inside: nothing to look into.
_LEAVES = frozenset({ir.Name, ir.Const})
_SKIPPED = (ir.Lambda, ir.Comprehension)


class _Watched(dict):
    """A scope's env or aliases: every write through its methods clears taint_of's memo
    (``memo``), whose answers were read from the state before it. Nothing writes to them
    otherwise (``|=`` is not used on them)."""

    def __init__(self, memo: dict, *args: object) -> None:
        super().__init__(*args)
        memo.clear()
        self._memo = memo

    def __setitem__(self, key, value) -> None:
        self._memo.clear()
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._memo.clear()
        super().__delitem__(key)

    def pop(self, *args):
        self._memo.clear()
        return super().pop(*args)

    def setdefault(self, key, default=None):
        self._memo.clear()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs) -> None:
        self._memo.clear()
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self._memo.clear()
        super().clear()

    def popitem(self):
        self._memo.clear()
        return super().popitem()


@dataclass(frozen=True)
class SplatDict:
    """A local dict holding counts under sink keys (sinks once splatted into a call)."""

    entries: tuple[tuple[str, ir.Expr, object], ...]  # (key, value, the statement that stored it)

    @staticmethod
    def merged(values: Sequence[object]) -> SplatDict:
        out: list[tuple[str, ir.Expr, object]] = []
        for v in values:
            if isinstance(v, SplatDict):
                out.extend(e for e in v.entries if e not in out)
        return SplatDict(tuple(out))


@dataclass(frozen=True)
class State:
    env: dict[str, object]
    aliases: dict[str, ir.Expr]
    dead: bool


def or_operands(node: ir.Expr) -> list[ir.Expr]:
    return list(node.values) if isinstance(node, ir.BoolOp) else [node]


class ScopeFlow:
    def __init__(
        self,
        model: Model,
        class_facts: ClassFacts | None,
        params: Sequence[ir.Param] = (),
        resolver: Resolver | None = None,
        *,
        function: bool = True,
        summarising: bool = False,
        seeds: dict[str, Taint] | None = None,
    ):
        self.model = model
        self.class_facts = class_facts
        self.function = function
        self.resolver: Resolver = resolver or NoResolver()
        self.summarising = summarising
        self.returns: list[Returned] = []
        self.stored: list[Returned] = []
        self.sunk_calls: set[int] = set()  # ids of member calls/reads that became a count
        self.other_uses: set[int] = set()  # ids of member calls/reads used otherwise too
        self.sunk_params: list[tuple[str, str]] = []  # (seeded parameter, sink) when summarising
        # (seeded parameter, key) when summarising: the return is a dict holding the
        # parameter's count under a sink key (``replace(cfg, **helper(n))``)
        self.returned_keys: list[tuple[str, str]] = []
        # Locals given entries or fields by what was assigned to them (see _entries).
        self._holders: set[str] = set()
        # A list of sources returned, and the members of ``self`` set to one.
        self.returns_list = False
        self.stored_lists: set[str] = set()
        self._sunk: dict[int, Taint] = {}
        self._pending: dict[int, Taint] = {}
        self._emitted: set[int] = set()
        self._returned: set[int] = set()
        self.dead = False
        self.current_stmt: object | None = None
        # What taint_of found for each node since the scope's state last changed: a
        # statement asks about the same expressions several times (its value, each call's
        # arguments, stores, escapes). Any write to env or aliases, and any function the
        # scope defines, clears it (_Watched, _define).
        self._memo: dict[ir.Expr, Taint | None] = {}
        self.env: dict[str, object] = _Watched(self._memo)
        self.aliases: dict[str, ir.Expr] = _Watched(self._memo)
        self.hits: list[Hit] = []
        # Ids of the sources whose value the scope tests for None, under any name
        # (``cap = cc.max_cudagraph_capture_size`` then ``if cap is None``).
        self.none_tested: set[int] = set()
        self.none_tested_names: set[str] = set()  # and the names those sources read
        for p in params:
            if p.name in model.request_counts:
                self.env[p.name] = _REQUEST
            elif p.name in model.source_params:
                self.env[p.name] = Taint(TOKEN, ir.Name(p.name, p.span))
        for p in params:
            if p.default is not None:
                taint = self.taint_of(p.default)
                if taint is not None:
                    self.env[p.name] = taint
        for name, taint in (seeds or {}).items():
            self.env[name] = taint

    # ---- expressions -----------------------------------------------------------------

    def taint_of(self, node: ir.Expr) -> Taint | None:
        if type(node) is ir.Const:
            return None  # a literal carries no count
        found = self._memo.get(node, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._memo[node] = self._taint_of(node)
        return found  # type: ignore[return-value]

    def _taint_of(self, node: ir.Expr) -> Taint | None:
        m = self.model
        if m.is_source(node):
            return Taint(TOKEN, node)
        if isinstance(node, ir.Name | ir.Attribute):
            key = dotted(node)
            value = self.env.get(key) if key else None
            if isinstance(value, Taint):
                return value
            if value is None and isinstance(node, ir.Attribute):
                summary = self.resolver.member(self._built_read(node))
                if summary is not None and summary.index is None:
                    return Taint(summary.kind, summary.source, call=node, helper=summary)
            return None
        if isinstance(node, ir.Subscript):
            index = node.index
            if _is_minus_one(index) and self._source_list(node.value):
                return Taint(TOKEN, node)
            if isinstance(index, ir.Const) and isinstance(index.value, str):
                held = self.env.get(f"{dotted(node.value)}[{index.value!r}]")
                if isinstance(held, Taint):
                    return held
            if isinstance(node.value, ir.Call) and _int(index) is not None:
                summary = self.resolver.member(node.value)
                if summary is not None and summary.index == _int(index):
                    return Taint(summary.kind, summary.source, call=node.value, helper=summary)
                return self._passed(node.value, _int(index))
            return None
        if isinstance(node, ir.BoolOp):
            return next((t for t in map(self.taint_of, node.values) if t), None)
        if isinstance(node, ir.BinOp):
            if m.converts(node):
                return None  # a count of another unit (the model's converting factors)
            return self.taint_of(node.left) or self.taint_of(node.right)
        if isinstance(node, ir.UnaryOp):
            return self.taint_of(node.operand)
        if isinstance(node, ir.IfExp):
            return self._ifexp_taint(node)
        if isinstance(node, ir.NamedExpr):
            return self.taint_of(node.value)
        if isinstance(node, ir.Call):
            read = _getattr_read(node)
            if read is not None:  # ``getattr(self, "name")`` reads ``self.name``
                default = node.args[2].value if len(node.args) == 3 else None
                return self.taint_of(read) or (None if default is None else self.taint_of(default))
            summary = self.resolver.member(node)
            if summary is not None:
                if summary.index is not None:
                    return None
                return Taint(summary.kind, summary.source, call=node, helper=summary)
            passed = self._passed(self._unpartial(node), None)
            if passed is not None:
                return passed
            callee = last_name(node.func)
            args = _positional(node)
            if (
                callee in m.widening_calls
                and len(args) == 1
                and not args[0].star
                and self._source_list(args[0].value)
            ):
                return Taint(TOKEN, node)
            if self._hands_list(node):
                picked, _ = self.resolver.from_list(node, self._handed_list)
                if picked is not None:
                    return Taint(picked, node)  # the helper's pick is the call's count
            if callee in m.clamp_calls:
                if any(self._is_request(a.value) for a in args):
                    return None
                return next((t for t in map(self._arg_taint, args) if t), None)
            if callee in m.widening_calls and len(args) > 1:
                for a in args:
                    t = self._arg_taint(a)
                    if t:
                        return replace(t, kind=MAX)
                return None
            if callee in m.passthrough_calls and args:
                return self._arg_taint(args[0])
        return None

    def _built_read(self, node: ir.Attribute) -> ir.Attribute:
        """``local.attr`` where the local holds an object a call built (``local = Klass()``):
        the read of ``Klass(...).attr``, which the resolver can tell the class of."""
        built = self.aliases.get(node.value.id) if isinstance(node.value, ir.Name) else None
        return ir.Attribute(built, node.attr, node.span) if isinstance(built, ir.Call) else node

    def _ifexp_taint(self, node: ir.IfExp) -> Taint | None:
        """``c if c <= R else R`` is a clamp: bounded on both arms."""
        body_bound, else_bound = self._clamped(node.test)
        saved = dict(self.env)
        try:
            if body_bound is not None:
                self.env[body_bound] = _REQUEST
            body = self.taint_of(node.body)
            self.env = _Watched(self._memo, saved)
            if else_bound is not None:
                self.env[else_bound] = _REQUEST
            other = self.taint_of(node.orelse)
        finally:
            self.env = _Watched(self._memo, saved)
        return body or other

    def _passed_args(self, call: ir.Call, index: int | None):
        if not any(self._tainted(a.value) for a in call.args):
            return  # nothing to hand through: the callee is not resolved (nor its module read)
        found = self.resolver.passing(call)
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

    def entry(self, node: ir.Expr) -> ir.Expr | None:
        """The argument of a call (or an element of its tuple) whose count the callee hands through."""
        index = None
        if isinstance(node, ir.Subscript) and isinstance(node.value, ir.Call):
            at = _int(node.index)
            if at is None:
                return None
            index, node = at, node.value
        if not isinstance(node, ir.Call):
            return None
        if self.resolver.member(node) is not None:
            return None
        indexes = [index] if index is not None else [None, *range(len(node.args) + 8)]
        for i in indexes:
            for arg, _, _, _ in self._passed_args(node, i):
                return arg
        return None

    def _passed(self, call: ir.Call, index: int | None) -> Taint | None:
        for _, taint, kind, name in self._passed_args(call, index):
            kind = MAX if MAX in (kind, taint.kind) else taint.kind
            return replace(taint, kind=kind, through=taint.through or f"{name}()")
        return None

    def _source_list(self, node: ir.Expr, depth: int = 0, resolved: bool = True) -> bool:
        """A list of sources: a local holding one, a sorted or filtered copy of one; with
        ``resolved``, also a member of ``self`` a method sets to one, or a helper's return."""
        if isinstance(node, ir.Name) and self.env.get(node.id) is _SOURCE_LIST:
            return True
        if depth > 8:
            return False
        if isinstance(node, ir.Name | ir.Attribute):
            if self.model.is_source_list(node):
                return True
            # a member of ``self`` a method sets to one
            return (
                resolved
                and isinstance(node, ir.Attribute)
                and _is_name(node.value, "self")
                and self.resolver.source_list(node)
            )
        if isinstance(node, ir.Call) and last_name(node.func) in self.model.collection_calls:
            args = _positional(node)
            return (
                bool(args)
                and not args[0].star
                and self._source_list(args[0].value, depth + 1, resolved)
            )
        if isinstance(node, ir.Call) and resolved:
            if self.resolver.source_list(node):  # a helper returning one
                return True
            # a helper returning one it is handed (sorted, filtered)
            return self._hands_list(node) and self.resolver.from_list(node, self._handed_list)[1]
        if isinstance(node, ir.Comprehension) and node.kind in ("list", "generator", "set"):
            first = node.generators[0]
            return (
                isinstance(first.target, ir.Name)
                and isinstance(node.elt, ir.Name)
                and node.elt.id == first.target.id
                and self._source_list(first.iter, depth + 1, resolved)
            )
        return False

    def _handed_list(self, node: ir.Expr) -> bool:
        """A list of sources the scope itself shows (a local holding one, the model's lists
        and copies of them), as a helper is handed it. A member of ``self`` or a call's
        result handed on is not resolved for it: most calls' arguments are members, and
        asking each would compute the flows of every method setting them."""
        return self._source_list(node, resolved=False)

    def _hands_list(self, call: ir.Call) -> bool:
        """Does ``call`` hand a list of sources (:meth:`_handed_list`) to its callee?"""
        return any(not a.star and self._handed_list(a.value) for a in call.args)

    def _tainted(self, node: ir.Expr) -> bool:
        return self.taint_of(node) is not None

    def _arg_taint(self, arg: ir.Arg) -> Taint | None:
        return None if arg.star else self.taint_of(arg.value)

    def count_kind(self, node: ir.Expr) -> str | None:
        kinds: set[str] = set()
        self._leaf_kinds(node, kinds, 0)
        if _OPAQUE in kinds:
            return None
        if kinds == {REQUESTS}:
            return REQUESTS
        if kinds == {TOKENS}:
            return TOKENS
        return None

    def _leaf_kinds(self, node: ir.Expr, kinds: set[str], depth: int) -> None:
        m = self.model
        if depth > 50:
            kinds.add(_OPAQUE)
            return
        if isinstance(node, ir.Name | ir.Attribute):
            key = dotted(node)
            kind = self._local_kind(key) if key is not None else None
            if kind is None:
                name = last_name(node)
                if name in m.request_counts:
                    kind = REQUESTS
                elif name in m.token_counts:
                    kind = TOKENS
            if kind is None and key is None:
                kind = _OPAQUE
            if kind is None and isinstance(node, ir.Attribute) and self.resolver.requests(node):
                kind = REQUESTS
            if kind is not None:
                kinds.add(kind)
            return
        if isinstance(node, ir.Const) and isinstance(node.value, int | float):
            return
        if isinstance(node, ir.BinOp):
            self._leaf_kinds(node.left, kinds, depth + 1)
            self._leaf_kinds(node.right, kinds, depth + 1)
            return
        if isinstance(node, ir.UnaryOp):
            self._leaf_kinds(node.operand, kinds, depth + 1)
            return
        if isinstance(node, ir.Call):
            if last_name(node.func) in m.passthrough_calls:
                args = _positional(node)
                if args and not args[0].star:
                    self._leaf_kinds(args[0].value, kinds, depth + 1)
                    return
            if self.resolver.requests(node):
                kinds.add(REQUESTS)
                return
        kinds.add(_OPAQUE)

    def _local_kind(self, key: str) -> str | None:
        value = self.env.get(key)
        if value is _REQUEST:
            return REQUESTS
        if value is _TOKENS or isinstance(value, Taint):
            return TOKENS
        return None

    def _is_request(self, node: ir.Expr) -> bool:
        if self.model.mentions_request(node):
            return True
        for sub in _walk(node):
            if isinstance(sub, ir.Name | ir.Attribute):
                key = dotted(sub)
                if key and self.env.get(key) is _REQUEST:
                    return True
            if isinstance(sub, ir.Call | ir.Attribute) and self.resolver.requests(sub):
                return True
        return False

    def locate(self, node: ir.Expr, parent: object | None) -> Rewrite | None:
        """The smallest sub-expression of a tainted ``node`` that is the count."""
        entry = self.entry(node)
        if entry is not None:
            positional = isinstance(node, ir.Call) and any(
                a.value is entry for a in _positional(node)
            )
            return self.locate(entry, node if positional else None)
        taint = self.taint_of(node)
        if not taint:
            return None
        if (
            taint.source is node
            or self.model.is_source(node)
            or isinstance(node, ir.Name | ir.Attribute | ir.Subscript)
        ):
            return Rewrite(node, False, _needs_parens(node, parent))
        if isinstance(node, ir.BoolOp):
            values = list(node.values)
            first, rest = values[0], values[1:]
            if node.op == "or" and self.taint_of(first) and not any(map(self.taint_of, rest)):
                insert = isinstance(first, ir.Call) and _is_name(first.func, "min")
                return Rewrite(first, True, False, node, tuple(rest), insert)
            for v in values:
                r = self.locate(v, node)
                if r:
                    return r
            return None
        if isinstance(node, ir.BinOp):
            return self.locate(node.left, node) or self.locate(node.right, node)
        if isinstance(node, ir.UnaryOp):
            return self.locate(node.operand, node)
        if isinstance(node, ir.IfExp):
            if self._compares_count(node.test):
                # ``cap if cap <= n else n``: a clamp by something else than a request
                # count (a min() in another form): the whole expression is the count.
                return Rewrite(node, False, _needs_parens(node, parent))
            return self.locate(node.body, node) or self.locate(node.orelse, node)
        if isinstance(node, ir.NamedExpr):
            return self.locate(node.value, node)
        if isinstance(node, ir.Call):
            if self.resolver.member(node) is not None:
                return Rewrite(node, False, _needs_parens(node, parent))
            callee = last_name(node.func)
            if callee in self.model.clamp_calls:
                return Rewrite(node, False, False, insert=True)
            if callee in self.model.widening_calls or callee in self.model.passthrough_calls:
                for a in _positional(node):
                    r = None if a.star else self.locate(a.value, node)
                    if r:
                        return r
        return None

    # ---- the request count for the fix ----------------------------------------------

    def request_of(self, taint: Taint) -> tuple[str | None, bool]:
        text = self.chain_of(taint)
        if text is not None:
            req = self._request_from_chain(text)
            if req:
                return req, False
        for key, value in self.env.items():
            if value is _REQUEST and "." not in key:
                return key, False
        facts = self.class_facts
        # Read from this object: the capture size's receiver (``self.cc...``), or a member
        # of it (``self.max_graph``, set by a base from its own parameter).
        on_self = text is not None and text.split(".", 1)[0] == "self"
        member = isinstance(taint.call, ir.Attribute) and _is_name(taint.call.value, "self")
        if (on_self or (text is None and member)) and facts is not None:
            own = self._self_request()
            m = self.model
            return (own, False) if own else (f"self.{m.runner_request}", True)
        return None, False

    def chain_of(self, taint: Taint) -> str | None:
        if taint.call is None:
            recv = _receiver(taint.source)
            return self._resolve(recv) if recv is not None else None
        summary = taint.helper
        if summary is None or summary.chain is None:
            return None
        root, dot, rest = summary.chain.partition(".")
        owner = summary.function
        params = owner.names()
        call = taint.call
        receiver = call.func if isinstance(call, ir.Call) else call
        if owner.implicit_first and params[:1] == [root]:
            own = isinstance(receiver, ir.Attribute) and isinstance(receiver.value, ir.Name)
            base = (
                "self"
                if own and isinstance(receiver, ir.Attribute) and _is_name(receiver.value, "self")
                else None
            )
        elif root in params:
            built = self._built_read(call).value if isinstance(call, ir.Attribute) else None
            if isinstance(call, ir.Call) and not summary.stored:
                arg = call_argument(call, owner, root)
            elif isinstance(built, ir.Call) and summary.stored and owner.name == "__init__":
                # a member the object's ``__init__`` set from its parameter: the argument
                # the call building the object (``Limits(self.vllm_config).tokens``) gave it
                arg = call_argument(built, owner, root)
            else:
                arg = None
            base = self._resolve(arg) if arg is not None else None
        else:
            base = root
        return None if base is None else base + dot + rest

    def _resolve(self, node: ir.Expr, depth: int = 0) -> str | None:
        if isinstance(node, ir.Name):
            alias = self.aliases.get(node.id)
            if alias is not None and depth < 8:
                return self._resolve(alias, depth + 1)
            return node.id
        if isinstance(node, ir.Attribute):
            base = self._resolve(node.value, depth)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ir.Call) and not node.args:
            base = self._resolve(node.func, depth)
            return f"{base}()" if base is not None else None
        if isinstance(node, ir.Call) and last_name(node.func) in self.model.collection_calls:
            return self._resolve(node.args[0].value, depth + 1) if node.args else None
        if isinstance(node, ir.Call) and depth < 8 and self._hands_list(node):
            # a helper returning the list of sources it is handed: that list's receiver
            if self.resolver.from_list(node, self._handed_list)[1]:
                handed = [a.value for a in node.args if not a.star and self._handed_list(a.value)]
                return self._resolve(handed[0], depth + 1) if handed else None
            return None
        if isinstance(node, ir.Comprehension) and depth < 8:
            return self._resolve(node.generators[0].iter, depth + 1)
        return None

    def _request_from_chain(self, chain: str) -> str | None:
        m = self.model
        parts = chain.split(".")
        if parts[-1] in m.source_lists:
            parts = parts[:-1]
        for i, part in enumerate(parts[:-1]):
            if part in m.runner_names and i + 1 < len(parts):
                return ".".join(parts[: i + 1]) + "." + m.runner_request
        if parts[-1] == m.source_config:
            parts = parts[:-1]
        if not parts:
            return None
        facts = self.class_facts
        if parts[0] == "self" and facts is not None and facts.is_runner:
            return f"self.{m.runner_request}"  # a runner has its own request count
        base = ".".join(parts)
        last = parts[-1]
        if base == "self":
            return self._self_request()
        if last in m.runner_names:
            return f"{base}.{m.runner_request}"
        if last in m.config_roots:
            return f"{base}.{m.config_request}"
        return None

    def _self_request(self) -> str | None:
        facts = self.class_facts
        if facts is None:
            return None
        if facts.is_runner:
            return f"self.{self.model.runner_request}"
        attrs = facts.self_attrs
        for attr, text in self.model.class_requests:
            if attr in attrs:
                return text
        return None

    # ---- sinks -------------------------------------------------------------------------

    def sink(self, value: ir.Expr, sink: str, parent: object | None = None) -> Taint | None:
        """``value`` reaches a sink; record a hit unless seen (at a block-named local first)."""
        seen = self._sunk.get(id(value))
        if seen is not None:
            return seen
        taint = self.taint_of(value)
        if taint is None:
            return None
        if self.summarising and taint.source in self._seed_sources:
            self.sunk_params.append((self._seed_sources[taint.source], sink))
        elif taint.pending is not None:
            self.emit(taint)
        elif not taint.reported:
            if taint.call is not None:
                self.sunk_calls.add(_ref_id(taint.call))
            self.hits.append(self._hit(taint, value, sink, parent))
        result = self._sunk[id(value)] = replace(taint, reported=True)
        return result

    _seed_sources: dict[ir.Expr, str] = {}  # replaced per summarising flow (see seed_params)

    def seed_params(
        self, names: Sequence[str], params: Sequence[ir.Param], listed: bool = False
    ) -> None:
        """Summarising: each parameter named carries its own source (the parameter itself),
        or with ``listed`` a list of sources (what is picked from it is a count)."""
        self._seed_sources = {}
        for p in params:
            if p.name in names:
                if listed:
                    self.env[p.name] = _SOURCE_LIST
                    continue
                source = ir.Name(p.name, p.span)
                self._seed_sources[source] = p.name
                self.env[p.name] = Taint(TOKEN, source)

    def _hit(self, taint: Taint, value: ir.Expr, sink: str, parent: object | None) -> Hit:
        request, guessed = self.request_of(taint)
        entry = self.entry(value) if taint.through is not None else None
        return Hit(
            kind=taint.kind,
            sink=sink,
            node=value if entry is None else entry,
            source=taint.source,
            rewrite=self.locate(value, parent),
            request=request,
            stmt=self.current_stmt,
            guessed=guessed,
            via=self._via(taint),
            helper=taint.helper,
        )

    def _via(self, taint: Taint) -> str | None:
        """The helper or member a count came through, as the scope spells it: a member of
        another object is its read (``limits.graph_tokens``), not the class's ``self.``."""
        if taint.helper is None:
            return taint.through
        read = taint.call
        if isinstance(read, ir.Attribute) and not _is_name(read.value, "self"):
            return dotted(read) or taint.helper.spelled
        return taint.helper.spelled

    def pending(self, value: ir.Expr, sink: str, parent: object | None) -> Taint | None:
        """``value`` is assigned to a block-named local: the hit is made here, recorded later."""
        seen = self._pending.get(id(value))
        if seen is not None:
            return seen
        taint = self.taint_of(value)
        if taint is None:
            return None
        seeded = self.summarising and taint.source in self._seed_sources
        if taint.pending is None and not taint.reported and not seeded:
            taint = replace(taint, pending=self._hit(taint, value, sink, parent))
        self._pending[id(value)] = taint
        return taint

    def emit(self, taint: Taint | None) -> None:
        if taint is None or taint.pending is None or id(taint.pending) in self._emitted:
            return
        self._emitted.add(id(taint.pending))
        if taint.call is not None:
            self.sunk_calls.add(_ref_id(taint.call))
        self.hits.append(taint.pending)

    def escapes(self, node: ir.Expr) -> None:
        """``node`` leaves the function (returned, stored on an object). That is no sink,
        whatever the local is called: a helper's or member's count is used otherwise there
        (the return of a helper is followed to its callers by its summary)."""
        if isinstance(node, ir.Seq):
            for element in node.elts:
                self.escapes(element)
            return
        if isinstance(node, ir.Dict):
            for value in node.values:
                self.escapes(value)
            return
        if isinstance(node, ir.Starred):
            node = node.value
        taint = self.taint_of(node)
        if taint is not None and taint.call is not None:
            self.other_uses.add(_ref_id(taint.call))

    def used(self, node: ir.Expr) -> None:
        """``node`` is handed to a call that is no sink (a buffer's size, an unknown helper):
        a helper's or member's count is used otherwise there."""
        if isinstance(node, ir.Starred):
            node = node.value
        taint = self.taint_of(node)
        if taint is not None and taint.call is not None:
            self.other_uses.add(_ref_id(taint.call))

    # ---- states ------------------------------------------------------------------------

    def snapshot(self) -> State:
        return State(dict(self.env), dict(self.aliases), self.dead)

    def restore(self, state: State) -> None:
        self.env = _Watched(self._memo, state.env)
        self.aliases = _Watched(self._memo, state.aliases)
        self.dead = state.dead

    def join(self, *states: State) -> State:
        live = [s for s in states if not s.dead]
        if not live:
            return State({}, {}, True)
        if len(live) == 1:
            return live[0]
        env: dict[str, object] = {}
        keys: dict[str, None] = {}
        for s in live:
            keys.update(dict.fromkeys(s.env))
        for key in keys:
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
            elif any(v is _SOURCE_ELEMENT for v in values):
                env[key] = _SOURCE_ELEMENT
            elif any(v is _SOURCE_LIST for v in values):
                env[key] = _SOURCE_LIST  # a list of sources on one path may hold the largest
            elif all(isinstance(v, SplatDict) for v in values):
                env[key] = SplatDict.merged(values)
        aliases: dict[str, ir.Expr] = {}
        for s in live:
            for k, v in s.aliases.items():
                aliases.setdefault(k, v)
        return State(env, aliases, False)

    # ---- statements --------------------------------------------------------------------

    def run(self, body: Sequence[ir.Stmt]) -> list[Hit]:
        for stmt in body:
            if self.dead:
                break
            self.stmt(stmt)
        return self.hits

    def branch(self, start: State, body: Sequence[ir.Stmt], bound: str | None = None) -> State:
        self.restore(start)
        if bound is not None and not self.dead:
            self.env[bound] = _REQUEST
        self.run(body)
        return self.snapshot()

    def _define(self, name: str, func: ir.FunctionDef | None) -> None:
        """The scope's ``name`` calls ``func`` from here on (see :meth:`Resolver.define`):
        what a call of it gives may change, so taint_of's answers are dropped."""
        self.resolver.define(name, func)
        self._memo.clear()

    def stmt(self, node: ir.Stmt) -> None:
        if isinstance(node, ir.FunctionDef):
            # A helper defined in the scope (a closure doing the override for its caller):
            # its calls below are resolved to it, as a module's functions are.
            self._define(node.name, node)
            return
        if isinstance(node, ir.ClassDef):
            self._define(node.name, None)
            return
        self.current_stmt = node
        if isinstance(node, ir.Assign):
            self.expr(node.value)
            for target in node.targets:
                if isinstance(target, ir.Name):
                    self._define(target.id, _lambda_function(target.id, node.value))
                if self.assign_call(target, node.value):
                    continue
                for name, value in unpack_pairs(target, node.value):
                    if value is None:
                        self.forget(name)
                    else:
                        self.assign(name, value, element_parent(node.value, value))
        elif isinstance(node, ir.Return):
            if node.value is not None:
                self.expr(node.value)
                self.returned(node)
            self.dead = True
        elif isinstance(node, ir.Other) and node.kind == "raise":
            for child in node.exprs:
                self.expr(child)
            self.dead = True
        elif isinstance(node, ir.AugAssign):
            self.expr(node.value)
            key = dotted(node.target)
            taint = self.taint_of(node.value)
            if key is not None and taint is not None and not isinstance(self.env.get(key), Taint):
                self.env[key] = taint
        elif isinstance(node, ir.If):
            self.expr(node.test)
            body_bound, else_bound = self._clamped(node.test)
            pre = self.snapshot()
            taken = self.branch(pre, node.body, body_bound)
            other = self.branch(pre, node.orelse, else_bound)
            self.restore(self.join(taken, other))
        elif isinstance(node, ir.While | ir.For):
            if isinstance(node, ir.While):
                self.expr(node.test)
            else:
                self.expr(node.iter)
                self.forget(node.target)
                if isinstance(node.target, ir.Name) and self._source_list(node.iter):
                    self.env[node.target.id] = _SOURCE_ELEMENT  # one size of the list
                    self.aliases[node.target.id] = node.iter
            pre = self.snapshot()
            state = pre
            for _ in range(2):
                after = self.branch(self.join(pre, state), node.body)
                state = self.join(state, after)
            self.restore(self.join(pre, state))
            self.run(node.orelse)
        elif isinstance(node, ir.Try):
            pre = self.snapshot()
            anywhere = [pre]
            for stmt in node.body:
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
            if node.finalbody:
                dead = self.dead
                self.dead = False
                self.run(node.finalbody)
                self.dead = self.dead or dead
        elif isinstance(node, ir.With):
            for item in node.items:
                self.expr(item.context)
                if item.target is not None:
                    self.forget(item.target)
            self.run(node.body)
        elif isinstance(node, ir.Match):
            self.expr(node.subject)
            pre = self.snapshot()
            outs = [pre]
            for case in node.cases:
                outs.append(self.branch(pre, case.body))
            self.restore(self.join(*outs))
        elif isinstance(node, ir.ExprStmt):
            self.expr(node.value)
        elif isinstance(node, ir.Other):
            for child in node.exprs:
                self.expr(child)

    def _unpartial(self, call: ir.Call) -> ir.Call:
        """``f(x)`` where the local ``f`` is ``partial(g, a)``: the call ``g(a, x)``."""
        if not isinstance(call.func, ir.Name):
            return call
        bound = self.aliases.get(call.func.id)
        if not (
            isinstance(bound, ir.Call)
            and last_name(bound.func) in self.model.partial_calls
            and bound.args
            and not bound.args[0].star
            and bound.args[0].keyword is None
        ):
            return call
        return ir.Call(bound.args[0].value, bound.args[1:] + call.args, call.span)

    def _compares_count(self, test: ir.Expr) -> bool:
        """A one-comparison test with a followed count on one side (``cap <= n``)."""
        if not isinstance(test, ir.Compare) or len(test.ops) != 1:
            return False
        if test.ops[0] not in ("<", "<=", ">", ">="):
            return False
        return any(self.taint_of(side) is not None for side in (test.left, test.comparators[0]))

    def _clamped(self, test: ir.Expr) -> tuple[str | None, str | None]:
        """``if x > R:`` / ``if x <= R:``: which branch knows ``x`` is at most a request count."""
        if not isinstance(test, ir.Compare) or len(test.ops) != 1:
            return None, None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if op in ("<", "<="):
            left, right = right, left
        elif op not in (">", ">="):
            return None, None
        for big, small, bound_in_body in ((left, right, False), (right, left, True)):
            key = dotted(big) if isinstance(big, ir.Name | ir.Attribute) else None
            if key and self.taint_of(big) is not None and self._is_request(small):
                return (key, None) if bound_in_body else (None, key)
        return None, None

    def returned(self, node: ir.Return) -> None:
        value = node.value
        if value is None or id(node) in self._returned:
            return
        self._returned.add(id(node))
        self.escapes(value)
        if self._source_list(value):
            self.returns_list = True
        if self.summarising:
            for key, element in self._dict_sinks(value):
                taint = self.taint_of(element)
                if taint is not None and taint.source in self._seed_sources:
                    self.returned_keys.append((self._seed_sources[taint.source], key))
        if isinstance(value, ir.Seq) and value.kind == "tuple":
            for i, element in enumerate(value.elts):
                if isinstance(element, ir.Starred):
                    return
                self._summarise(node, element, i, value)
            return
        self._summarise(node, value, None, None)

    def _summarise(self, stmt: object, value: ir.Expr, index: int | None, parent: object) -> None:
        taint = self.taint_of(value)
        if taint is None or (not self.summarising and self._already_reported(taint)):
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

    def _already_reported(self, taint: Taint) -> bool:
        """The count reached a sink in this scope (its finding is made): a return or a
        member holding it is not followed to a second one."""
        return taint.reported or (taint.pending is not None and id(taint.pending) in self._emitted)

    def stored_on_self(self, target: ir.Attribute, value: ir.Expr, parent: object) -> None:
        if not _is_name(target.value, "self"):
            return
        taint = self.taint_of(value)
        if taint is None or self._already_reported(taint):
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
                target.attr,
            )
        )

    def assign_call(self, target: ir.Expr, value: ir.Expr) -> bool:
        """``a, b = helper()`` where one element of the helper's tuple carries the count."""
        if not (isinstance(target, ir.Seq) and isinstance(value, ir.Call)):
            return False
        elements = target.elts
        if any(isinstance(e, ir.Starred) for e in elements):
            return False
        summary = self.resolver.member(value)
        taint: Taint | None
        if summary is not None and summary.index is not None and summary.index < len(elements):
            index: int | None = summary.index
            taint = Taint(summary.kind, summary.source, call=value, helper=summary)
        elif last_name(value.func) in self.model.tuple_passthrough_calls:
            args = _positional(value)
            index, taint = 0, (self._arg_taint(args[0]) if args else None)
            if taint is None:
                return False
        else:
            passed = [(i, self._passed(value, i)) for i in range(len(elements))]
            index, taint = next(((i, t) for i, t in passed if t is not None), (None, None))
            if taint is None or index is None:
                return False
        self.forget(target)
        assert index is not None
        element = elements[index]
        key = dotted(element)
        if key is not None:
            name = last_name(element) or ""
            if self._store_sink(element):
                if summary is not None:
                    self.sink(value, sink=key)
                elif not taint.reported:
                    self.emit(taint)
                    if taint.pending is None:
                        self.hits.append(self._hit(taint, value, key, None))
                taint = replace(taint, reported=True)
            elif (
                isinstance(element, ir.Name)
                and self.model.placement(name)
                and taint.pending is None
                and not taint.reported
            ):
                taint = self._pending.setdefault(
                    id(value), replace(taint, pending=self._hit(taint, value, key, None))
                )
            self.env[key] = taint
        return True

    def _store_sink(self, target: ir.Expr) -> bool:
        """A store that is the allocation itself (``<any>.num_gpu_blocks_override = n``)."""
        if isinstance(target, ir.Attribute):
            return target.attr in self.model.store_sinks
        if isinstance(target, ir.Name):
            return not self.function and target.id in self.model.store_sinks
        return False

    def forget(self, target: ir.Expr) -> None:
        if isinstance(target, ir.Seq):
            for element in target.elts:
                self.forget(element)
            return
        if isinstance(target, ir.Starred):
            target = target.value
        key = dotted(target)
        if key is not None:
            self.env.pop(key, None)
        if isinstance(target, ir.Name):
            self.aliases.pop(target.id, None)

    def assign(self, target: ir.Expr, value: ir.Expr, parent: object | None = None) -> None:
        if isinstance(target, ir.Subscript):
            self._store_item(target, value)
            return
        name = last_name(target)
        key = dotted(target)
        if name is None or key is None:
            return
        m = self.model
        result: object | None
        if self._store_sink(target):
            result = self.sink(value, sink=key, parent=parent)
        elif m.placement(name) and self.function and _local_place(target):
            result = self.pending(value, sink=key, parent=parent)
        else:
            result = self.taint_of(value)
            if isinstance(target, ir.Attribute):
                self.escapes(value)  # stored on an object
                self.stored_on_self(target, value, parent)
            if result is None:
                splat = self._splat_dict(value)
                if splat is not None:
                    result = splat
                elif isinstance(target, ir.Name) and self._source_list(value):
                    result = _SOURCE_LIST
                elif _is_self_member(target) and self._source_list(value):
                    self.stored_lists.add(name)
                else:
                    kind = self.count_kind(value)
                    result = _REQUEST if kind == REQUESTS else _TOKENS if kind == TOKENS else None
        if result is None:
            self.env.pop(key, None)
        else:
            self.env[key] = result
        if isinstance(target, ir.Name) and self.function:
            self._entries(key, value)
        if isinstance(target, ir.Name):
            if isinstance(value, ir.Name | ir.Attribute | ir.Call | ir.Comprehension):
                self.aliases[target.id] = value
            else:
                self.aliases.pop(target.id, None)

    def _entries(self, key: str, value: ir.Expr) -> None:
        """A local assigned anew holds no entries or fields of what it held before (those an
        assignment gave it) but those of what is assigned:
        a dict display's entries (``{"tokens": <count>}``: read back as ``local["tokens"]``,
        as entries stored one by one are), the members of an object built from a count
        (``Plan(<count>, ...)`` or ``Plan(tokens=<count>)``: read back as ``local.tokens``)."""
        if key in self._holders:  # (most locals never held any: no look through the env)
            entry, field = f"{key}[", f"{key}."
            for held in [k for k in self.env if k.startswith(entry) or k.startswith(field)]:
                del self.env[held]
        if isinstance(value, ir.Dict):
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ir.Const) and isinstance(k.value, str):
                    taint = self.taint_of(v)
                    if taint is not None:
                        self.env[f"{key}[{k.value!r}]"] = taint
                        self._holders.add(key)
        elif isinstance(value, ir.Call) and any(self._tainted(a.value) for a in value.args):
            for name, arg in self.resolver.members_filled(value, self._tainted):
                taint = self.taint_of(arg)
                if taint is not None:
                    self.env[f"{key}.{name}"] = taint
                    self._holders.add(key)

    # ---- dicts splatted into calls -----------------------------------------------------

    def _splat_dict(self, value: ir.Expr) -> SplatDict | None:
        entries = self._dict_sinks(value)
        return SplatDict(tuple((n, v, self.current_stmt) for n, v in entries)) if entries else None

    def _dict_sinks(self, value: ir.Expr) -> list[tuple[str, ir.Expr]]:
        out: list[tuple[str, ir.Expr]] = []
        if isinstance(value, ir.Dict):
            for k, v in zip(value.keys, value.values, strict=True):
                key = k.value if isinstance(k, ir.Const) else None
                if isinstance(key, str) and key in self.model.sink_keys():
                    out.append((key, v))
        elif isinstance(value, ir.Call) and _is_name(value.func, "dict"):
            for a in value.args:
                if a.keyword is not None and a.keyword in self.model.sink_keys():
                    out.append((a.keyword, a.value))
        elif isinstance(value, ir.Call) and any(self._tainted(a.value) for a in value.args):
            # A helper that builds the dict from what it is handed: the entries are the
            # arguments it puts under a sink key. Only a call handed a count is resolved
            # (resolving may read the module a helper is imported from).
            out.extend(self.resolver.dict_entries(value, self._tainted))
        elif isinstance(value, ir.Name | ir.Attribute) and self.summarising:
            held = self.env.get(dotted(value) or "")
            if isinstance(held, SplatDict):
                out.extend((n, v) for n, v, _ in held.entries)
        return out

    def _store_item(self, target: ir.Subscript, value: ir.Expr) -> None:
        key = dotted(target.value) if isinstance(target.value, ir.Name | ir.Attribute) else None
        index = target.index
        name = index.value if isinstance(index, ir.Const) and isinstance(index.value, str) else None
        m = self.model
        if key is None or name is None or name not in m.sink_keys():
            if key is not None and name is not None and self.function:
                # ``sizes["tokens"] = <count>``: the entry is read back as ``sizes["tokens"]``.
                taint = self.taint_of(value)
                entry = f"{key}[{name!r}]"
                if taint is None:
                    self.env.pop(entry, None)
                else:
                    self.env[entry] = taint
            self.escapes(value)
            return
        held = self.env.get(key)
        entries = held.entries if isinstance(held, SplatDict) else ()
        self.env[key] = SplatDict((*entries, (name, value, self.current_stmt)))

    def _splatted(self, value: ir.Expr, callee: str | None) -> None:
        """``callee(**value)``: the entries under a key that is a sink of that callee."""
        entries = [(n, v, self.current_stmt) for n, v in self._dict_sinks(value)]
        if not entries and isinstance(value, ir.Name | ir.Attribute):
            held = self.env.get(dotted(value) or "")
            entries = list(held.entries) if isinstance(held, SplatDict) else []
        splat_stmt = self.current_stmt
        for name, element, stmt in entries:
            if not self.model.keyword_sink(callee, name):
                continue
            self.current_stmt = stmt
            self.sink(element, sink=f'"{name}"')
        self.current_stmt = splat_stmt

    def expr(self, node: ir.Expr) -> None:
        """Find sinks inside an expression: keywords, builder arguments, walrus targets."""
        stack: list[object] = [node]
        while stack:
            cur = stack.pop()
            if type(cur) in _LEAVES or isinstance(cur, _SKIPPED):
                continue
            if isinstance(cur, ir.NamedExpr):
                self.expr(cur.value)
                self.assign(cur.target, cur.value)
                continue
            if isinstance(cur, ir.Call):
                self.call(cur)
            elif isinstance(cur, ir.Compare):
                self._none_test(cur)
                if self.model.compare_sinks:
                    self._compare_sink(cur)
            stack.extend(reversed(ir.children(cur)))

    def _none_test(self, node: ir.Compare) -> None:
        """``x is None`` (``is not``, ``==``, ``!=``, either side): where ``x`` carries a
        source's value, that source may be None."""
        sides = (node.left, *node.comparators)
        nones = [s for s in sides if isinstance(s, ir.Const) and s.value is None]
        if not nones or not set(node.ops) & {"is", "is not", "==", "!="}:
            return
        for side in sides:
            if side not in nones:
                taint = self.taint_of(side)
                if taint is not None:
                    self.none_tested.add(id(taint.source))
                    name = source_name(taint.source)
                    if name is not None:
                        self.none_tested_names.add(name)

    def _compare_sink(self, node: ir.Compare) -> None:
        """``x <= n`` (any ordering, either side) where ``n`` is a comparison sink of the
        model: ``x`` reaches it when it carries a count."""
        if len(node.ops) != 1 or node.ops[0] not in ("<", "<=", ">", ">="):
            return
        left, right = node.left, node.comparators[0]
        for value, other in ((left, right), (right, left)):
            named = self.model.compare_sink(other)
            if named is not None and self.taint_of(other) is None:
                self.sink(value, sink=f"compared with {named}")

    def call(self, node: ir.Call) -> None:
        m = self.model
        sunk: set[int] = set()
        callee = last_name(node.func)
        if (
            callee in m.element_stores
            and isinstance(node.func, ir.Attribute)
            and isinstance(node.func.value, ir.Name)
            and len(node.args) == 1
            and isinstance(node.args[0].value, ir.Name)
            and self.env.get(node.args[0].value.id) is _SOURCE_ELEMENT
        ):
            self.env[node.func.value.id] = _SOURCE_LIST  # ``sizes.append(size)``
            element = self.aliases.get(node.args[0].value.id)
            if element is not None:
                self.aliases[node.func.value.id] = element
        node = self._unpartial(node)
        args = [a for a in _positional(node) if not a.star]
        if callee in m.setattr_calls and len(args) == 3:
            name = args[1].value
            if isinstance(name, ir.Const) and name.value in m.store_sinks:
                self.sink(args[2].value, sink=str(name.value))
                sunk.add(id(args[2]))
            elif isinstance(name, ir.Const) and _identifier(name.value):
                # ``setattr(obj, "name", v)`` stores ``obj.name``
                self.assign(ir.Attribute(args[0].value, str(name.value), node.span), args[2].value)
                sunk.add(id(args[2]))
        # The callee whose parameters the arguments fill: ``f(n)`` where the local ``f`` is
        # ``partial(builder, ...)`` calls the builder, and ``partial(builder, num_blocks=n)``
        # binds the builder's keywords.
        named = last_name(node.func)
        if named in m.partial_calls and args:
            named = last_name(args[0].value)
        for arg in node.args:
            # ``replace(obj, num_gpu_blocks_override=n)`` stores the field; a named
            # builder's ``num_blocks=`` receives the count (not any call's).
            if arg.keyword is not None and m.keyword_sink(named, arg.keyword):
                self.sink(arg.value, sink=f"{arg.keyword}=")
                sunk.add(id(arg))
        for arg in node.args:
            if arg.star == "**":
                self._splatted(arg.value, named)
                sunk.add(id(arg))
        for index, arg in enumerate(_positional(node)):
            if arg.star:
                break  # later positions are not known
            if m.positional_sink(named, index) is not None and id(arg) not in sunk:
                self.sink(arg.value, sink=f"{named}(...)")
                sunk.add(id(arg))
        # A callee can only sink a count it is handed: resolve it (which may read and lower
        # another module) only when an argument carries one.
        handed_count = any(self._tainted(a.value) for a in node.args)
        for arg_value, sink in self.resolver.sinking(node, self._tainted) if handed_count else ():
            handed = next((a for a in node.args if a.value is arg_value), None)
            if handed is not None and id(handed) not in sunk:
                self.sink(arg_value, sink=sink)
                sunk.add(id(handed))
        if callee not in m.quiet_calls:
            # Handed to a call that is no sink: a helper's count used otherwise. A local's
            # count never becomes a finding there for its name (a launch grid, a buffer).
            for arg in node.args:
                if id(arg) not in sunk:
                    self.used(arg.value)


# ---- helpers ---------------------------------------------------------------------------


def source_name(source: ir.Expr) -> str | None:
    """The attribute or list a source reads (``cc.max_cudagraph_capture_size``,
    ``getattr(cc, "max_capture_size")``, ``sizes[-1]``, ``max(sizes)``), or None."""
    if isinstance(source, ir.Attribute):
        return source.attr
    if isinstance(source, ir.Subscript):
        return last_name(source.value)
    if isinstance(source, ir.Call):
        name = getattr_name(source)
        if name is not None:
            return name
        args = _positional(source)
        return last_name(args[0].value) if len(args) == 1 and not args[0].star else None
    return None


def _getattr_read(node: ir.Call) -> ir.Attribute | None:
    """``getattr(x, "name"[, default])`` as the read ``x.name`` it is."""
    name = getattr_name(node)
    return None if name is None else ir.Attribute(node.args[0].value, name, node.span)


def _is_self_member(node: ir.Expr) -> bool:
    return isinstance(node, ir.Attribute) and _is_name(node.value, "self")


def _identifier(value: object) -> bool:
    return isinstance(value, str) and value.isidentifier()


def _lambda_function(name: str, value: ir.Expr) -> ir.FunctionDef | None:
    """``name = lambda ...: body`` as the function it is: one that returns ``body``."""
    if not isinstance(value, ir.Lambda):
        return None
    body = (ir.Return(value.body, value.body.span),)
    return ir.FunctionDef(name, value.params, body, (), None, False, value.span)


def _local_place(target: ir.Expr) -> bool:
    """A local, or a field of a local object (``settings.num_blocks``), not of ``self``."""
    if isinstance(target, ir.Name):
        return True
    return (
        isinstance(target, ir.Attribute)
        and isinstance(target.value, ir.Name)
        and target.value.id not in ("self", "cls")
    )


def _ref_id(read: ir.Call | ir.Attribute) -> int:
    """The node a reference search finds for a member's call or read (its name)."""
    return id(read.func) if isinstance(read, ir.Call) else id(read)


def _positional(call: ir.Call) -> list[ir.Arg]:
    return [a for a in call.args if a.keyword is None and a.star != "**"]


def _is_name(node: object, name: str) -> bool:
    return isinstance(node, ir.Name) and node.id == name


def _int(node: ir.Expr) -> int | None:
    if (
        isinstance(node, ir.Const)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    return None


def _is_minus_one(node: ir.Expr) -> bool:
    from cgguard.static.core.patterns import is_minus_one

    return is_minus_one(node)


def _walk(node: object) -> list[object]:
    from cgguard.static.core.patterns import walk

    return walk(node)


def unpack_pairs(target: ir.Expr, value: ir.Expr | None) -> list[tuple[ir.Expr, ir.Expr | None]]:
    if not isinstance(target, ir.Seq):
        return [(target, value)]
    elements = target.elts
    if (
        isinstance(value, ir.Seq)
        and value.kind in ("tuple", "list")
        and len(value.elts) == len(elements)
        and not any(isinstance(e, ir.Starred) for e in (*elements, *value.elts))
    ):
        out: list[tuple[ir.Expr, ir.Expr | None]] = []
        for t, v in zip(elements, value.elts, strict=True):
            out.extend(unpack_pairs(t, v))
        return out
    out = []
    for t in elements:
        out.extend(unpack_pairs(t, None))
    return out


def element_parent(value: ir.Expr, node: ir.Expr) -> ir.Expr | None:
    if not isinstance(value, ir.Seq):
        return None
    for e in value.elts:
        if e is node:
            return value
        found = element_parent(e, node)
        if found is not None:
            return found
    return None


def call_argument(call: ir.Call, owner: FunctionInfo, param: str) -> ir.Expr | None:
    """The expression a call passes for ``param`` of ``owner``."""
    for a in call.args:
        if a.keyword == param:
            return a.value
    params = owner.positional()
    if param not in params:
        return None
    index = params.index(param) - (1 if owner.implicit_first else 0)
    positional = _positional(call)
    if 0 <= index < len(positional) and not any(a.star for a in positional[: index + 1]):
        return positional[index].value
    return None


def _receiver(source: ir.Expr) -> ir.Expr | None:
    if isinstance(source, ir.Attribute):
        return source.value
    if isinstance(source, ir.Subscript) and isinstance(source.value, ir.Attribute):
        return source.value.value
    if isinstance(source, ir.Subscript) and isinstance(source.value, ir.Name):
        return source.value
    if isinstance(source, ir.Call) and source.args:
        first = source.args[0].value
        if isinstance(source.func, ir.Name) and source.func.id == "getattr":
            return first
        if isinstance(first, ir.Attribute):
            return first.value
        if isinstance(first, ir.Name):
            return first
    return None


def _needs_parens(node: ir.Expr, parent: object | None) -> bool:
    if parent is None:
        return False
    if isinstance(parent, ir.BoolOp) and parent.op == "or":
        return False
    if isinstance(parent, ir.Call) and any(a.value is node for a in _positional(parent)):
        return False
    if isinstance(parent, ir.NamedExpr):
        return False
    if isinstance(parent, ir.IfExp) and node is not parent.test:
        return False
    return not (isinstance(parent, ir.Seq) and parent.kind in ("tuple", "list"))
