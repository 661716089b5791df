"""CGG001: a per-token profiling block count (capture size -> block count, unbounded).

Fix (safe): upstream's bound, ``min(<request count>, <count>) or K``, as a change
to the count's node (:mod:`cgguard.static.rules.fixes`). Unsafe when the file
checks the capture size for None (``min()`` with None raises); none when no
request count is in scope.
"""

from __future__ import annotations

import libcst as cst

from cgguard.static.rules import nodes
from cgguard.static.rules.base import SAFE, UNSAFE, Context, Replacement, Rule, RuleFix
from cgguard.static.rules.flow import TOKEN, Hit


def _none_default(source: cst.Call, ctx: Context) -> bool:
    """A ``getattr`` source whose default is None, or whose name the file checks for None."""
    name = nodes.getattr_name(source)
    if name is None:
        return False
    default = nodes.getattr_default(source)
    return (isinstance(default, cst.Name) and default.value == "None") or ctx.compared_with_none(
        name
    )


class CGG001(Rule):
    code = "CGG001"
    kind = TOKEN
    name = "per-token-profiling-blocks"

    def fix(self, hit: Hit, ctx: Context, replacement: Replacement, shown: str) -> RuleFix:
        source = hit.source
        reasons = []
        if hit.guessed:
            reasons.append(f"nothing shows that this class has `{hit.request}`")
        if isinstance(source, cst.Attribute) and ctx.compared_with_none(source.attr.value):
            reasons.append("this file checks the capture size for None, and min() with None raises")
        elif isinstance(source, cst.Call) and _none_default(source, ctx):
            reasons.append("getattr() may give None here, and min() with None raises")
        if reasons:
            return RuleFix(
                UNSAFE, f"Replace with {shown} (unsafe: {'; '.join(reasons)})", replacement
            )
        return RuleFix(SAFE, f"Replace with {shown}", replacement)
