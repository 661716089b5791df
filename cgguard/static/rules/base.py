"""What a rule reports: a message and a fix expressed as a change to one CST node.

The same :class:`Report` serves every front end: the driver turns the replacement
into a text edit of exactly that node's span (``cgguard check``/``fix``), the Fixit
adapter hands it to ``LintRule.report(..., replacement=...)``, the codemod adapter
swaps the node in the tree. :class:`Context` gives rules what nodes alone do not
carry (the file's text, positions), computing positions only when asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from cgguard.static.rules.flow import Hit

# How safe a fix is to apply (ruff's terms; the same strings as driver.findings).
SAFE = "safe"
UNSAFE = "unsafe"
DISPLAY_ONLY = "display-only"

# (first line, first column, last line, end column): lines 1-based in the file,
# columns 0-based in characters, parentheses around the node excluded.
Span = tuple[int, int, int, int]


@dataclass(frozen=True)
class Replacement:
    """Replace ``old`` by ``new`` (which keeps ``old``'s own parentheses).

    ``core`` is ``new`` without those parentheses: the text that replaces the span
    of ``old`` as positions give it (inside its parentheses).
    """

    old: cst.BaseExpression
    new: cst.BaseExpression
    core: cst.BaseExpression


@dataclass(frozen=True)
class RuleFix:
    applicability: str
    description: str
    replacement: Replacement


@dataclass(frozen=True)
class Report:
    code: str
    hit: Hit
    message: str
    fix: RuleFix | None


class Context:
    """One parsed module (or a chunk of a file) and the file it came from."""

    def __init__(
        self,
        module: cst.Module,
        text: str,
        lines: list[str],
        position: Callable[[cst.CSTNode], Span],
        none_checked: dict[str, bool] | None = None,
    ):
        self.module = module
        self.text = text
        self.lines = lines
        self._position = position
        # Per file (several contexts of one file may share it): name -> checked for None.
        self._none_checked = {} if none_checked is None else none_checked

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def span(self, node: cst.CSTNode) -> Span:
        return self._position(node)

    def compared_with_none(self, name: str) -> bool:
        """Does the file test ``<...>.name is None`` / ``is not None`` anywhere?"""
        if name not in self._none_checked:
            pattern = rf"\b{re.escape(name)}\s+is\s+(not\s+)?None\b"
            self._none_checked[name] = re.search(pattern, self.text) is not None
        return self._none_checked[name]


class Rule:
    """A rule: which hits of the flow are its findings, and what it says about them."""

    code: str = ""
    kind: str = ""  # the flow's taint kind this rule reports (flow.TOKEN / flow.MAX)
    name: str = ""

    def matches(self, hit: Hit) -> bool:
        return hit.kind == self.kind

    def report(self, hit: Hit, ctx: Context) -> Report:
        """The finding: its message, and a fix wherever the count can be rewritten."""
        # Imported here: fixes and messages build on this module's types.
        from cgguard.static.rules.fixes import bound_text, bounded, shorten
        from cgguard.static.rules.messages import message_for

        bound = bound_text(hit, ctx)
        replacement = bounded(hit, ctx)
        fix = None if replacement is None else self.fix(hit, ctx, replacement, shorten(bound))
        # The message names an unsafe fix whatever made it unsafe (the fix's description says why).
        unsafe = fix is not None and fix.applicability == UNSAFE
        return Report(self.code, hit, message_for(self.code, hit, ctx, bound, unsafe=unsafe), fix)

    def fix(self, hit: Hit, ctx: Context, replacement: Replacement, shown: str) -> RuleFix:
        """How safe the rewrite is and how it is described (``shown``: the bound's text)."""
        raise NotImplementedError  # pragma: no cover - each rule says
