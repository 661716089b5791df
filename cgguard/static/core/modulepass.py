"""One pass over a module for every lane that runs on it.

A *lane* is one configuration's reading of the project (its :class:`~.hits.ModuleHits`
and the module as that reading indexed it; every lane reads the file's one lowered tree).
Each lane picks the scopes it walks by the words its model and project give (its sink
words first, then its sources and what other modules lend it), and settles its own rounds
to a fixpoint of its own summaries. A scope two lanes pick at the same point of their
order is walked once for both, their states side by side (:class:`~.controlflow.Walker`,
:func:`~.summaries.function_flows`). Each lane asks its own questions in the order it
would alone, so a lane's hits are the same whichever lanes run beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar, cast

from cgguard.static.core import ir
from cgguard.static.core.controlflow import Walker
from cgguard.static.core.fixpoint import settle_lanes
from cgguard.static.core.flow import FunctionInfo, Hit, ScopeFlow
from cgguard.static.core.hits import ModuleHits
from cgguard.static.core.project import ModuleInfo
from cgguard.static.core.summaries import function_flows
from cgguard.static.core.walks import all_functions, class_and_module_scopes, functions_inside
from cgguard.static.core.words import mentions

Lane = tuple[ModuleHits, ModuleInfo]
T = TypeVar("T")
_END = object()  # a queue's end (see side_by_side)


def settled_hits(lanes: Sequence[Lane]) -> list[list[Hit]]:
    """Every hit in each lane's module's own code, helpers' counts followed to their
    callers, each lane's rounds settled to a fixpoint of the summaries they read
    (:func:`~.fixpoint.settle_lanes`)."""
    return settle_lanes(
        [hits.fixpoint for hits, _ in lanes], lambda todo: once([lanes[at] for at in todo])
    )


def once(lanes: Sequence[Lane]) -> list[list[Hit]]:
    """One round of :func:`settled_hits`.

    Only scopes whose text names a source, or a member found to carry one, are walked:
    the rest cannot hold a hit (what they call is summarised when a walk asks)."""
    found: list[list[Hit]] = [[] for _ in lanes]
    may = _may_hit(lanes)
    walking = [at for at in range(len(lanes)) if may[at]]
    lines = {at: lanes[at][0].index.lines(lanes[at][1]) for at in walking}
    words = {
        at: set(lanes[at][0].index.source_words) | lanes[at][0].lending.imported_words(lanes[at][1])
        for at in walking
    }
    funcs = {at: list(all_functions(lanes[at][1])) for at in walking}
    flows: dict[int, list[tuple[ScopeFlow, FunctionInfo | None]]] = {at: [] for at in walking}
    done: dict[int, set[int]] = {at: set() for at in walking}
    rounding = list(walking)
    for _ in range(64):
        todo = {
            at: [
                f
                for f in funcs[at]
                if id(f.node) not in done[at] and mentions(lines[at], f.node.span, words[at])
            ]
            for at in rounding
        }
        rounding = [at for at in rounding if todo[at]]
        if not rounding:
            break
        for group in side_by_side({at: todo[at] for at in rounding}, _node_id):
            for at, func in group:
                done[at].add(id(func.node))
                funcs[at].extend(functions_inside(func, lines[at]))
            asked = [(lanes[at][0].summaries, func) for at, func in group]
            for (at, func), flow in zip(group, function_flows(asked, walk=True)):
                if flow is None:
                    continue
                flows[at].append((flow, func))
                if flow.returns or flow.returns_list:
                    words[at].add(func.name)
                words[at].update(st.attr for st in flow.stored if st.attr)
                words[at].update(flow.stored_lists)
    scopes = {at: _scopes_naming(lanes[at][1], lines[at], words[at]) for at in walking}
    for scope_group in side_by_side(scopes, _scope_id):
        for (at, _), flow in zip(scope_group, _walk_scopes(lanes, scope_group)):
            flows[at].append((flow, None))
    for at in walking:
        hits, module = lanes[at]
        found[at] = hits.none_tested(hits.placement.place(module, flows[at]), flows[at])
    return found


def landing_hits(lane: ModuleHits, module: ModuleInfo) -> list[Hit]:
    """Hits that land in ``module`` from the project's other modules, for one lane: at the
    return of a helper of it that every importer takes as a block count."""
    names = set()
    for func in module.functions.values():
        if not mentions(lane.index.lines(module), func.node.span, set(lane.index.source_words)):
            continue
        summary = lane.summaries.summary(func)
        if summary is not None:
            names.add(func.name)
    if not names or lane.index.root is None or module.dotted is None:
        return []
    found: list[Hit] = []
    leaf = module.dotted.rsplit(".", 1)[-1]
    # Asked of each file's bytes: a UTF-8 text holds a word exactly where its bytes hold
    # the word's, and most files are never decoded.
    helpers = [n.encode() for n in sorted(names)]
    for path in lane.index.project_files():
        if path == module.path:
            continue
        data = lane.index.read_bytes(path)
        if data is None or b"import" not in data or leaf.encode() not in data:
            continue
        if not any(n in data for n in helpers):
            continue
        other = lane.index.module_at(path)
        if other is not None:
            found += [h for h in settled_hits([(lane, other)])[0] if h.path == module.path]
    return found


def _may_hit(lanes: Sequence[Lane]) -> list[bool]:
    """Can a walk of each lane's module find a hit (:meth:`.hits.ModuleHits.hit_words`)?
    Only the scopes whose text names a word that can make one are walked, each as the full
    walk walks it (the functions' flows are kept for it), until one makes a hit."""
    may: list[bool | None] = [None] * len(lanes)
    words: dict[int, set[str]] = {}
    for at, (hits, module) in enumerate(lanes):
        found = hits.hit_words(module)
        if found is None:
            may[at] = True
        else:
            words[at] = found
    lines = {at: lanes[at][0].index.lines(lanes[at][1]) for at in words}

    def undecided(at: int, items: Iterable[T]) -> Iterator[T]:
        # A lane's functions or scopes, read (and their text asked) only while no walk of
        # the lane has made a hit: as a lane alone stops at its first.
        for item in items:
            if may[at] is not None:
                return
            yield item

    def naming(at: int) -> Iterator[FunctionInfo]:
        for func in undecided(at, all_functions(lanes[at][1])):
            if mentions(lines[at], func.node.span, words[at]):
                yield func

    funcs = {at: naming(at) for at in words}
    for group in side_by_side(funcs, _node_id):
        asked = [(lanes[at][0].summaries, func) for at, func in group]
        for (at, _), flow in zip(group, function_flows(asked, walk=True)):
            if flow is not None and flow.hits:
                may[at] = True
    scopes = {
        at: undecided(at, _scopes_naming(lanes[at][1], lines[at], found))
        for at, found in words.items()
    }
    for scope_group in side_by_side(scopes, _scope_id):
        for (at, _), flow in zip(scope_group, _walk_scopes(lanes, scope_group)):
            if flow.hits:
                may[at] = True
    return [bool(m) for m in may]


Scope = tuple[tuple[ir.Stmt, ...], ir.ClassDef | None]


def _scopes_naming(module: ModuleInfo, lines: list[str], words: set[str]) -> Iterator[Scope]:
    """The module's and each class's own statements (its functions and classes are scopes
    of their own), with the class, where one of them names one of ``words``."""
    for scope, cls in class_and_module_scopes(module):
        stmts: tuple[ir.Stmt, ...] = tuple(
            st for st in scope if not isinstance(st, ir.FunctionDef | ir.ClassDef)
        )
        if any(mentions(lines, st.span, words) for st in stmts):
            yield stmts, cls


def _walk_scopes(lanes: Sequence[Lane], group: list[tuple[int, Scope]]) -> list[ScopeFlow]:
    """The flows of one class's or the module's own statements, for each lane of ``group``,
    walked once side by side."""
    if not group:
        return []
    flows = [lanes[at][0].scope_flow(lanes[at][1], cls) for at, (_, cls) in group]
    Walker(flows).run(group[0][1][0])
    return flows


def _node_id(func: FunctionInfo) -> Hashable:
    return id(func.node)


def _scope_id(scope: Scope) -> Hashable:
    stmts, cls = scope
    return (id(cls), id(stmts[0]))  # a scope is walked only where a statement names a word


def side_by_side(
    queues: Mapping[int, Iterable[T]], key: Callable[[T], Hashable]
) -> Iterator[list[tuple[int, T]]]:
    """The items of each lane's queue in the lane's own order, those at the head of
    several queues with the same ``key`` (the same function or scope of the one tree)
    given together. A queue is read one item ahead, and only once the group holding its
    last item is done with: a lazy queue can stop on what that group found."""
    rest = {at: iter(queue) for at, queue in queues.items()}
    heads: dict[int, T] = {}

    def advance(at: int) -> None:
        following: object = next(rest[at], _END)
        if following is _END:
            heads.pop(at, None)
        else:
            heads[at] = cast(T, following)

    for at in rest:
        advance(at)
    while heads:
        wanted = key(next(iter(heads.values())))
        group = [(at, item) for at, item in heads.items() if key(item) == wanted]
        yield group
        for at, _ in group:
            advance(at)
