"""The shapes a taint model is made of, and how an expression of the intermediate form matches them.

A :class:`Model` is data: which attribute reads are sources, which calls hand a value through
(propagators), which bound it (sanitizers), and which stores, keywords and arguments receive
it (sinks). The data-flow core (:mod:`cgguard.static.core.flow`) asks only these questions;
the names themselves live in the rules' model (:mod:`cgguard.static.rules.model`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from cgguard.static.core import ir
from cgguard.static.core.needles import needles_of


@dataclass(frozen=True)
class ParamSink:
    """A parameter of a named callee that receives a sink's value: ``callee(..., param=v)``,
    or ``v`` as its ``position``-th positional argument (None: by keyword only). The callee
    is the called name's last part, so a module function and a builder's method of that
    name are the same sink (a bound method's receiver is not counted)."""

    callee: str
    param: str
    position: int | None = None


class BoundSite(Protocol):
    """What the core knows where a fix bounds a count (the model's ``fix_bound`` reads it)."""

    chain: str | None  # the source's receiver in the scope's names (``self.vllm_config``)
    source_lists: frozenset[str]  # the model's source lists (a receiver's last name may be one)
    read_from_self: bool  # the count is read from the scope's own object (``self``)
    in_class: bool  # the scope is a method of a class

    def bound_local(self) -> str | None:
        """A local of the scope holding a bound count (the first one), if any."""
        ...

    def class_names(self) -> Iterator[str]:
        """The class's name and those of its bases (resolved through imports), nearest first."""
        ...

    def self_attrs(self) -> frozenset[str]:
        """The attributes the class and its bases set or read on ``self``."""
        ...


@dataclass(frozen=True)
class Model:
    # ---- sources: a count the rule follows (a capture size, in tokens) -----------------
    source_attrs: frozenset[str]  # ``<x>.name`` and ``getattr(<x>, "name"[, default])``
    source_lists: frozenset[str]  # ``<x>.name[-1]`` and ``max(<x>.name)``: the largest
    # ---- propagators -------------------------------------------------------------------
    collection_calls: frozenset[str]  # ``sorted(sizes)``: still a list of sources
    element_stores: frozenset[str]  # ``lst.append(size)``: ``lst`` becomes a list of sources
    partial_calls: frozenset[str]  # ``partial(f, a)``: calling it calls ``f(a, ...)``
    passthrough_calls: frozenset[str]  # ``f(x, ...)`` carries ``x``'s count
    widening_calls: frozenset[str]  # ``max(x, ...)``: still the count (the second rule's kind)
    # ---- sanitizers --------------------------------------------------------------------
    clamp_calls: frozenset[str]  # ``min(x, R)`` with a bound R bounds it
    # attributes (any receiver) that hold a bound: a count of the unit ``bound_label`` names
    bound_counts: frozenset[str]
    # attributes that hold a count of the unit ``unbounded_label`` names: a min() with one of
    # them still does
    unbounded_counts: frozenset[str]
    # ---- sinks -------------------------------------------------------------------------
    store_sinks: frozenset[str]  # attribute stores on any object, ``setattr``, ``replace``, keys
    # parameters of named callees that receive the count (a sink is typed by the API it
    # feeds, never by a name that looks like a count)
    param_sinks: tuple[ParamSink, ...]
    setattr_calls: frozenset[str]  # ``setattr(obj, "name", value)``
    replace_calls: frozenset[str]  # ``replace(obj, name=value)`` (dataclasses, copy)
    # ---- where a finding goes ----------------------------------------------------------
    placement_names: re.Pattern[str]  # names of locals that hold a block count
    quiet_calls: frozenset[str]  # calls a helper's count is handed to without being used
    # ---- the fix's bound -----------------------------------------------------------------
    # What bounds the count where a hit's fix goes: asked with what the core knows there (a
    # :class:`BoundSite`), it answers the bound's text and whether that is a guess. The rule
    # supplies it (CGG001's request count: rules/requestbound.py); the core names no bound.
    fix_bound: Callable[[BoundSite], tuple[str | None, bool]]
    # ---- labels: what a followed value counts --------------------------------------------
    # A source's value carries ``source_label``; a widening call (``max(x, ...)``) adds
    # ``widened_label`` (the count or more). A value's labels are a set, and the transfers
    # join them: a helper that widens what it is handed widens the caller's count, and a
    # widened count handed through a plain helper stays widened. Where paths meet, a local
    # keeps the first path's value, labels not joined: joined, the capture size on one path
    # and ``max()`` of it on the other turned CGG001's safe fix at the sink, which bounds
    # both paths, into CGG002's suggestion. The core compares a followed value's labels
    # only with these two and names none; a rule's configuration says which it reports.
    source_label: str
    widened_label: str
    # A count that carries no source's labels is labelled too (a ``taint.Count``, never
    # reported). ``bound_label``: what a count a sanitizer bounds by holds (a name of
    # ``bound_counts``, a local or a helper's return holding one), and a followed count
    # in the branch of an ``if`` clamp that bounds it by one. ``unbounded_label``: what a
    # count that bounds nothing holds (a name of ``unbounded_counts``, or arithmetic of locals
    # holding a followed value where it is no longer followed: a converting product). A
    # sum or product of counts of one label keeps it, of both neither. The core tells the
    # two apart by these labels and names neither, so they differ.
    bound_label: str
    unbounded_label: str
    # ---- comparison sinks ----------------------------------------------------------------
    # Names (a local, a parameter, an attribute's last name) of counts a followed value must
    # not be ordered against: ``cap <= num_mamba_cache_blocks`` is a sink when the name is
    # here (a count of one block per sequence compared with a token count). Empty: none.
    compare_sinks: frozenset[str] = frozenset()
    # ---- sources and propagators some rules add ------------------------------------------
    # Parameters (of any function) that hold a source on entry, by name: what a function is
    # handed (``def dummy_run(self, num_tokens)``: a token count). Empty: none.
    source_params: frozenset[str] = frozenset()
    # Calls returning a tuple whose first element carries the first argument's count
    # (``n, across_ranks, _ = sync(n)``, padded across ranks). Empty: none.
    tuple_passthrough_calls: frozenset[str] = frozenset()
    # Names whose product with a followed count is a count of another unit, no longer
    # followed: ``(1 + num_spec_tokens) * max_num_reqs`` counts tokens. Empty: none.
    converting_factors: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.bound_label == self.unbounded_label:
            raise ValueError(f"bound_label and unbounded_label are both {self.bound_label!r}")

    @cached_property
    def source_labels(self) -> frozenset[str]:
        """The labels of a source's own value."""
        return frozenset({self.source_label})

    @cached_property
    def sink_words(self) -> frozenset[str]:
        """The names a sink names where it is reached: a stored or compared name, a callee
        whose parameter is a sink."""
        return self.store_sinks | self.compare_sinks | {s.callee for s in self.param_sinks}

    @cached_property
    def widened_labels(self) -> frozenset[str]:
        """What a widening call adds to its argument's labels."""
        return frozenset({self.widened_label})

    # ---- questions the core asks -------------------------------------------------------

    def is_source(self, node: ir.Expr) -> bool:
        """Is ``node`` itself the source (not a value derived from it)?"""
        if isinstance(node, ir.Attribute):
            return node.attr in self.source_attrs
        if isinstance(node, ir.Subscript):
            return _last_name(node.value) in self.source_lists and is_minus_one(node.index)
        if isinstance(node, ir.Call):
            if self.getattr_source(node) is not None:
                return True
            return (
                isinstance(node.func, ir.Name)
                and node.func.id in self.widening_calls
                and len(node.args) == 1
                and node.args[0].keyword is None
                and not node.args[0].star
                and _last_name(node.args[0].value) in self.source_lists
            )
        return False

    def getattr_source(self, node: ir.Call) -> str | None:
        """``getattr(x, "<source>"[, default])``: the attribute's name."""
        name = getattr_name(node)
        return name if name in self.source_attrs else None

    def is_source_list(self, node: ir.Expr) -> bool:
        return _last_name(node) in self.source_lists

    def mentions_bound(self, node: ir.Expr) -> bool:
        return any(_last_name(sub) in self.bound_counts for sub in walk(node))

    def converts(self, node: ir.BinOp) -> bool:
        """Is ``node`` a product with a converting factor (on either side)?"""
        return (
            node.op == "*"
            and bool(self.converting_factors)
            and any(
                _last_name(sub) in self.converting_factors
                for side in (node.left, node.right)
                for sub in walk(side)
            )
        )

    def keyword_sink(self, callee: str | None, keyword: str) -> bool:
        """Does ``callee(..., keyword=v)`` hand ``v`` to a sink? A store sink's name is one
        on any call (``replace(cfg, num_gpu_blocks_override=n)``, ``CacheConfig(...)``);
        any other keyword only on the callee whose parameter it is."""
        if keyword in self.store_sinks:
            return True
        return callee is not None and any(
            s.callee == callee and s.param == keyword for s in self.param_sinks
        )

    def positional_sink(self, callee: str | None, index: int) -> str | None:
        """The parameter that ``callee``'s ``index``-th positional argument fills where it
        is a sink (a method's receiver not counted), else None."""
        if callee is None:
            return None
        for s in self.param_sinks:
            if s.callee == callee and s.position == index:
                return s.param
        return None

    def sink_keys(self) -> frozenset[str]:
        """Keys of a dict that may become a sink once splatted into a call (the call decides)."""
        return self.store_sinks | frozenset(s.param for s in self.param_sinks)

    def compare_sink(self, node: ir.Expr) -> str | None:
        """The comparison sink named by one side of an ordering comparison, if any."""
        name = _last_name(node)
        return name if name in self.compare_sinks else None

    def placement(self, name: str) -> bool:
        return bool(self.placement_names.match(name))

    def needles(self) -> tuple[str, ...]:
        """Substrings one of which every source's text contains (the byte prefilter's)."""
        return needles_of(self.source_attrs | self.source_lists | self.source_params)

    def source_names(self) -> tuple[str, ...]:
        """The names one of which every source's text holds whole: a text holding none of
        them names no source (the needles are shorter, and cheaper to look for in bytes)."""
        return tuple(sorted(self.source_attrs | self.source_lists | self.source_params))


def _last_name(node: object) -> str | None:
    if isinstance(node, ir.Attribute):
        return node.attr
    if isinstance(node, ir.Name):
        return node.id
    return None


def getattr_name(node: ir.Call) -> str | None:
    """The attribute ``getattr(x, "name"[, default])`` reads, where its name is a constant."""
    if not (isinstance(node.func, ir.Name) and node.func.id == "getattr"):
        return None
    args = node.args
    if len(args) not in (2, 3) or any(a.keyword is not None or a.star for a in args):
        return None
    name = args[1].value
    if isinstance(name, ir.Const) and isinstance(name.value, str) and name.value.isidentifier():
        return name.value
    return None


def is_name_char(char: str) -> bool:
    """Can ``char`` stand inside a Python name (so a word that touches it is part of a longer one)?"""
    return char.isalnum() or char == "_"


def last_name(node: object) -> str | None:
    """``a.b.c`` -> ``c``; ``c`` -> ``c``; anything else -> None."""
    return _last_name(node)


def dotted(node: object) -> str | None:
    """``self.cache_config.x`` -> that text; None unless a pure chain of names."""
    parts: list[str] = []
    while isinstance(node, ir.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ir.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def is_minus_one(node: ir.Expr) -> bool:
    if isinstance(node, ir.Const):
        return node.value == -1 and not isinstance(node.value, bool)
    return (
        isinstance(node, ir.UnaryOp)
        and node.op == "-"
        and isinstance(node.operand, ir.Const)
        and node.operand.value == 1
        and not isinstance(node.operand.value, bool)
    )


def walk(node: object) -> list[object]:
    """``node`` and every node inside it (lambdas and comprehensions included)."""
    out: list[object] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        out.append(cur)
        stack.extend(ir.children(cur))
    return out
