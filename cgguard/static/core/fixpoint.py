"""The summaries one run has computed, and how recursion among them settles.

A summary asked for while it is being computed (recursion) reads a guess: empty at first, the
last round's result after. Where a read's guess differs from the summary's final value, the
summaries that read it (and their readers) are computed again, up to :data:`MAX_ROUNDS`
rounds (a fixpoint). A summary is keyed by what it is of and which part of it a reader reads:
``("flow", id)``, ``("returns", id)``, ``("stored", id, attr)`` (a function's own flow, its
return, a member it sets), ``("param", id, (param, listed))``, ``("bound", id)`` (whether it
returns a sanitizer's bound) and ``("attr", id, name)`` (a class's member). :mod:`.summaries`
computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from cgguard.static.core.flow import ScopeFlow, Summary

MAX_ROUNDS = 4
T = TypeVar("T")


@dataclass(eq=False)
class FunctionFacts:
    """What one function's flows found (kept for the run)."""

    flow: ScopeFlow | None = None
    # (parameter, seeded with a list of counts) -> the flow with that parameter seeded
    params: dict[tuple[str, bool], ScopeFlow] = field(default_factory=dict)
    busy: bool = False
    params_busy: set[tuple[str, bool]] = field(default_factory=set)
    bound: bool | None = None  # returns a bound (Model.bound_counts; None: not asked yet)
    bound_busy: bool = False


class Fixpoint:
    """Every summary computed so far, the guesses read for those being computed, and which
    summary read which (so that a round computes again only what a wrong guess reached)."""

    def __init__(self) -> None:
        self.facts: dict[int, FunctionFacts] = {}
        self.attr_summaries: dict[tuple[int, str], Summary | None] = {}
        # Recursion: a summary asked for while it is computed reads its guess (empty in the
        # first round, the last round's result after). Each such read is kept, so a round
        # whose reads got other than the final summaries is run again (see :meth:`settle`).
        self.guesses: dict[tuple, object] = {}
        self.busy_reads: dict[tuple, object] = {}
        self.attrs_busy: set[tuple[int, str]] = set()
        self.rounds = 0  # > 0 while a module's hits are computed
        # Which summaries each summary read while it was computed: where a round must run
        # again, only the readers of what changed (and theirs) are computed again.
        self.deps: dict[tuple, set[tuple]] = {}
        self.reading: list[set[tuple]] = []

    def forget(self) -> None:
        """A file changed: every summary (any may have read it) is computed again."""
        self.facts.clear()
        self.attr_summaries.clear()
        self.attrs_busy.clear()
        self.busy_reads.clear()
        self.deps.clear()
        self.reading.clear()
        self.guesses.clear()

    def settle(self, run: Callable[[], T]) -> T:
        """``run()`` (a module's hits), again with the last round's summaries as guesses
        wherever a summary was read while it was computed and turned out otherwise, until
        they settle (at most :data:`MAX_ROUNDS` rounds)."""
        return settle_lanes([self], lambda lanes: [run()])[0]

    def busy(self, key: tuple) -> object:
        """What a read of a summary being computed gets: its guess, remembered."""
        self.note(key)
        guess = self.guesses.get(key)
        self.busy_reads.setdefault(key, guess)
        return guess

    def note(self, key: tuple) -> None:
        """The summary being computed reads ``key``."""
        if self.reading:
            self.reading[-1].add(key)

    def computing(self, key: tuple) -> None:
        self.note(key)
        self.reading.append(set())

    def computed(self, key: tuple) -> None:
        self.deps[key] = self.reading.pop()

    def invalidate(self, changed: set[tuple]) -> None:
        """Drop the summaries that read one of ``changed`` while it was computed, and those
        that read them: the next round computes them again (with the new guesses)."""
        readers: dict[tuple, set[tuple]] = {}
        for key, read in self.deps.items():
            for dep in read:
                readers.setdefault(dep, set()).add(key)
        parts: dict[int, list[tuple]] = {}  # a flow's id -> the parts of it read
        for dep in readers:
            if dep[0] in ("returns", "stored"):
                parts.setdefault(dep[1], []).append(dep)
        todo = [r for key in changed for r in readers.get(key, ())]
        stale: set[tuple] = set()
        while todo:
            key = todo.pop()
            if key not in stale:
                stale.add(key)
                todo.extend(readers.get(key, ()))
                if key[0] == "flow":  # computed again: what its parts' readers read goes
                    todo.extend(r for part in parts.get(key[1], ()) for r in readers[part])
        for key in stale:
            self.deps.pop(key, None)
            facts = self.facts.get(key[1])
            if key[0] == "attr":
                self.attr_summaries.pop((key[1], key[2]), None)
            elif facts is None:
                continue
            elif key[0] == "flow":
                facts.flow = None
            elif key[0] == "param":
                facts.params.pop(key[2], None)
            else:
                facts.bound = None
        self.busy_reads.clear()

    def final(self, key: tuple) -> object:
        kind, node = key[0], key[1]
        facts = self.facts.get(node)
        if kind in ("flow", "returns", "stored"):
            return None if facts is None else facts.flow
        if kind == "param":
            return None if facts is None else facts.params.get(key[2])
        if kind == "bound":
            return None if facts is None else facts.bound
        return self.attr_summaries.get((node, key[2]))

    def unsettled(self) -> set[tuple]:
        """The summaries read while they were computed that got other than what they finally
        are: their final values become the guesses of the next round."""
        changed = {
            key: self.final(key)
            for key, guess in self.busy_reads.items()
            if gist(key, self.final(key)) != gist(key, guess)
        }
        self.guesses.update(changed)
        return set(changed)


