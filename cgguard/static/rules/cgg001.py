"""CGG001: a per-token profiling block count (capture size -> block count, unbounded).

Fix (safe): upstream's bound, ``min(<request count>, <count>) or K``, as a change
to the count's node (:mod:`cgguard.static.rules.fixes`). Unsafe when the file
checks the capture size for None (``min()`` with None raises); none when no
request count is in scope.
"""

from __future__ import annotations

import libcst as cst

from cgguard.static.rules.base import SAFE, UNSAFE, Context, Replacement, Rule, RuleFix
from cgguard.static.rules.flow import TOKEN, Hit


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
        if reasons:
            return RuleFix(UNSAFE, f"Replace with {shown} (unsafe: {'; '.join(reasons)})", replacement)
        return RuleFix(SAFE, f"Replace with {shown}", replacement)
