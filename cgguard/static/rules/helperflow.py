"""Counts returned by helpers: a capture size that reaches a block count through a call.

A *helper* is a function of the module or a method of a class (defined directly in
its body) whose own ``return`` carries a capture-size count::

    def _profiling_block_count(self):
        return self.compilation_config.max_cudagraph_capture_size or 1

The flow of each scope treats a call that resolves to a helper (``self.name(...)``
in a method of the same class, ``name(...)`` for a module function) as a source.
Where its result becomes a block count there is a finding:

- at the helper's ``return`` (where the fix goes too) when *every* use of the
  helper in the module is a call whose result becomes a block count;
- at the call otherwise (the helper also sizes token buffers, or is referenced in
  ways the flow does not follow): the fix bounds the call there.

A helper whose result only feeds token-sized buffers gives nothing. Helpers of
helpers are followed too (a few rounds, until nothing new is found).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from cgguard.static.rules import reach
from cgguard.static.rules.flow import Hit, Returned, ScopeFlow

# At most this many passes over the module (each one follows one more level of helpers).
MAX_ROUNDS = 4

# The flows of one pass over every scope: (flow, the function it ran on or None).
Flows = list[tuple[ScopeFlow, "cst.FunctionDef | None"]]
# What a scope's calls resolve to: given the class around the scope (or None), a
# function from a call to the summary of the helper it calls.
HelperFor = Callable[["cst.ClassDef | None"], Callable[[cst.Call], "HelperSummary | None"]]


@dataclass(eq=False)
class HelperSummary:
    """What a member carries: a function's return, a property, an attribute set on ``self``."""

    owner: reach.Owner  # the function (for an attribute: the first method that sets it)
    kind: str  # the taint kind of its (first) returned count
    source: cst.BaseExpression  # the capture-size expression it returns
    chain: str | None  # that expression's receiver in the helper's own names
    returns: list[Returned] = field(default_factory=list)  # where it is made (returns, stores)
    index: int | None = None  # the element of a returned tuple that carries it
    attr: str | None = None  # an attribute other methods read (``self.<attr>``), not a return

    @property
    def stored(self) -> bool:
        return self.attr is not None

    @property
    def name(self) -> str:
        return self.attr if self.attr is not None else self.owner.name

    @property
    def spelled(self) -> str:
        """How its uses spell it, for messages: ``helper()``, ``self.prop``."""
        if self.attr is not None or self.owner.is_property:
            return f"self.{self.name}"
        return f"{self.name}()"


Key = object  # id(function), or ("attr", id(class), name)


def _summaries(flows: Flows, owners: dict[int, reach.Owner]) -> dict[Key, HelperSummary]:
    out: dict[Key, HelperSummary] = {}
    for flow, func in flows:
        if func is None or id(func) not in owners:
            continue
        owner = owners[id(func)]
        if flow.returns:
            first = flow.returns[0]
            # One element of a tuple, or the whole value; returns that disagree follow the first.
            rets = [r for r in flow.returns if r.index == first.index]
            out[id(func)] = HelperSummary(
                owner, first.taint.kind, first.taint.source, first.chain, rets, first.index
            )
        if owner.cls is not None:
            for st in flow.stored:
                key = ("attr", id(owner.cls), st.attr)
                found = out.get(key)
                if found is None:
                    out[key] = HelperSummary(
                        owner, st.taint.kind, st.taint.source, st.chain, [st], attr=st.attr
                    )
                else:
                    found.returns.append(st)
    return out


def follow(module: cst.Module, run: Callable[[HelperFor | None], Flows], flows: Flows) -> list[Hit]:
    """The hits of ``module`` with counts returned by helpers followed.

    ``run(helper_for)`` runs the flow over every scope; ``flows`` is its result
    without helpers (the first pass, which found the candidates).
    """
    defs = reach.ModuleDefs.of(module)
    owners = {id(o.func): o for o in defs.owners()}
    summaries = _summaries(flows, owners)
    if not summaries:
        return [h for flow, _ in flows for h in flow.hits]
    latest = summaries
    for _ in range(MAX_ROUNDS):
        known = latest

        def helper_for(cls, known=known):
            def resolve(node: cst.Call | cst.Attribute) -> HelperSummary | None:
                if isinstance(node, cst.Call):
                    func = defs.resolve(node, cls)
                    return None if func is None else known.get(id(func))
                func = defs.resolve_read(node, cls)
                if func is not None:
                    return known.get(id(func))
                if (
                    cls is not None
                    and isinstance(node.value, cst.Name)
                    and node.value.value == "self"
                ):
                    return known.get(("attr", id(cls), node.attr.value))
                return None

            return resolve

        flows = run(helper_for)
        latest = _summaries(flows, owners)
        if {k: (s.kind, s.index) for k, s in latest.items()} == {
            k: (s.kind, s.index) for k, s in known.items()
        }:
            break
    return _place(module, flows, known, latest)


def _place(
    module: cst.Module,
    flows: Flows,
    known: dict[int, HelperSummary],
    latest: dict[int, HelperSummary],
) -> list[Hit]:
    """Move each helper's call-site findings to its return when all its uses are block counts."""
    hits = [h for flow, _ in flows for h in flow.hits]
    by_helper: dict[int, list[Hit]] = {}
    for h in hits:
        if h.helper is not None:
            by_helper.setdefault(id(h.helper), []).append(h)
    if not by_helper:
        return hits
    sunk: set[int] = set()
    for flow, _ in flows:
        sunk |= flow.sunk_calls
    for flow, _ in flows:
        sunk -= flow.other_uses
    names = {known[k].name for k in known}
    refs = reach.references(module, names)
    moved: set[int] = set()  # ids of summaries whose findings move to the return
    extra: list[Hit] = []
    for key, summary in known.items():
        call_hits = by_helper.get(id(summary))
        if not call_hits or key not in latest:
            continue
        name = summary.name
        mine = [r for r in refs if _spelled(r) == name]
        if not all(id(r) in sunk for r in mine):
            continue  # used otherwise too: the findings stay at the calls
        moved.add(id(summary))
        for ret in latest[key].returns:
            extra.append(
                Hit(
                    kind=ret.taint.kind,
                    sink=summary.spelled,  # what its callers take as a block count
                    node=ret.value,
                    source=ret.taint.source,
                    rewrite=ret.rewrite,
                    request=ret.request,
                    stmt=ret.stmt,
                    guessed=ret.guessed,
                    via=None if ret.taint.helper is None else ret.taint.helper.spelled,
                    helper=ret.taint.helper,
                )
            )
    return [h for h in hits if h.helper is None or id(h.helper) not in moved] + extra


def _spelled(ref: cst.CSTNode) -> str:
    return ref.attr.value if isinstance(ref, cst.Attribute) else ref.value
