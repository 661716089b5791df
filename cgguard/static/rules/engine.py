"""The rule engine: run the flow over every scope of a libcst module, then the rules.

Front ends (the driver's fast path, the Fixit rules, the codemod command) parse
what they choose and call :func:`scope_hits` on it, then :func:`reports` with a
:class:`~cgguard.static.rules.base.Context` for the hits (positions are asked for
only there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cgguard.static.rules import helperflow
from cgguard.static.rules.base import Context, Report, Rule
from cgguard.static.rules.cgg001 import CGG001
from cgguard.static.rules.cgg002 import CGG002
from cgguard.static.rules.flow import ClassFacts, Hit, ScopeFlow
from cgguard.static.rules.helperflow import Flows, HelperFor

if TYPE_CHECKING:
    from cgguard.static.rules.paramflow import ParamFlows

RULES: tuple[Rule, ...] = (CGG001(), CGG002())

# What a call hands through to its result: (callee name, [(argument, its summary)]) or None.
Passing = Callable[[cst.Call], "tuple[str, list] | None"]

# How a front end learns what a class offers as a request count (read lazily).
ClassFactsFor = Callable[[cst.ClassDef], ClassFacts]


def scope_hits(
    tree: cst.CSTNode,
    facts: ClassFacts | None,
    class_facts: ClassFactsFor,
    *,
    helpers: bool = True,
    imported: Passing | None = None,
) -> list[Hit]:
    """Run the flow over every scope in ``tree``; methods get their class's facts.

    With ``helpers`` (a whole module), counts returned by the module's functions and
    methods are followed to their callers (:mod:`cgguard.static.rules.helperflow`);
    a chunk of a file cannot see every caller, so its driver passes False. ``imported``:
    what calls of functions imported from the project's other modules hand through
    (:class:`cgguard.static.rules.paramflow.ImportedParams`); the module's own functions
    come first.
    """

    # Arguments handed through a function of the module to its return (per-parameter
    # summaries, made on first use); a chunk cannot see the functions it calls.
    params = None
    if helpers and isinstance(tree, cst.Module):
        from cgguard.static.rules.paramflow import ParamFlows

        params = ParamFlows(tree)

    def run(helper_for: HelperFor | None) -> Flows:
        return _scope_flows(tree, facts, class_facts, helper_for, params, imported)

    flows = run(None)
    if (
        helpers
        and isinstance(tree, cst.Module)
        and any(flow.returns or flow.stored for flow, _ in flows)
    ):
        return helperflow.follow(tree, run, flows)
    return [hit for flow, _ in flows for hit in flow.hits]


def function_returns_capture(module: cst.Module) -> bool:
    """Does a function defined at the top of ``module`` (a chunk) return a capture-size count?"""
    flows = _scope_flows(module, None, lambda node: ClassFacts(node.name.value), None)
    return any(flow.returns for flow, func in flows if func is not None)


def _scope_flows(
    tree: cst.CSTNode,
    facts: ClassFacts | None,
    class_facts: ClassFactsFor,
    helper_for: HelperFor | None,
    params: ParamFlows | None = None,
    imported: Passing | None = None,
) -> Flows:
    flows: Flows = []

    def passing(cls: cst.ClassDef | None) -> Passing | None:
        local = params.for_class(cls) if params else None
        if imported is None or local is None:
            return local or imported
        return lambda call: local(call) or imported(call)

    def visit(node: cst.CSTNode, facts: ClassFacts | None, cls: cst.ClassDef | None) -> None:
        if isinstance(node, cst.FunctionDef):
            p = node.params
            names = [a.name.value for a in (*p.posonly_params, *p.params, *p.kwonly_params)]
            # Default values, by parameter name (a capture-size default starts a taint).
            defaults = {
                a.name.value: a.default
                for a in (*p.posonly_params, *p.params, *p.kwonly_params)
                if a.default is not None
            }
            flow = ScopeFlow(
                facts,
                names,
                defaults,
                helper_for(cls) if helper_for else None,
                passing=passing(cls),
            )
            flow.run(_body(node.body))
            flows.append((flow, node))
        elif isinstance(node, cst.ClassDef):
            facts = class_facts(node)
            cls = node
            flow = ScopeFlow(None, [], function=False, passing=passing(None))
            flow.run(_body(node.body))
            flows.append((flow, None))
        elif isinstance(node, cst.Module):
            flow = ScopeFlow(None, [], function=False, passing=passing(None))
            flow.run(node.body)
            flows.append((flow, None))
        for child in _scope_children(node):
            visit(child, facts, cls)

    visit(tree, facts, None)
    return flows


def _body(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return suite.body


def _suites(stmt: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The blocks nested in a compound statement (not in a function or class)."""
    if isinstance(stmt, cst.If):
        yield stmt.body
        if isinstance(stmt.orelse, cst.If):
            yield from _suites(stmt.orelse)
        elif stmt.orelse is not None:
            yield stmt.orelse.body
    elif isinstance(stmt, (cst.For, cst.While)):
        yield stmt.body
        if stmt.orelse is not None:
            yield stmt.orelse.body
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield stmt.body
        for handler in stmt.handlers:
            yield handler.body
        if stmt.orelse is not None:
            yield stmt.orelse.body
        if stmt.finalbody is not None:
            yield stmt.finalbody.body
    elif isinstance(stmt, cst.With):
        yield stmt.body
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield case.body


