"""The values a scope's flow follows and what it finds.

A :class:`Taint` is a value derived from a source; a :class:`Hit` is where one reached a sink,
with the :class:`Rewrite` a fix makes; a :class:`Returned` is a count a scope returns or stores
on ``self``, and a :class:`Summary` what a member of the program carries. Besides a
:class:`Taint`, a scope's env holds a :class:`Count` (a count without a source's labels, in
a unit its model names), the markers below (a list of sources and one of its elements) and
:class:`SplatDict` (counts under sink keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cgguard.static.core import ir
from cgguard.static.core.patterns import last_name

# What a local holds when it holds no Taint nor Count: compared by identity.
SOURCE_LIST = object()  # a list of sources (the capture sizes)
SOURCE_ELEMENT = object()  # one element of such a list (a loop's variable)


@dataclass(frozen=True)
class Count:
    """A count held without a source's labels, in a unit its model names (``label``): with
    ``bound``, one a sanitizer bounds a followed count by (the model's ``bound_label``; also
    a followed count where the ``if`` clamp bounds it by one), else one that bounds nothing
    (its ``unbounded_label``). Where paths meet, a local holds a bound only if every path
    holds one, and an unbounded count if any path does (:func:`.flowstate.join`)."""

    label: str
    bound: bool


def is_bound(value: object) -> bool:
    """Does a local holding ``value`` hold a sanitizer's bound?"""
    return isinstance(value, Count) and value.bound


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
    labels: frozenset[str]  # what the count reaching the sink counts (the model's labels)
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
    # core ran (the core knows no rule; None: CGG001's configuration's, by ``labels``).
    rule: str | None = None


@dataclass(frozen=True, eq=False)
class Taint:
    labels: frozenset[str]  # what the value counts (the model's labels, joined by transfers)
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
    labels: frozenset[str]
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
