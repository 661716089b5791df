"""Stores in one scope: what an assignment does to the scope's state.

A local or attribute chain assigned a value holds what the value carries afterwards: its
:class:`~.taint.Taint`, a :class:`~.taint.Count` in a unit its model names (:mod:`.units`),
a list of sources, a dict holding counts under sink keys; a store that is the allocation
itself is a sink, one to a block-named local makes a pending hit, one on an object lets the
count escape.
A tuple unpacked from a helper's result takes the element that carries the count; a local
assigned a dict display or an object built from counts holds their entries and fields.
"""

from __future__ import annotations

from dataclasses import replace

from cgguard.static.core import ir
from cgguard.static.core.outputs import Outputs
from cgguard.static.core.patterns import Model, dotted, last_name
from cgguard.static.core.resolver import Resolver
from cgguard.static.core.shapes import is_self_member, local_place, positional
from cgguard.static.core.sinks import Sinks
from cgguard.static.core.taint import SOURCE_LIST, Count, SplatDict, Taint
from cgguard.static.core.transfer import Transfer
from cgguard.static.core.units import Units


class Stores:
    """Assignments, unpackings and item stores, and what they leave in the scope's state."""

    def __init__(
        self,
        model: Model,
        resolver: Resolver,
        transfer: Transfer,
        units: Units,
        sinks: Sinks,
        outputs: Outputs,
        *,
        function: bool,
    ) -> None:
        self.model = model
        self.resolver = resolver
        self.function = function
        self.env = transfer.env
        self.aliases = transfer.aliases
        self.taint_of = transfer.taint_of
        self.tainted = transfer.tainted
        self.arg_taint = transfer.arg_taint
        self.passed = transfer.passed
        self.source_list = transfer.source_list
        self.count_kind = units.count_kind
        self.sinks = sinks  # its ``current_stmt``
        self.sink = sinks.sink
        self.pending = sinks.pending
        self.emit = sinks.emit
        self.hit = sinks.hit
        self.hits = sinks.hits
        self.pending_at = sinks.pending_at
        self.splat_dict = sinks.splat_dict
        self.escapes = outputs.escapes
        self.stored_on_self = outputs.stored_on_self
        self.stored_lists = outputs.stored_lists
        # Locals given entries or fields by what was assigned to them (see _entries).
        self._holders: set[str] = set()

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
        elif m.placement(name) and self.function and local_place(target):
            result = self.pending(value, sink=key, parent=parent)
        else:
            result = self.taint_of(value)
            if isinstance(target, ir.Attribute):
                self.escapes(value)  # stored on an object
                self.stored_on_self(target, value, parent)
            if result is None:
                splat = self.splat_dict(value)
                if splat is not None:
                    result = splat
                elif isinstance(target, ir.Name) and self.source_list(value):
                    result = SOURCE_LIST
                elif is_self_member(target) and self.source_list(value):
                    self.stored_lists.add(name)
                else:
                    kind = self.count_kind(value)
                    result = None if kind is None else Count(kind, bound=kind == m.bound_label)
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
            taint = Taint(summary.labels, summary.source, call=value, helper=summary)
        elif last_name(value.func) in self.model.tuple_passthrough_calls:
            args = positional(value)
            index, taint = 0, (self.arg_taint(args[0]) if args else None)
            if taint is None:
                return False
        else:
            passed = [(i, self.passed(value, i)) for i in range(len(elements))]
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
                        self.hits.append(self.hit(taint, value, key, None))
                taint = replace(taint, reported=True)
            elif (
                isinstance(element, ir.Name)
                and self.model.placement(name)
                and taint.pending is None
                and not taint.reported
            ):
                taint = self.pending_at.setdefault(
                    id(value), replace(taint, pending=self.hit(taint, value, key, None))
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
        elif isinstance(value, ir.Call) and any(self.tainted(a.value) for a in value.args):
            for name, arg in self.resolver.members_filled(value, self.tainted):
                taint = self.taint_of(arg)
                if taint is not None:
                    self.env[f"{key}.{name}"] = taint
                    self._holders.add(key)

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
        self.env[key] = SplatDict((*entries, (name, value, self.sinks.current_stmt)))
