"""CGG001: a per-token profiling block count (capture size -> block count, unbounded).

Fix (safe): upstream's bound, ``min(<request count>, <count>) or K``, as a change
to the count's node (:mod:`cgguard.static.rules.fixes`). Unsafe when the file
checks the capture size for None (``min()`` with None raises); none when no
request count is in scope.
"""

from __future__ import annotations

import libcst as cst

from cgguard.static.rules.base import SAFE, UNSAFE, Context, Report, Rule, RuleFix
from cgguard.static.rules.fixes import bound_text, bounded, shorten
from cgguard.static.rules.flow import TOKEN, Hit
from cgguard.static.rules.messages import message_for


class CGG001(Rule):
    code = "CGG001"
    kind = TOKEN
    name = "per-token-profiling-blocks"

    def report(self, hit: Hit, ctx: Context) -> Report:
        bound = bound_text(hit, ctx)
        message = message_for(self.code, hit, ctx, bound)
        replacement = bounded(hit, ctx)
        if replacement is None:
            return Report(self.code, hit, message, None)
        shown = shorten(bound)
        source = hit.source
        reasons = []
        if hit.guessed:
            reasons.append(f"nothing shows that this class has `{hit.request}`")
        if isinstance(source, cst.Attribute) and ctx.compared_with_none(source.attr.value):
            reasons.append("this file checks the capture size for None, and min() with None raises")
        if reasons:
            fix = RuleFix(UNSAFE, f"Replace with {shown} (unsafe: {'; '.join(reasons)})", replacement)
        else:
            fix = RuleFix(SAFE, f"Replace with {shown}", replacement)
        return Report(self.code, hit, message, fix)
