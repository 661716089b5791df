"""What a scope hands on besides its hits: what the program's summaries and placement read.

A ``return`` or a store on ``self`` of a followed count (a :class:`~.taint.Returned`, with its
fix in the scope's terms), a list of sources returned or stored, the sink keys of a dict it
returns, the member calls and reads whose count is used otherwise than by a sink (escapes),
and the sources whose value the scope tests for None.
"""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.fixsite import FixSite
from cgguard.static.core.shapes import is_name, ref_id, source_name
from cgguard.static.core.sinks import Sinks
from cgguard.static.core.taint import Returned, Taint
from cgguard.static.core.transfer import Transfer


class Outputs:
    """The scope's returns, stores on ``self``, escapes and None tests."""

    def __init__(
        self,
        transfer: Transfer,
        site: FixSite,
        sinks: Sinks,
        *,
        summarising: bool,
    ) -> None:
        self.summarising = summarising
        self.sinks = sinks  # its ``current_stmt``, the hits emitted, the seeded parameters
        self.seed_sources = sinks.seed_sources
        self.emitted = sinks.emitted
        self.dict_sinks = sinks.dict_sinks
        self.taint_of = transfer.taint_of
        self.source_list = transfer.source_list
        self.locate = site.locate
        self.request_of = site.request_of
        self.chain_of = site.chain_of
        self.returns: list[Returned] = []
        self.stored: list[Returned] = []
        self.other_uses: set[int] = set()  # ids of member calls/reads used otherwise too
        # (seeded parameter, key) when summarising: the return is a dict holding the
        # parameter's count under a sink key (``replace(cfg, **helper(n))``)
        self.returned_keys: list[tuple[str, str]] = []
        # A list of sources returned, and the members of ``self`` set to one.
        self.returns_list = False
        self.stored_lists: set[str] = set()
        self._returned: set[int] = set()
        # Ids of the sources whose value the scope tests for None, under any name
        # (``cap = cc.max_cudagraph_capture_size`` then ``if cap is None``).
        self.none_tested: set[int] = set()
        self.none_tested_names: set[str] = set()  # and the names those sources read

    def returned(self, node: ir.Return) -> None:
        value = node.value
        if value is None or id(node) in self._returned:
            return
        self._returned.add(id(node))
        self.escapes(value)
        if self.source_list(value):
            self.returns_list = True
        if self.summarising:
            for key, element in self.dict_sinks(value):
                taint = self.taint_of(element)
                if taint is not None and taint.source in self.seed_sources:
                    self.returned_keys.append((self.seed_sources[taint.source], key))
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
        return taint.reported or (taint.pending is not None and id(taint.pending) in self.emitted)

    def stored_on_self(self, target: ir.Attribute, value: ir.Expr, parent: object) -> None:
        if not is_name(target.value, "self"):
            return
        taint = self.taint_of(value)
        if taint is None or self._already_reported(taint):
            return
        request, guessed = self.request_of(taint)
        self.stored.append(
            Returned(
                self.sinks.current_stmt,
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
        self.used(node)  # an element that leaves is used otherwise, as one handed to a call

    def used(self, node: ir.Expr) -> None:
        """``node`` is handed to a call that is no sink (a buffer's size, an unknown helper):
        a helper's or member's count is used otherwise there."""
        if isinstance(node, ir.Starred):
            node = node.value
        taint = self.taint_of(node)
        if taint is not None and taint.call is not None:
            self.other_uses.add(ref_id(taint.call))

    def none_test(self, node: ir.Compare) -> None:
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