def _scope_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Function and class definitions directly inside ``node``'s scope (definitions
    are statements, so only statement blocks are searched)."""
    if isinstance(node, cst.Module):
        stack = list(node.body)
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        stack = list(node.body.body)
    else:
        return
    while stack:
        cur = stack.pop()
        if isinstance(cur, (cst.FunctionDef, cst.ClassDef)):
            yield cur
        elif not isinstance(cur, cst.SimpleStatementLine):
            for suite in _suites(cur):
                stack.extend(suite.body)


def rule_for(hit: Hit) -> Rule:
    for rule in RULES:
        if rule.matches(hit):
            return rule
    raise LookupError(f"no rule reports hits of kind {hit.kind!r}")


def reports(hits: list[Hit], ctx: Context) -> list[Report]:
    return [rule_for(hit).report(hit, ctx) for hit in hits]


def statement_lines(stmt: cst.CSTNode | None, ctx: Context) -> tuple[int, int]:
    """Lines a suppression comment may sit on: the statement, or a compound one's header."""
    if stmt is None:
        return (0, 0)
    first, _, last, _ = ctx.span(stmt)
    header: list[cst.CSTNode] = []
    if isinstance(stmt, (cst.If, cst.While)):
        header = [stmt.test]
    elif isinstance(stmt, cst.For):
        header = [stmt.target, stmt.iter]
    elif isinstance(stmt, cst.With):
        header = [item.asname.name if item.asname else item.item for item in stmt.items]
    elif isinstance(stmt, cst.Match):
        header = [stmt.subject]
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        return (first, first)
    else:
        return (first, last)
    return (first, max(ctx.span(h)[2] for h in header))


# ---- across modules of one project ----------------------------------------------------


def module_helpers(module: cst.Module) -> dict[str, helperflow.HelperSummary]:
    """Summaries of the functions at the top of ``module`` whose return carries a count
    (what another module of the project may import and call)."""
    from cgguard.static.rules import reach

    flows = _scope_flows(module, None, lambda node: ClassFacts(node.name.value), None)
    defs = reach.ModuleDefs.of(module)
    owners = {id(o.func): o for o in defs.owners() if o.cls is None}
    found = helperflow._summaries(flows, owners)
    return {s.owner.name: s for key, s in found.items() if not isinstance(key, tuple)}


def external_uses(
    module: cst.Module,
    class_facts: ClassFactsFor,
    names: dict[str, helperflow.HelperSummary],
    modules: dict[str, dict[str, helperflow.HelperSummary]],
    *,
    facts: ClassFacts | None = None,
) -> tuple[list[Hit], dict[int, tuple[int, int]]]:
    """Run the flow over ``module`` with helpers imported from the project's other modules:
    ``names`` (a local name -> the imported function's summary) and ``modules`` (a module
    alias -> its functions). Returns the hits of counts that came through them (at the
    calls) and, per summary, (uses, uses that became a block count). ``facts``: the class
    around ``module`` when it is a method cut out of a file."""
    from cgguard.static.rules import reach

    defs = reach.ModuleDefs.of(module)

    def external(node: cst.CSTNode) -> helperflow.HelperSummary | None:
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        if isinstance(func, cst.Name) and func.value not in defs.functions:
            return names.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            return modules.get(func.value.value, {}).get(func.attr.value)
        return None

    def helper_for(cls):
        def resolve(node):
            return external(node)

        return resolve

    flows = _scope_flows(module, facts, class_facts, helper_for)
    hits = [h for flow, _ in flows for h in flow.hits if h.helper is not None]
    sunk: set[int] = set()
    for flow, _ in flows:
        sunk |= flow.sunk_calls
    for flow, _ in flows:
        sunk -= flow.other_uses
    counts: dict[int, tuple[int, int]] = {}
    wanted = set(names) | {n for funcs in modules.values() for n in funcs}
    for ref in reach.references(module, wanted):
        summary = None
        if isinstance(ref, cst.Name):
            summary = names.get(ref.value) if ref.value not in defs.functions else None
        elif isinstance(ref.value, cst.Name):
            summary = modules.get(ref.value.value, {}).get(ref.attr.value)
        if summary is None:
            continue
        uses, counted = counts.get(id(summary), (0, 0))
        counts[id(summary)] = (uses + 1, counted + (1 if id(ref) in sunk else 0))
    return hits, counts


def return_hits(summary: helperflow.HelperSummary) -> list[Hit]:
    """The hits at a helper's returns (every use of it is a block count)."""
    return [
        Hit(
            kind=ret.taint.kind,
            sink=summary.spelled,
            node=ret.value,
            source=ret.taint.source,
            rewrite=ret.rewrite,
            request=ret.request,
            stmt=ret.stmt,
            guessed=ret.guessed,
            via=None,
            helper=None,
        )
        for ret in summary.returns
    ]
