"""A scope's statements in order, walked for one flow or for several side by side.

A :class:`Walker` holds the control flow: which statements run, the branches of an ``if``
joined, a loop run twice, an exception handler started from the join of every point of its
``try`` body, ``return``/``raise`` ending a path. Each *lane* (a :class:`~.flow.ScopeFlow`,
one configuration's model, state and findings) does what a statement does to its own state.
Whether a point is reached depends on the statements alone, never on what a lane holds, so
every lane is dead at the same points and one walk serves them all: CodeQL's flow states,
as a product. A walk of one lane is a walk of several with one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cgguard.static.core import ir
from cgguard.static.core.flowstate import State, join
from cgguard.static.core.taint import Count

if TYPE_CHECKING:
    from cgguard.static.core.flow import ScopeFlow


class Walker:
    """Walks statements for ``lanes``, every lane's state carried through each of them."""

    def __init__(self, lanes: Sequence[ScopeFlow]):
        self.lanes = tuple(lanes)

    @property
    def dead(self) -> bool:
        return self.lanes[0].dead  # the same in every lane (see the module's docstring)

    def run(self, body: Sequence[ir.Stmt]) -> None:
        for stmt in body:
            if self.dead:
                break
            self.stmt(stmt)

    def snapshot(self) -> list[State]:
        return [lane.snapshot() for lane in self.lanes]

    def restore(self, states: Sequence[State]) -> None:
        for lane, state in zip(self.lanes, states):
            lane.restore(state)

    def branch(
        self,
        starts: Sequence[State],
        body: Sequence[ir.Stmt],
        bounds: Sequence[str | None] | None = None,
    ) -> list[State]:
        """Each lane's state after ``body`` run from its start, with the name its ``if``
        test clamps (``bounds``) holding a bound."""
        for at, lane in enumerate(self.lanes):
            lane.restore(starts[at])
            bound = None if bounds is None else bounds[at]
            if bound is not None and not lane.dead:
                lane.env[bound] = Count(lane.model.bound_label, bound=True)
        self.run(body)
        return self.snapshot()

    def _end_path(self) -> None:
        for lane in self.lanes:
            lane.dead = True

    def stmt(self, node: ir.Stmt) -> None:
        lanes = self.lanes
        if isinstance(node, ir.FunctionDef):
            # A helper defined in the scope (a closure doing the override for its caller):
            # its calls below are resolved to it, as a module's functions are.
            for lane in lanes:
                lane.define(node.name, node)
            return
        if isinstance(node, ir.ClassDef):
            for lane in lanes:
                lane.define(node.name, None)
            return
        for lane in lanes:
            lane.sinks.current_stmt = node
        if isinstance(node, ir.Return):
            for lane in lanes:
                if node.value is not None:
                    lane.expr(node.value)
                    lane.returned(node)
            self._end_path()
        elif isinstance(node, ir.Other) and node.kind == "raise":
            for lane in lanes:
                for child in node.exprs:
                    lane.expr(child)
            self._end_path()
        elif isinstance(node, ir.If):
            for lane in lanes:
                lane.expr(node.test)
            bounds = [lane.clamped(node.test) for lane in lanes]
            pre = self.snapshot()
            taken = self.branch(pre, node.body, [b[0] for b in bounds])
            other = self.branch(pre, node.orelse, [b[1] for b in bounds])
            self.restore([join(t, o) for t, o in zip(taken, other)])
        elif isinstance(node, ir.While | ir.For):
            for lane in lanes:
                lane.loop_head(node)
            pre = self.snapshot()
            state = pre
            for _ in range(2):
                after = self.branch([join(p, s) for p, s in zip(pre, state)], node.body)
                state = [join(s, a) for s, a in zip(state, after)]
            self.restore([join(p, s) for p, s in zip(pre, state)])
            self.run(node.orelse)
        elif isinstance(node, ir.Try):
            self._try(node)
        elif isinstance(node, ir.With):
            for lane in lanes:
                for item in node.items:
                    lane.expr(item.context)
                    if item.target is not None:
                        lane.forget(item.target)
            self.run(node.body)
        elif isinstance(node, ir.Match):
            for lane in lanes:
                lane.expr(node.subject)
            pre = self.snapshot()
            outs = [pre]
            for case in node.cases:
                outs.append(self.branch(pre, case.body))
            self.restore([join(*states) for states in zip(*outs)])
        else:
            for lane in lanes:
                lane.simple(node)

    def _try(self, node: ir.Try) -> None:
        pre = self.snapshot()
        anywhere = [pre]
        for stmt in node.body:
            if self.dead:
                break
            self.stmt(stmt)
            anywhere.append(self.snapshot())
        body_end = self.snapshot()
        handler_start = [
            join(*[replace(s, dead=False) for s in states]) for states in zip(*anywhere)
        ]
        outs = [self.branch(body_end, node.orelse)]
        for handler in node.handlers:
            outs.append(self.branch(handler_start, handler.body))
        self.restore([join(*states) for states in zip(*outs)])
        if node.finalbody:
            dead = [lane.dead for lane in self.lanes]
            for lane in self.lanes:
                lane.dead = False
            self.run(node.finalbody)
            for lane, was in zip(self.lanes, dead):
                lane.dead = lane.dead or was
