"""Where a module's hits go: a helper's call-site hits move to the helper's return when every
use of it, in its module and in the project's modules importing it, is a count."""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.calls import Calls
from cgguard.static.core.flow import FunctionInfo, Hit, ScopeFlow, Summary
from cgguard.static.core.project import ModuleInfo, ProjectIndex
from cgguard.static.core.summaries import Summaries
from cgguard.static.core.walks import all_functions, target_leaves
from cgguard.static.core.words import mentions


class Placement:
    """Places a module's hits at a helper's return or at its call sites."""

    def __init__(self, index: ProjectIndex, calls: Calls, summaries: Summaries):
        self.index, self.calls, self.summaries = index, calls, summaries

    @staticmethod
    def _module_level(module: ModuleInfo, func: FunctionInfo) -> bool:
        """Is ``func`` a function or method of ``module`` (not one defined inside one)?"""
        if func.cls is not None:
            return True
        found = module.functions.get(func.name)
        return found is not None and found.node is func.node

    def place(
        self, module: ModuleInfo, flows: list[tuple[ScopeFlow, FunctionInfo | None]]
    ) -> list[Hit]:
        """A helper's call-site hits move to its return when every use of it is a count."""
        hits = [h for flow, _ in flows for h in flow.hits]
        # A helper's return, or one member a method sets (one method may set several).
        by_helper: dict[tuple[int, str | None], list[Hit]] = {}
        summaries: dict[tuple[int, str | None], Summary] = {}
        for h in hits:
            if isinstance(h.helper, Summary):
                by_helper.setdefault(_helper_key(h.helper), []).append(h)
                summaries[_helper_key(h.helper)] = h.helper
        if not by_helper:
            return hits
        sunk: set[int] = set()
        other: set[int] = set()
        for flow, _ in flows:
            sunk |= flow.sunk_calls
            other |= flow.other_uses
        sunk -= other
        spellings: dict[tuple[int, str | None], set[str]] = {}
        for key, summary in summaries.items():
            spelled = {summary.name}
            if summary.attr is None and summary.path != module.path:
                for local, (source, attr) in module.imports.items():
                    if attr is None or not (
                        attr == summary.function.name or self.index.may_name_a_source(source)
                    ):
                        continue  # no import that could bind the helper: not resolved
                    if self.calls.function_named(module, local) is summary.function:
                        spelled.add(local)  # ``from m import helper as alias``
            spellings[key] = spelled
        names = set().union(*spellings.values())
        refs = _references(module.tree, names, self.index.lines(module))
        moved: set[tuple[int, str | None]] = set()
        extra: list[Hit] = []
        for key, summary in summaries.items():
            mine = [r for r in refs if _spelled(r) in spellings[key]]
            if not all(id(r) in sunk for r in mine):
                continue
            if summary.path == module.path and not self._module_level(module, summary.function):
                # A helper defined inside a function (a closure, a lambda): the call, in the
                # scope that holds the request count, makes it the count.
                continue
            if summary.path != module.path and (
                summary.attr is not None
                or summary.function.cls is not None
                or self._used_elsewhere(summary)
            ):
                # A member a base class of another module sets, or a method of a class of
                # another module: the use here makes it the count (the class may be shared);
                # an imported helper's count moves to its return only where its own module
                # uses it for nothing else.
                continue
            if summary.attr is None and self._used_by_importers(summary, module):
                # Another module of the project uses the helper for something else (a
                # token buffer): its return is no block count, the call here makes it one.
                continue
            moved.add(key)
            for ret in summary.returns:
                # A local named as a block count that is returned: the finding goes where
                # it was assigned, as where it reaches a sink in its own scope.
                at = ret.taint.pending
                extra.append(
                    Hit(
                        labels=ret.taint.labels,
                        sink=summary.spelled if at is None else at.sink,
                        node=ret.value if at is None else at.node,
                        source=ret.taint.source,
                        rewrite=ret.rewrite if at is None else at.rewrite,
                        request=ret.request if at is None else at.request,
                        stmt=ret.stmt if at is None else at.stmt,
                        guessed=ret.guessed if at is None else at.guessed,
                        via=None if ret.taint.helper is None else ret.taint.helper.spelled,
                        helper=ret.taint.helper,
                        path=None if summary.path == module.path else summary.path,
                    )
                )
        kept = [
            h
            for h in hits
            if not isinstance(h.helper, Summary) or _helper_key(h.helper) not in moved
        ]
        # Two returns of one local hold one finding, at the local.
        placed: set[int] = {id(h.node) for h in kept}
        for h in extra:
            if id(h.node) not in placed:
                placed.add(id(h.node))
                kept.append(h)
        return kept

    def _used_by_importers(self, summary: Summary, checked: ModuleInfo) -> bool:
        """Does a module of the project other than ``checked`` and the helper's own import
        the module-level helper and use it otherwise than as a count that reaches a sink?
        Asked in a one-file run too, so pre-commit's run on the caller agrees with a check
        of the whole project. A use at a module's or class's top level counts as other."""
        helper = summary.function
        home = self.index.module_at(summary.path) if summary.path is not None else None
        if helper.cls is not None or home is None or home.dotted is None or self.index.root is None:
            return False
        leaf = home.dotted.rsplit(".", 1)[-1]
        for path in self.index.project_files():
            if path in (checked.path, home.path):
                continue
            text = self.index.read(path)
            if text is None or "import" not in text or leaf not in text or helper.name not in text:
                continue
            other = self.index.module_at(path)
            if other is None:
                continue
            self.index.read_local_imports(other)
            spelled = {helper.name} | {
                local
                for local, (_, attr) in other.imports.items()
                if attr == helper.name and self.calls.function_named(other, local) is helper
            }
            refs = _references(other.tree, spelled, self.index.lines(other))
            if not refs:
                continue
            sunk: set[int] = set()
            for func in all_functions(other):
                flow = self.summaries.function_flow(func)
                if flow is not None:
                    sunk |= flow.sunk_calls - flow.other_uses
            if any(id(r) not in sunk for r in refs):
                return True
        return False

    def _used_elsewhere(self, summary: Summary) -> bool:
        """A helper of another module used otherwise in its own module (a buffer's size)."""
        module = self.index.module_at(summary.path) if summary.path is not None else None
        if module is None:
            return True
        flows = [self.summaries.function_flow(f) for f in all_functions(module)]
        refs = _references(module.tree, {summary.name}, self.index.lines(module))
        sunk: set[int] = set()
        for flow in flows:
            if flow is not None:
                sunk |= flow.sunk_calls
        return any(id(r) not in sunk for r in refs)


def _helper_key(summary: Summary) -> tuple[int, str | None]:
    """Which summary a hit went through: a function's return, or a member it sets."""
    return (id(summary.function.node), summary.attr)


def _references(tree: ir.Module, names: set[str], lines: list[str]) -> list[ir.Expr]:
    """Every read of a Name or ``.attr`` spelling one of ``names`` (defs, targets excluded).

    A function whose text names none of them is not looked into."""
    out: list[ir.Expr] = []
    targets: set[int] = set()
    stack: list[object] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Import):
            continue
        if isinstance(node, ir.FunctionDef) and not mentions(lines, node.span, names):
            continue
        if isinstance(node, ir.Assign):
            for t in node.targets:
                for leaf in target_leaves(t):
                    targets.add(id(leaf))
        if id(node) not in targets and (
            (isinstance(node, ir.Attribute) and node.attr in names)
            or (isinstance(node, ir.Name) and node.id in names)
        ):
            out.append(node)
        stack.extend(ir.children(node))
    return out


def _spelled(ref: ir.Expr) -> str:
    if isinstance(ref, ir.Attribute):
        return ref.attr
    return ref.id if isinstance(ref, ir.Name) else ""