def settle_lanes(fixpoints: Sequence[Fixpoint], run: Callable[[list[int]], list[T]]) -> list[T]:
    """:meth:`Fixpoint.settle` for several lanes at once, each with its own fixpoint:
    ``run(lanes)`` gives the result of each lane listed (by its place in ``fixpoints``), in
    one pass for all of them. A lane whose round settled is done; the others run again
    together. A lane asked inside one of its own rounds (a helper's landing hits) runs once."""
    found: list = [None] * len(fixpoints)
    inside = {at for at, fixpoint in enumerate(fixpoints) if fixpoint.rounds}
    for at, fixpoint in enumerate(fixpoints):
        if at not in inside:
            fixpoint.busy_reads.clear()  # another module's rounds settled what they read
    todo = list(range(len(fixpoints)))
    for _ in range(MAX_ROUNDS):
        rounding = [at for at in todo if at not in inside]
        changed: dict[int, set[tuple]] = {}
        for at in rounding:
            fixpoints[at].rounds += 1
        try:
            for at, result in zip(todo, run(todo)):
                found[at] = result
            changed = {at: fixpoints[at].unsettled() for at in rounding}
        finally:
            for at in rounding:
                fixpoints[at].rounds -= 1
        todo = [at for at in rounding if changed[at]]
        for at in todo:
            fixpoints[at].invalidate(changed[at])
        if not todo:
            break
    return found


def gist(key: tuple, summary: object) -> object:
    """What the reader of ``key`` can learn from its value (two rounds agree when these do)."""
    if isinstance(summary, ScopeFlow) and key[0] == "returns":
        return tuple((r.taint.labels, r.index) for r in summary.returns) or None
    if isinstance(summary, ScopeFlow) and key[0] == "stored":
        return tuple(st.taint.labels for st in summary.stored if st.attr == key[2]) or None
    if isinstance(summary, ScopeFlow):
        gist = (
            tuple((r.taint.labels, r.index) for r in summary.returns),
            tuple((st.attr, st.taint.labels) for st in summary.stored),
            tuple(summary.sunk_params),
            summary.returns_list,
        )
        return gist if any(gist) else None  # a flow that found nothing reads as none
    if isinstance(summary, Summary):
        return (summary.labels, summary.index, len(summary.returns))
    return summary or None  # a request count: True, or nothing
