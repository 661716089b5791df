"""Sinks in one scope: where a followed count reaches one, the hit it makes.

:meth:`Sinks.sink` records a :class:`~.taint.Hit` where a tainted value reaches a sink of the
model (a store, a callee's parameter, a comparison, a dict key splatted into a callee), once
per value; at a block-named local the hit is made (:meth:`Sinks.pending`) and recorded only
once that local reaches a sink (:meth:`Sinks.emit`). A summarising flow (a parameter seeded
with a count of its own) records which parameter reached which sink instead.
"""

from __future__ import annotations

from dataclasses import replace

from cgguard.static.core import ir
from cgguard.static.core.fixsite import FixSite
from cgguard.static.core.patterns import Model, dotted
from cgguard.static.core.resolver import Resolver
from cgguard.static.core.shapes import is_name, ref_id
from cgguard.static.core.taint import Hit, SplatDict, Taint
from cgguard.static.core.transfer import Transfer


class Sinks:
    """The scope's hits, and the member calls and reads whose count became one."""

    def __init__(
        self,
        model: Model,
        resolver: Resolver,
        transfer: Transfer,
        site: FixSite,
        seed_sources: dict[ir.Expr, str],
        *,
        summarising: bool,
    ) -> None:
        self.model = model
        self.resolver = resolver
        self.env = transfer.env
        self.summarising = summarising
        # Summarising: the parameters seeded with a count, by the source each carries.
        self.seed_sources = seed_sources
        self.taint_of = transfer.taint_of
        self.tainted = transfer.tainted
        self.entry = transfer.entry
        self.locate = site.locate
        self.request_of = site.request_of
        self.hits: list[Hit] = []
        self.current_stmt: object | None = None  # the statement walked (the hit's ``stmt``)
        self.sunk_calls: set[int] = set()  # ids of member calls/reads that became a count
        self.sunk_params: list[tuple[str, str]] = []  # (seeded parameter, sink) when summarising
        self._sunk: dict[int, Taint] = {}
        # Hits made at a block-named local (by id of the value), recorded once it is sunk.
        self.pending_at: dict[int, Taint] = {}
        self.emitted: set[int] = set()

    def sink(self, value: ir.Expr, sink: str, parent: object | None = None) -> Taint | None:
        """``value`` reaches a sink; record a hit unless seen (at a block-named local first)."""
        seen = self._sunk.get(id(value))
        if seen is not None:
            return seen
        taint = self.taint_of(value)
        if taint is None:
            return None
        if self.summarising and taint.source in self.seed_sources:
            self.sunk_params.append((self.seed_sources[taint.source], sink))
        elif taint.pending is not None:
            self.emit(taint)
        elif not taint.reported:
            if taint.call is not None:
                self.sunk_calls.add(ref_id(taint.call))
            self.hits.append(self.hit(taint, value, sink, parent))
        result = self._sunk[id(value)] = replace(taint, reported=True)
        return result

    def hit(self, taint: Taint, value: ir.Expr, sink: str, parent: object | None) -> Hit:
        request, guessed = self.request_of(taint)
        entry = self.entry(value) if taint.through is not None else None
        return Hit(
            labels=taint.labels,
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
        if isinstance(read, ir.Attribute) and not is_name(read.value, "self"):
            return dotted(read) or taint.helper.spelled
        return taint.helper.spelled

    def pending(self, value: ir.Expr, sink: str, parent: object | None) -> Taint | None:
        """``value`` is assigned to a block-named local: the hit is made here, recorded later."""
        seen = self.pending_at.get(id(value))
        if seen is not None:
            return seen
        taint = self.taint_of(value)
        if taint is None:
            return None
        seeded = self.summarising and taint.source in self.seed_sources
        if taint.pending is None and not taint.reported and not seeded:
            taint = replace(taint, pending=self.hit(taint, value, sink, parent))
        self.pending_at[id(value)] = taint
        return taint

    def emit(self, taint: Taint | None) -> None:
        if taint is None or taint.pending is None or id(taint.pending) in self.emitted:
            return
        self.emitted.add(id(taint.pending))
        if taint.call is not None:
            self.sunk_calls.add(ref_id(taint.call))
        self.hits.append(taint.pending)

    def compare_sink(self, node: ir.Compare) -> None:
        """``x <= n`` (any ordering, either side) where ``n`` is a comparison sink of the
        model: ``x`` reaches it when it carries a count."""
        if len(node.ops) != 1 or node.ops[0] not in ("<", "<=", ">", ">="):
            return
        left, right = node.left, node.comparators[0]
        for value, other in ((left, right), (right, left)):
            named = self.model.compare_sink(other)
            if named is not None and self.taint_of(other) is None:
                self.sink(value, sink=f"compared with {named}")

    # ---- dicts splatted into calls -----------------------------------------------------

    def splat_dict(self, value: ir.Expr) -> SplatDict | None:
        entries = self.dict_sinks(value)
        return SplatDict(tuple((n, v, self.current_stmt) for n, v in entries)) if entries else None

    def dict_sinks(self, value: ir.Expr) -> list[tuple[str, ir.Expr]]:
        out: list[tuple[str, ir.Expr]] = []
        if isinstance(value, ir.Dict):
            for k, v in zip(value.keys, value.values, strict=True):
                key = k.value if isinstance(k, ir.Const) else None
                if isinstance(key, str) and key in self.model.sink_keys():
                    out.append((key, v))
        elif isinstance(value, ir.Call) and is_name(value.func, "dict"):
            for a in value.args:
                if a.keyword is not None and a.keyword in self.model.sink_keys():
                    out.append((a.keyword, a.value))
        elif isinstance(value, ir.Call) and any(self.tainted(a.value) for a in value.args):
            # A helper that builds the dict from what it is handed: the entries are the
            # arguments it puts under a sink key. Only a call handed a count is resolved
            # (resolving may read the module a helper is imported from).
            out.extend(self.resolver.dict_entries(value, self.tainted))
        elif isinstance(value, ir.Name | ir.Attribute) and self.summarising:
            held = self.env.get(dotted(value) or "")
            if isinstance(held, SplatDict):
                out.extend((n, v) for n, v, _ in held.entries)
        return out

    def splatted(self, value: ir.Expr, callee: str | None) -> None:
        """``callee(**value)``: the entries under a key that is a sink of that callee."""
        entries = [(n, v, self.current_stmt) for n, v in self.dict_sinks(value)]
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
